// tanh(x w + b) in bf16: GEMM through f32 BLAS, the kernel in bf16 (JIT).
func.func @fwd(%x: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4x8xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %h = linalg.matmul ins(%x, %w : tensor<4x16xbf16>, tensor<16x8xbf16>) outs(%f : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b : tensor<4x8xbf16>, tensor<8xbf16>) outs(%e : tensor<4x8xbf16>) {
    ^bb0(%a: bf16, %c: bf16, %o: bf16):
      %s = arith.addf %a, %c : bf16
      %t = math.tanh %s : bf16
      linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  return %r : tensor<4x8xbf16>
}
