// RUN: spmd-opt %s --spmd-compile | FileCheck %s

// Bufferization returns a slice of an argument through a memref.cast; the
// plan materializes it with a copy kernel into a buffer of its own.
// CHECK-LABEL: func.func @slice(
// CHECK-NEXT: %[[B:.*]] = spmd.plan_buffer offset 0 bytes 256 : memref<4x16xf32>
// CHECK-NEXT: spmd.plan_kernel @slice_kernel_0(%arg0, %[[B]])
// CHECK-NEXT: return %[[B]]
func.func @slice(%x: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %s = tensor.extract_slice %x[2, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// The leading piece of a buffer, reshaped, has an identity layout but is
// still part of another buffer (here: a member of a bucketed all_reduce);
// it is copied out too, and the slice and reshape move into the kernel.
// CHECK-LABEL: func.func @leading(
// CHECK: spmd.plan_all_reduce %[[AR:[^,]*]], %[[AR]]
// CHECK-NEXT: %[[OUT:.*]] = spmd.plan_buffer offset {{[0-9]+}} bytes 64 : memref<4x4xf32>
// CHECK-NEXT: spmd.plan_kernel @leading_kernel_{{[0-9]+}}(%[[AR]], %[[OUT]])
// CHECK-NEXT: return %[[OUT]]
// The kernels follow the entries.
// CHECK: func.func @slice_kernel_0
// CHECK: memref.subview %arg0[2, 0] [4, 16] [1, 1]
// CHECK: linalg.copy
spmd.mesh @dp2 ["dp"=2]
func.func @leading(%a: tensor<16xf32>, %b: tensor<8xf32>) -> tensor<4x4xf32> {
  %c = tensor.concat dim(0) %a, %b : (tensor<16xf32>, tensor<8xf32>) -> tensor<24xf32>
  %r = spmd.all_reduce %c on @dp2 ["dp"] sum : tensor<24xf32>
  %s = tensor.extract_slice %r[0] [16] [1] : tensor<24xf32> to tensor<16xf32>
  %e = tensor.expand_shape %s [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  return %e : tensor<4x4xf32>
}
