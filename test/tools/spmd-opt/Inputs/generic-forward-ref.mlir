#id = affine_map<(i) -> (i)>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {
      linalg.yield %a : f32
  } -> tensor<4xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
    ^bb0(%a: f32, %o: f32):
  } -> tensor<4xf32>
  return %q : tensor<4xf32>
}
