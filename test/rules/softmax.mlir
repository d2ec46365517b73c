// RUN: spmd-opt %s --spmd-print-op-rules --spmd-propagate --spmd-partition \
// RUN:   --verify-diagnostics | FileCheck %s
// linalg.softmax (rules/LinalgRules.cpp): a factor per dim shared by input,
// init and result; the softmax dim needs replication. Sharded on the other
// dim it runs locally; sharded on the softmax dim its input is gathered.

spmd.mesh @tp ["tp"=2]

// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK: %[[S:.*]] = linalg.softmax dimension(1) ins(%[[X]] : tensor<4x16xf32>) outs(%[[E]] : tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK: return %[[S]]
func.func @rows(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) -> tensor<8x16xf32> {
  // expected-remark @below {{sharding rule: () -> ([i, j]) {i=8, j=16} partial={(): sum|avg|max|min}}
  %e = tensor.empty() : tensor<8x16xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=8, j=16} need_replication={j} init={1->0}}
  %s = linalg.softmax dimension(1) ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @columns
// CHECK-SAME: (%[[X:.*]]: tensor<8x8xf32>
// CHECK: %[[G:.*]] = spmd.all_gather %[[X]] on @tp ["tp"] dim 1 : tensor<8x8xf32> -> tensor<8x16xf32>
// CHECK: linalg.softmax dimension(1) ins(%[[G]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<8x16xf32>) -> tensor<8x16xf32>
func.func @columns(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}) -> tensor<8x16xf32> {
  // expected-remark @below {{sharding rule: () -> ([i, j]) {i=8, j=16} partial={(): sum|avg|max|min}}
  %e = tensor.empty() : tensor<8x16xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=8, j=16} need_replication={j} init={1->0}}
  %s = linalg.softmax dimension(1) ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}
