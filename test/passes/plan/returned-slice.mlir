// RUN: spmd-opt %s --spmd-compile | FileCheck %s

// Bufferization returns a slice of an argument through a memref.cast; the
// plan materializes it with a copy kernel into a buffer of its own.
// CHECK-LABEL: func.func @slice(
// CHECK-NEXT: %[[B:.*]] = spmd.plan_buffer offset 0 bytes 256 : memref<4x16xf32>
// CHECK-NEXT: spmd.plan_kernel @slice_kernel_0(%arg0, %[[B]])
// CHECK-NEXT: return %[[B]]
// CHECK: func.func @slice_kernel_0
// CHECK: memref.subview %arg0[2, 0] [4, 16] [1, 1]
// CHECK: linalg.copy
func.func @slice(%x: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %s = tensor.extract_slice %x[2, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}
