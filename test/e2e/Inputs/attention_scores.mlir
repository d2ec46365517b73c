// Batched GEMMs: scores = q k^T per head (transposed B), then scores v.
#bmk = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#bnk = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#bmn = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @attn(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul indexing_maps = [#bmk, #bnk, #bmn]
      ins(%q, %k : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%f : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %e2 = tensor.empty() : tensor<2x4x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%s, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%f2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}
