// RUN: spmd-opt %s -split-input-file -verify-diagnostics --spmd-plan-memory
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
