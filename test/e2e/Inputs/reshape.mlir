// Reshapes are views: x (2x4x8) collapsed to 8x8 for a GEMM, the result
// expanded back to 2x4x8 and scaled. No copies, no extra buffers.
func.func @heads(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = linalg.matmul ins(%flat, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y3 = tensor.expand_shape %y [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y3 : tensor<2x4x8xf32>) outs(%e3 : tensor<2x4x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.mulf %a, %two : f32
      linalg.yield %m : f32
  } -> tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}
