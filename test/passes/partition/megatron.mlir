// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// Megatron MLP forward on tp=4: W1 column-split, W2 row-split. The second
// matmul reduces over the sharded hidden dim, so it yields a P(sum) partial
// locally; the only communication is one all_reduce at the constrain.

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32> {spmd.global_type = tensor<8x16xf32>, spmd.layout = #spmd.layout<@tp, [R]>},
// CHECK-SAME:  %[[W1:.*]]: tensor<16x16xf32> {spmd.global_type = tensor<16x64xf32>, spmd.layout = #spmd.layout<@tp, [S(1)]>},
// CHECK-SAME:  %[[W2:.*]]: tensor<16x16xf32> {spmd.global_type = tensor<64x16xf32>, spmd.layout = #spmd.layout<@tp, [S(0)]>})
// CHECK-SAME: -> (tensor<8x16xf32> {spmd.global_type = tensor<8x16xf32>, spmd.layout = #spmd.layout<@tp, [R]>})
func.func @mlp(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
               %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
               %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  // CHECK: %[[E1:.*]] = tensor.empty() : tensor<8x16xf32>
  // CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: %[[H:.*]] = linalg.matmul ins(%[[X]], %[[W1]] : tensor<8x16xf32>, tensor<16x16xf32>) outs(%[[F1]] : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e1 = tensor.empty() {spmd.layout = #spmd.layout<@tp, [S(1)]>} : tensor<8x64xf32>
  %f1 = linalg.fill {spmd.layout = #spmd.layout<@tp, [S(1)]>} ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul {spmd.layout = #spmd.layout<@tp, [S(1)]>}
      ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
      outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  // CHECK: %[[A:.*]] = linalg.generic
  // CHECK-SAME: ins(%[[H]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<8x16xf32>)
  // CHECK: arith.maximumf
  // CHECK: -> tensor<8x16xf32>
  %e2 = tensor.empty() {spmd.layout = #spmd.layout<@tp, [S(1)]>} : tensor<8x64xf32>
  %a = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>)
      attrs = {spmd.layout = #spmd.layout<@tp, [S(1)]>} {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
  } -> tensor<8x64xf32>
  // CHECK: %[[F3:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK-NOT: spmd.partial_from_replicated
  // CHECK: %[[Y:.*]] = linalg.matmul ins(%[[A]], %[[W2]] : tensor<8x16xf32>, tensor<16x16xf32>) outs(%[[F3]] : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e3 = tensor.empty() {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<8x16xf32>
  %f3 = linalg.fill {spmd.layout = #spmd.layout<@tp, [P(sum)]>} ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
      ins(%a, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
      outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: %[[R:.*]] = spmd.all_reduce %[[Y]] on @tp ["tp"] sum : tensor<8x16xf32>
  // CHECK: return %[[R]] : tensor<8x16xf32>
  %r = spmd.constrain %y to #spmd.layout<@tp, [R]> : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
// Exactly one collective in the whole function, and no layout attribute
// left on any op.
// CHECK-NOT: spmd.all_
// CHECK-NOT: {spmd.layout
// CHECK: }

// Sequence-parallel variant: activations are S(0) on the token dim between
// blocks, so the block starts with an all_gather and ends with a
// reduce_scatter instead of an all_reduce.
// CHECK-LABEL: func.func @mlp_sequence_parallel
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x16xf32>
// CHECK: %[[XF:.*]] = spmd.all_gather %[[X]] on @tp ["tp"] dim 0 : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK: linalg.matmul ins(%[[XF]], %{{.*}} : tensor<8x16xf32>, tensor<16x16xf32>)
// CHECK: %[[Y:.*]] = linalg.matmul
// CHECK-NEXT: %[[R:.*]] = spmd.reduce_scatter %[[Y]] on @tp ["tp"] dim 0 sum : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %[[R]] : tensor<2x16xf32>
func.func @mlp_sequence_parallel(
    %x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
    %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
    %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %xf = spmd.constrain %x to #spmd.layout<@tp, [R]> : tensor<8x16xf32>
  %e1 = tensor.empty() {spmd.layout = #spmd.layout<@tp, [S(1)]>} : tensor<8x64xf32>
  %f1 = linalg.fill {spmd.layout = #spmd.layout<@tp, [S(1)]>} ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul {spmd.layout = #spmd.layout<@tp, [S(1)]>}
      ins(%xf, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
      outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e3 = tensor.empty() {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<8x16xf32>
  %f3 = linalg.fill {spmd.layout = #spmd.layout<@tp, [P(sum)]>} ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
      ins(%h, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
      outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = spmd.constrain %y to #spmd.layout<@tp, [S(0)]> : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
