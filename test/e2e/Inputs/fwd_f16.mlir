// tanh(x w + b) in f16: GEMM through f32 BLAS, the kernel in f16 (JIT).
func.func @fwd(%x: tensor<4x16xf16>, %w: tensor<16x8xf16>, %b: tensor<8xf16>) -> tensor<4x8xf16> {
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x8xf16>
  %f = linalg.fill ins(%zero : f16) outs(%e : tensor<4x8xf16>) -> tensor<4x8xf16>
  %h = linalg.matmul ins(%x, %w : tensor<4x16xf16>, tensor<16x8xf16>) outs(%f : tensor<4x8xf16>) -> tensor<4x8xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b : tensor<4x8xf16>, tensor<8xf16>) outs(%e : tensor<4x8xf16>) {
    ^bb0(%a: f16, %c: f16, %o: f16):
      %s = arith.addf %a, %c : f16
      %t = math.tanh %s : f16
      linalg.yield %t : f16
  } -> tensor<4x8xf16>
  return %r : tensor<4x8xf16>
}
