// RUN: spmd-opt %s --spmd-compile | FileCheck %s

// Bias add and relu fuse into one kernel between two GEMMs; the output
// reuses the first GEMM's buffer (offset 0).

// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: spmd.plan_arena_bytes = 2048
// CHECK-NEXT: %[[H:.*]] = spmd.plan_buffer offset 0 bytes 1024 : memref<8x32xf32>
// CHECK-NEXT: spmd.plan_gemm %arg0, %arg1, %[[H]] beta 0
// CHECK-NEXT: %[[R:.*]] = spmd.plan_buffer offset 1024 bytes 1024 : memref<8x32xf32>
// CHECK-NEXT: spmd.plan_kernel @mlp_kernel_0(%[[H]], %arg2, %[[R]])
// CHECK-NEXT: %[[Y:.*]] = spmd.plan_buffer offset 0 bytes 512 : memref<8x16xf32>
// CHECK-NEXT: spmd.plan_gemm %[[R]], %arg3, %[[Y]] beta 0
// CHECK-NEXT: return %[[Y]]
// CHECK: func.func @mlp_kernel_0
// CHECK: arith.addf
// CHECK-NEXT: arith.maximumf
// CHECK-NOT: func.func

#map2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>,
               %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %eb = tensor.empty() : tensor<8x32xf32>
  %hb = linalg.generic {indexing_maps = [#map2, #row, #map2], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b1 : tensor<8x32xf32>, tensor<32xf32>) outs(%eb : tensor<8x32xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %er = tensor.empty() : tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]}
      ins(%hb : tensor<8x32xf32>) outs(%er : tensor<8x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %a, %zero : f32
      linalg.yield %m : f32
  } -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x32xf32>, tensor<32x16xf32>) outs(%f2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
