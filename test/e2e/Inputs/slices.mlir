// Slices: rows 2..5 of x through relu (the slice moves into the kernel,
// which takes x), then written into rows 4..7 of a zero 8x16 tensor
// (bufferized as a copy into a slice: a kernel), and a transposed slice.
func.func @slices(%x: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<8x16xf32>, tensor<16x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = tensor.extract_slice %x[2, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %a, %zero : f32
      linalg.yield %m : f32
  } -> tensor<4x16xf32>
  %z = tensor.empty() : tensor<8x16xf32>
  %zf = linalg.fill ins(%zero : f32) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %ins = tensor.insert_slice %r into %zf[4, 0] [4, 16] [1, 1] : tensor<4x16xf32> into tensor<8x16xf32>
  %et = tensor.empty() : tensor<16x4xf32>
  %t = linalg.transpose ins(%s : tensor<4x16xf32>) outs(%et : tensor<16x4xf32>) permutation = [1, 0]
  return %r, %ins, %t : tensor<4x16xf32>, tensor<8x16xf32>, tensor<16x4xf32>
}
