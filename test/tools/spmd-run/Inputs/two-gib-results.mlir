func.func @arena(%x: memref<4xf32>) -> (memref<2147483648xi8>, memref<2147483648xi8>) {
  %a = memref.alloc() : memref<2147483648xi8>
  %b = memref.alloc() : memref<2147483648xi8>
  return %a, %b : memref<2147483648xi8>, memref<2147483648xi8>
}
