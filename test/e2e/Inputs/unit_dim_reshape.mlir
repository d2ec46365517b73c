// Shards carried through reshapes that only add or drop unit dims (torch's
// unsqueeze, view(b, 1, t), squeeze): 10 columns on 4 devices (3, 3, 2, 2)
// stay split through [6, 10] -> [6, 1, 10] -> broadcast multiply ->
// [6, 10], and 6 rows (2, 2, 2, 0) through [6] -> [1, 6] -> [6, 1] -> [6]:
// no gather is needed for any of them.
spmd.mesh @mesh ["x"=4]
func.func @main(%x: tensor<6x10xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>},
                %w: tensor<10xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                %v: tensor<6xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<6x10xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>},
        tensor<6xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) {
  %x3 = tensor.expand_shape %x [[0], [1, 2]] output_shape [6, 1, 10] : tensor<6x10xf32> into tensor<6x1x10xf32>
  %w2 = tensor.expand_shape %w [[0, 1]] output_shape [1, 10] : tensor<10xf32> into tensor<1x10xf32>
  %e = tensor.empty() : tensor<6x1x10xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(i, u, j) -> (i, u, j)>, affine_map<(i, u, j) -> (u, j)>, affine_map<(i, u, j) -> (i, u, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x3, %w2 : tensor<6x1x10xf32>, tensor<1x10xf32>) outs(%e : tensor<6x1x10xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
  } -> tensor<6x1x10xf32>
  %y = tensor.collapse_shape %p [[0], [1, 2]] : tensor<6x1x10xf32> into tensor<6x10xf32>
  %r = tensor.expand_shape %v [[0, 1]] output_shape [1, 6] : tensor<6xf32> into tensor<1x6xf32>
  %rf = tensor.collapse_shape %r [[0, 1]] : tensor<1x6xf32> into tensor<6xf32>
  %c = tensor.expand_shape %rf [[0, 1]] output_shape [6, 1] : tensor<6xf32> into tensor<6x1xf32>
  %e2 = tensor.empty() : tensor<6x1xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, u) -> (i, u)>, affine_map<(i, u) -> (i, u)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : tensor<6x1xf32>) outs(%e2 : tensor<6x1xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.addf %a, %a : f32
      linalg.yield %m : f32
  } -> tensor<6x1xf32>
  %z = tensor.collapse_shape %s [[0, 1]] : tensor<6x1xf32> into tensor<6xf32>
  return %y, %z : tensor<6x10xf32>, tensor<6xf32>
}

// Leading unit dims of a group that splits: 12 rows (3 on each of 4
// devices) viewed as [1, 4, 3] keep S(1), the outermost dim that is not 1.
func.func @lead(%x: tensor<12x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<1x4x3x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}) {
  %v = tensor.expand_shape %x [[0, 1, 2], [3]] output_shape [1, 4, 3, 5] : tensor<12x5xf32> into tensor<1x4x3x5xf32>
  return %v : tensor<1x4x3x5xf32>
}
