func.func @scale(%x: tensor<?x16xf32>) -> (tensor<?x16xf32>, tensor<16xf32>) {
  %c = arith.constant -1 : index
  %two = arith.constant 2.0 : f32
  %n = tensor.dim %x, %c : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x16xf32>) outs(%e : tensor<?x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.mulf %a, %two : f32
      linalg.yield %s : f32
  } -> tensor<?x16xf32>
  %z = tensor.empty() : tensor<16xf32>
  %f = linalg.fill ins(%two : f32) outs(%z : tensor<16xf32>) -> tensor<16xf32>
  return %y, %f : tensor<?x16xf32>, tensor<16xf32>
}
