func.func @f(%x: memref<?x16xf32>) -> index {
  %c = arith.constant -1 : index
  %n = memref.dim %x, %c : memref<?x16xf32>
  %t = gpu.thread_id x
  return %n : index
}
