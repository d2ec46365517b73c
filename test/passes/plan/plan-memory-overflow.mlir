// RUN: spmd-opt %s -split-input-file -verify-diagnostics --spmd-plan-memory | FileCheck %s
// A buffer whose byte size overflows int64 is an error naming it, not a
// wrapped 0-byte buffer overlapping the others (memory corruption at run
// time).

func.func @wraps(%x: memref<4xf32>) -> memref<4xf32> {
  // expected-error @+1 {{'memref.alloc' op allocates a 'memref<1152921504606846976x4xf32>' whose byte size overflows int64}}
  %a = memref.alloc() : memref<1152921504606846976x4xf32>
  %v = memref.collapse_shape %a [[0, 1]] : memref<1152921504606846976x4xf32> into memref<4611686018427387904xf32>
  return %x : memref<4xf32>
}

// -----

// Each fits, together they pass the 2^62-byte arena limit.
func.func @arena(%x: memref<4xf32>) -> (memref<3458764513820540928xi8>, memref<3458764513820540928xi8>) {
  %a = memref.alloc() : memref<3458764513820540928xi8>
  // expected-error @+1 {{'memref.alloc' op needs 3458764513820540928 bytes at arena offset 3458764513820540928, beyond the largest arena of 4611686018427387904 bytes}}
  %b = memref.alloc() : memref<3458764513820540928xi8>
  return %a, %b : memref<3458764513820540928xi8>, memref<3458764513820540928xi8>
}

// -----

// A complex element is two of its part; an element without a byte size is
// an error naming the buffer, not a crash (mutant 3760 of the seed-40
// campaign: an all_reduce of complex<f32> scalars).
// CHECK-LABEL: func.func @complex
// CHECK: spmd.plan_buffer offset {{[0-9]+}} bytes 24 : memref<3xcomplex<f32>>
// CHECK: spmd.plan_buffer offset {{[0-9]+}} bytes 32 : memref<2xcomplex<f64>>
func.func @complex(%x: memref<4xf32>) -> (memref<3xcomplex<f32>>, memref<2xcomplex<f64>>) {
  %a = memref.alloc() : memref<3xcomplex<f32>>
  %b = memref.alloc() : memref<2xcomplex<f64>>
  return %a, %b : memref<3xcomplex<f32>>, memref<2xcomplex<f64>>
}

// -----

func.func @vectors(%x: memref<4xf32>) -> memref<4xvector<4xf32>> {
  // expected-error @+1 {{'memref.alloc' op allocates a 'memref<4xvector<4xf32>>': a plan holds integer, float, index and complex elements only}}
  %a = memref.alloc() : memref<4xvector<4xf32>>
  return %a : memref<4xvector<4xf32>>
}
