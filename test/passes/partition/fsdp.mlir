// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// FSDP style on dp=4: the weight lives S(0); it is all_gathered before use
// and its gradient, a P(sum) over the sharded batch, is reduce_scattered
// back to S(0).

spmd.mesh @dp ["dp"=4]

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32> {spmd.global_type = tensor<16x8xf32>, spmd.layout = #spmd.layout<@dp, [S(0)]>},
// CHECK-SAME: %[[W:[^:]*]]: tensor<2x4xf32> {spmd.global_type = tensor<8x4xf32>, spmd.layout = #spmd.layout<@dp, [S(0)]>},
// CHECK-SAME: %[[DY:[^:]*]]: tensor<4x4xf32> {spmd.global_type = tensor<16x4xf32>, spmd.layout = #spmd.layout<@dp, [S(0)]>})
// CHECK-SAME: -> (tensor<4x4xf32> {spmd.global_type = tensor<16x4xf32>, spmd.layout = #spmd.layout<@dp, [S(0)]>},
// CHECK-SAME: tensor<2x4xf32> {spmd.global_type = tensor<8x4xf32>, spmd.layout = #spmd.layout<@dp, [S(0)]>})
func.func @step(%x: tensor<16x8xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                %w: tensor<8x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                %dy: tensor<16x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>})
    -> (tensor<16x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
        tensor<8x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  // CHECK: %[[WF:.*]] = spmd.all_gather %[[W]] on @dp ["dp"] dim 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  // CHECK: %[[Y:.*]] = linalg.matmul ins(%[[X]], %[[WF]] : tensor<4x8xf32>, tensor<8x4xf32>)
  %wf = spmd.constrain %w to #spmd.layout<@dp, [R]> : tensor<8x4xf32>
  %e0 = tensor.empty() {spmd.layout = #spmd.layout<@dp, [S(0)]>} : tensor<16x4xf32>
  %f0 = linalg.fill {spmd.layout = #spmd.layout<@dp, [S(0)]>} ins(%zero : f32) outs(%e0 : tensor<16x4xf32>) -> tensor<16x4xf32>
  %y = linalg.matmul {spmd.layout = #spmd.layout<@dp, [S(0)]>}
      ins(%x, %wf : tensor<16x8xf32>, tensor<8x4xf32>) outs(%f0 : tensor<16x4xf32>) -> tensor<16x4xf32>
  // CHECK: %[[XT:.*]] = linalg.transpose ins(%[[X]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<8x4xf32>)
  // CHECK: %[[DWP:.*]] = linalg.matmul ins(%[[XT]], %[[DY]] : tensor<8x4xf32>, tensor<4x4xf32>) outs(%{{.*}} : tensor<8x4xf32>)
  %et = tensor.empty() {spmd.layout = #spmd.layout<@dp, [S(1)]>} : tensor<8x16xf32>
  %xt = linalg.transpose {spmd.layout = #spmd.layout<@dp, [S(1)]>}
      ins(%x : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) permutation = [1, 0]
  %e1 = tensor.empty() {spmd.layout = #spmd.layout<@dp, [P(sum)]>} : tensor<8x4xf32>
  %f1 = linalg.fill {spmd.layout = #spmd.layout<@dp, [P(sum)]>} ins(%zero : f32) outs(%e1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %dwp = linalg.matmul {spmd.layout = #spmd.layout<@dp, [P(sum)]>}
      ins(%xt, %dy : tensor<8x16xf32>, tensor<16x4xf32>) outs(%f1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: %[[DW:.*]] = spmd.reduce_scatter %[[DWP]] on @dp ["dp"] dim 0 sum : tensor<8x4xf32> -> tensor<2x4xf32>
  // CHECK-NEXT: return %[[Y]], %[[DW]] : tensor<4x4xf32>, tensor<2x4xf32>
  %dw = spmd.constrain %dwp to #spmd.layout<@dp, [S(0)]> : tensor<8x4xf32>
  return %y, %dw : tensor<16x4xf32>, tensor<8x4xf32>
}
