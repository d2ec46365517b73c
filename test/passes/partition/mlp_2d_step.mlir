// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// A training step of a Megatron MLP (no activation, to keep it short) on a
// 2-D mesh dp=2 x tp=4: batch on dp, W1 column-split and W2 row-split on tp.
// Forward: one all_reduce over tp. Backward: the weight gradients are
// P(sum) over dp (one all_reduce over dp each, their tp sharding kept); the
// input gradient is P(sum) over tp and costs one more all_reduce over tp
// because it is returned.

spmd.mesh @m ["dp"=2, "tp"=4]

#bi = affine_map<(b, i, h) -> (b, i)>
#ih = affine_map<(b, i, h) -> (i, h)>
#bh = affine_map<(b, i, h) -> (b, h)>

// CHECK-LABEL: func.func @step
// CHECK-SAME: %{{[^:]*}}: tensor<4x16xf32> {spmd.global_type = tensor<8x16xf32>, spmd.layout = #spmd.layout<@m, [S(0), R]>}
// CHECK-SAME: %{{[^:]*}}: tensor<16x8xf32> {spmd.global_type = tensor<16x32xf32>, spmd.layout = #spmd.layout<@m, [R, S(1)]>}
// CHECK-SAME: %{{[^:]*}}: tensor<8x16xf32> {spmd.global_type = tensor<32x16xf32>, spmd.layout = #spmd.layout<@m, [R, S(0)]>}
// CHECK-SAME: %{{[^:]*}}: tensor<4x16xf32> {spmd.global_type = tensor<8x16xf32>, spmd.layout = #spmd.layout<@m, [S(0), R]>}
func.func @step(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@m, [S(0), R]>},
                %w1: tensor<16x32xf32> {spmd.layout = #spmd.layout<@m, [R, S(1)]>},
                %w2: tensor<32x16xf32> {spmd.layout = #spmd.layout<@m, [R, S(0)]>},
                %dy: tensor<8x16xf32> {spmd.layout = #spmd.layout<@m, [S(0), R]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@m, [S(0), R]>},
        tensor<16x32xf32> {spmd.layout = #spmd.layout<@m, [R, S(1)]>},
        tensor<32x16xf32> {spmd.layout = #spmd.layout<@m, [R, S(0)]>},
        tensor<8x16xf32> {spmd.layout = #spmd.layout<@m, [S(0), R]>}) {
  %zero = arith.constant 0.0 : f32
  // Forward.
  %e1 = tensor.empty() {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} : tensor<8x32xf32>
  %f1 = linalg.fill {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>}
      ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e2 = tensor.empty() {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>} : tensor<8x16xf32>
  %f2 = linalg.fill {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>} ins(%zero : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %yp = linalg.matmul {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>}
      ins(%h, %w2 : tensor<8x32xf32>, tensor<32x16xf32>) outs(%f2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: %[[Y:.*]] = spmd.all_reduce %{{.*}} on @m ["tp"] sum : tensor<4x16xf32>
  %y = spmd.constrain %yp to #spmd.layout<@m, [S(0), R]> : tensor<8x16xf32>

  // Backward: dh = dy W2^T stays sharded on tp.
  %e3 = tensor.empty() {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} : tensor<8x32xf32>
  %f3 = linalg.fill {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} ins(%zero : f32) outs(%e3 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %dh = linalg.generic {indexing_maps = [affine_map<(b, h, j) -> (b, j)>, affine_map<(b, h, j) -> (h, j)>, affine_map<(b, h, j) -> (b, h)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %w2 : tensor<8x16xf32>, tensor<32x16xf32>) outs(%f3 : tensor<8x32xf32>)
      attrs = {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x32xf32>
  // dW1 = x^T dh: P(sum) over dp, S(1) on tp.
  %e4 = tensor.empty() {spmd.layout = #spmd.layout<@m, [P(sum), S(1)]>} : tensor<16x32xf32>
  %f4 = linalg.fill {spmd.layout = #spmd.layout<@m, [P(sum), S(1)]>} ins(%zero : f32) outs(%e4 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dw1p = linalg.generic {indexing_maps = [#bi, #bh, #ih],
                          iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %dh : tensor<8x16xf32>, tensor<8x32xf32>) outs(%f4 : tensor<16x32xf32>)
      attrs = {spmd.layout = #spmd.layout<@m, [P(sum), S(1)]>} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<16x32xf32>
  // CHECK: %[[DH:.*]] = linalg.generic
  // CHECK-SAME: outs(%{{.*}} : tensor<4x8xf32>)
  // CHECK: %[[DW1P:.*]] = linalg.generic
  // CHECK-SAME: outs(%{{.*}} : tensor<16x8xf32>)
  // dW2 = h^T dy: P(sum) over dp, S(0) on tp.
  %e5 = tensor.empty() {spmd.layout = #spmd.layout<@m, [P(sum), S(0)]>} : tensor<32x16xf32>
  %f5 = linalg.fill {spmd.layout = #spmd.layout<@m, [P(sum), S(0)]>} ins(%zero : f32) outs(%e5 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %dw2p = linalg.generic {indexing_maps = [affine_map<(b, h, j) -> (b, h)>, affine_map<(b, h, j) -> (b, j)>, affine_map<(b, h, j) -> (h, j)>],
                          iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%h, %dy : tensor<8x32xf32>, tensor<8x16xf32>) outs(%f5 : tensor<32x16xf32>)
      attrs = {spmd.layout = #spmd.layout<@m, [P(sum), S(0)]>} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<32x16xf32>
  // CHECK: %[[DW2P:.*]] = linalg.generic
  // CHECK-SAME: outs(%{{.*}} : tensor<8x16xf32>)
  // dx = dh W1^T: S(0) on dp, P(sum) over tp.
  %e6 = tensor.empty() {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>} : tensor<8x16xf32>
  %f6 = linalg.fill {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>} ins(%zero : f32) outs(%e6 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dxp = linalg.generic {indexing_maps = [#bh, #ih, #bi],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dh, %w1 : tensor<8x32xf32>, tensor<16x32xf32>) outs(%f6 : tensor<8x16xf32>)
      attrs = {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x16xf32>
  // CHECK: %[[DXP:.*]] = linalg.generic
  // CHECK-SAME: outs(%{{.*}} : tensor<4x16xf32>)
  // CHECK: %[[DW1:.*]] = spmd.all_reduce %[[DW1P]] on @m ["dp"] sum : tensor<16x8xf32>
  // CHECK-NEXT: %[[DW2:.*]] = spmd.all_reduce %[[DW2P]] on @m ["dp"] sum : tensor<8x16xf32>
  // CHECK-NEXT: %[[DX:.*]] = spmd.all_reduce %[[DXP]] on @m ["tp"] sum : tensor<4x16xf32>
  // CHECK-NEXT: return %[[Y]], %[[DW1]], %[[DW2]], %[[DX]]
  %dw1 = spmd.constrain %dw1p to #spmd.layout<@m, [R, S(1)]> : tensor<16x32xf32>
  %dw2 = spmd.constrain %dw2p to #spmd.layout<@m, [R, S(0)]> : tensor<32x16xf32>
  %dx = spmd.constrain %dxp to #spmd.layout<@m, [S(0), R]> : tensor<8x16xf32>
  return %y, %dw1, %dw2, %dx : tensor<8x16xf32>, tensor<16x32xf32>, tensor<32x16xf32>, tensor<8x16xf32>
}
// Four all_reduces in all, nothing else.
// CHECK-NOT: spmd.all_
// CHECK-NOT: spmd.reduce_scatter
