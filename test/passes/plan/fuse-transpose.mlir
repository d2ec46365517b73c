// RUN: spmd-opt %s --spmd-compile | FileCheck %s
// RUN: spmd-run %s --entry linear --seed 1 --check | FileCheck %s --check-prefix=EXEC
// RUN: spmd-run %s --entry batch_perm --seed 2 --check | FileCheck %s --check-prefix=EXEC
// EXEC: check passed

// A transpose feeding a contraction is fused into it when the result is
// still a GEMM: it becomes the GEMM's transpose flag, not a copy kernel
// (nn.Linear computes x W^T).

// CHECK-LABEL: func.func @linear(
// CHECK-NOT: spmd.plan_kernel
// CHECK: spmd.plan_gemm %arg0, %arg1, %{{.*}} transpose_b beta 0 : memref<8x16xf32>, memref<32x16xf32>, memref<8x32xf32>
// CHECK-NOT: spmd.plan_kernel
// CHECK: return
func.func @linear(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%et : tensor<16x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// Moving the batch dim inside the operand has no GEMM view: the transpose
// stays a copy kernel and the batched GEMM reads its result.
// CHECK-LABEL: func.func @batch_perm(
// CHECK: spmd.plan_kernel @batch_perm_kernel_{{[0-9]+}}(%arg1, %[[T:.*]]) : memref<8x2x16xf32>, memref<2x8x16xf32>
// CHECK: spmd.plan_gemm %arg0, %[[T]], %{{.*}} beta 0 : memref<2x4x8xf32>, memref<2x8x16xf32>, memref<2x4x16xf32>
func.func @batch_perm(%a: tensor<2x4x8xf32>, %w: tensor<8x2x16xf32>) -> tensor<2x4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<2x8x16xf32>
  %bt = linalg.transpose ins(%w : tensor<8x2x16xf32>) outs(%et : tensor<2x8x16xf32>) permutation = [1, 0, 2]
  %e = tensor.empty() : tensor<2x4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %y = linalg.batch_matmul ins(%a, %bt : tensor<2x4x8xf32>, tensor<2x8x16xf32>) outs(%z : tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}
