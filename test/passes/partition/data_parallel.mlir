// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// Data parallel linear layer on dp=4: batch S(0), weights R. Forward and the
// input gradient need no communication; each weight gradient is a sum over
// the sharded batch, a local P(sum), and needs one all_reduce.

spmd.mesh @dp ["dp"=4]

#x = affine_map<(b, i, j) -> (b, i)>
#dy = affine_map<(b, i, j) -> (b, j)>
#dw = affine_map<(b, i, j) -> (i, j)>

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32> {{[^}]*}}}, %[[W:[^:]*]]: tensor<8x4xf32> {{[^}]*}}}, %[[DY:[^:]*]]: tensor<4x4xf32> {{[^}]*}}})
func.func @step(%x: tensor<16x8xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                %w: tensor<8x4xf32> {spmd.layout = #spmd.layout<@dp, [R]>},
                %dy: tensor<16x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>})
    -> (tensor<16x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
        tensor<8x4xf32> {spmd.layout = #spmd.layout<@dp, [R]>},
        tensor<4xf32> {spmd.layout = #spmd.layout<@dp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  // Forward: no collective.
  // CHECK-NOT: spmd.all_
  // CHECK: %[[Y:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<4x8xf32>, tensor<8x4xf32>) outs(%{{.*}} : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e0 = tensor.empty() {spmd.layout = #spmd.layout<@dp, [S(0)]>} : tensor<16x4xf32>
  %f0 = linalg.fill {spmd.layout = #spmd.layout<@dp, [S(0)]>} ins(%zero : f32) outs(%e0 : tensor<16x4xf32>) -> tensor<16x4xf32>
  %y = linalg.matmul {spmd.layout = #spmd.layout<@dp, [S(0)]>}
      ins(%x, %w : tensor<16x8xf32>, tensor<8x4xf32>) outs(%f0 : tensor<16x4xf32>) -> tensor<16x4xf32>
  // Weight gradient: x^T dy, a local partial.
  // CHECK-NOT: spmd.all_
  // CHECK: %[[DWP:.*]] = linalg.generic
  // CHECK-SAME: ins(%[[X]], %[[DY]] : tensor<4x8xf32>, tensor<4x4xf32>) outs(%{{.*}} : tensor<8x4xf32>)
  // CHECK: } -> tensor<8x4xf32>
  %e1 = tensor.empty() {spmd.layout = #spmd.layout<@dp, [P(sum)]>} : tensor<8x4xf32>
  %f1 = linalg.fill {spmd.layout = #spmd.layout<@dp, [P(sum)]>} ins(%zero : f32) outs(%e1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %dwp = linalg.generic {indexing_maps = [#x, #dy, #dw],
                         iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %dy : tensor<16x8xf32>, tensor<16x4xf32>) outs(%f1 : tensor<8x4xf32>)
      attrs = {spmd.layout = #spmd.layout<@dp, [P(sum)]>} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<8x4xf32>
  // Bias gradient: column sums of dy, a local partial.
  // CHECK-NOT: spmd.all_
  // CHECK: %[[DBP:.*]] = linalg.generic
  // CHECK-SAME: ins(%[[DY]] : tensor<4x4xf32>) outs(%{{.*}} : tensor<4xf32>)
  %e2 = tensor.empty() {spmd.layout = #spmd.layout<@dp, [P(sum)]>} : tensor<4xf32>
  %f2 = linalg.fill {spmd.layout = #spmd.layout<@dp, [P(sum)]>} ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %dbp = linalg.generic {indexing_maps = [affine_map<(b, j) -> (b, j)>, affine_map<(b, j) -> (j)>],
                         iterator_types = ["reduction", "parallel"]}
      ins(%dy : tensor<16x4xf32>) outs(%f2 : tensor<4xf32>)
      attrs = {spmd.layout = #spmd.layout<@dp, [P(sum)]>} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %acc, %a : f32
      linalg.yield %s : f32
  } -> tensor<4xf32>
  // One all_reduce per gradient.
  // CHECK: %[[DW:.*]] = spmd.all_reduce %[[DWP]] on @dp ["dp"] sum : tensor<8x4xf32>
  // CHECK-NEXT: %[[DB:.*]] = spmd.all_reduce %[[DBP]] on @dp ["dp"] sum : tensor<4xf32>
  // CHECK-NEXT: return %[[Y]], %[[DW]], %[[DB]] : tensor<4x4xf32>, tensor<8x4xf32>, tensor<4xf32>
  %dw = spmd.constrain %dwp to #spmd.layout<@dp, [R]> : tensor<8x4xf32>
  %db = spmd.constrain %dbp to #spmd.layout<@dp, [R]> : tensor<4xf32>
  return %y, %dw, %db : tensor<16x4xf32>, tensor<8x4xf32>, tensor<4xf32>
}
