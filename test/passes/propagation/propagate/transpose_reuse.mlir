// RUN: spmd-opt %s --split-input-file --spmd-propagate | FileCheck %s
// RUN: spmd-opt %s --split-input-file --spmd-partition-pipeline | spmd-opt --spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=COMM

// A transpose commutes with resharding: x (S(0)) is gathered for one user
// (here the first result), and its transpose, which another user needs
// replicated, is recomputed from the gathered copy instead of being
// gathered too. One all_gather.
spmd.mesh @tp ["tp"=4]
// CHECK-LABEL: func.func @forward
// CHECK: %[[G:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: linalg.transpose ins(%[[G]] : tensor<8x16xf32>) {{.*}} {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK-NOT: spmd.constrain
// COMM: "all_gather": {"count":1,
func.func @forward(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
        tensor<16x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  return %x, %t : tensor<8x16xf32>, tensor<16x8xf32>
}

// -----

// The other order: the transpose is gathered first (S(1) -> R), x is then
// obtained by transposing that copy back.
spmd.mesh @tp ["tp"=4]
// CHECK-LABEL: func.func @backward
// CHECK: %[[G:.*]] = spmd.constrain %transposed to #spmd.layout<@tp, [R]> : tensor<16x8xf32>
// CHECK: linalg.transpose ins(%[[G]] : tensor<16x8xf32>) {{.*}} {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK-NOT: spmd.constrain
// COMM: "all_gather": {"count":1,
func.func @backward(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<16x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
        tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  return %t, %x : tensor<16x8xf32>, tensor<8x16xf32>
}
