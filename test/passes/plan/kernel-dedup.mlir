// RUN: spmd-opt %s --spmd-compile | FileCheck %s

// Two identical layers (GEMM + relu): the relu kernel is emitted once and
// called twice; the GEMMs are library calls.

// CHECK-LABEL: func.func @two_layers
// CHECK: spmd.plan_gemm
// CHECK-NEXT: spmd.plan_kernel @two_layers_kernel_0
// CHECK: spmd.plan_gemm
// CHECK-NEXT: spmd.plan_kernel @two_layers_kernel_0
// CHECK: func.func @two_layers_kernel_0
// CHECK-NOT: func.func
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @two_layers(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %h0 = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f0 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h0 : tensor<4x4xf32>) outs(%e0 : tensor<4x4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %a, %zero : f32
      linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4x4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %h1 = linalg.matmul ins(%r0, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f1 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h1 : tensor<4x4xf32>) outs(%e1 : tensor<4x4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %a, %zero : f32
      linalg.yield %m : f32
  } -> tensor<4x4xf32>
  return %r1 : tensor<4x4xf32>
}
