// The exporter's cumsum (a masked reduction loop reading linalg.index),
// flip (an input map reversing a loop) and repeat (broadcast between
// reshapes) on a 2x2 mesh, sharded along the scanned, flipped and tiled
// dim (5 on 2: 3, 2) and beside it (6 rows on 2).
spmd.mesh @mesh ["x"=2, "y"=2]
func.func @main(%arg0: tensor<6x5xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(0)]>}) -> (tensor<6x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>}, tensor<6x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(1)]>}, tensor<6x10xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(1)]>}) {
  %c1 = arith.constant 0x00000000 : f32
  %v2 = tensor.empty() : tensor<6x5xf32>
  %v3 = linalg.fill ins(%c1 : f32) outs(%v2 : tensor<6x5xf32>) -> tensor<6x5xf32>
  %v14 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<6x5xf32>) outs(%v3 : tensor<6x5xf32>) {
  ^bb0(%a4: f32, %o5: f32):
    %s6 = linalg.index 1 : index
    %s7 = arith.index_cast %s6 : index to i64
    %s8 = linalg.index 2 : index
    %s9 = arith.index_cast %s8 : index to i64
    %s10 = arith.cmpi sle, %s9, %s7 : i64
    %s11 = arith.constant 0x00000000 : f32
    %s12 = arith.select %s10, %a4, %s11 : f32
    %s13 = arith.addf %o5, %s12 : f32
    linalg.yield %s13 : f32
  } -> tensor<6x5xf32>
  %v15 = tensor.empty() : tensor<6x5xf32>
  %v18 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, -d1 + 4)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<6x5xf32>) outs(%v15 : tensor<6x5xf32>) {
  ^bb0(%a16: f32, %o17: f32):
    linalg.yield %a16 : f32
  } -> tensor<6x5xf32>
  %v19 = tensor.expand_shape %arg0 [[0, 1], [2, 3]] output_shape [1, 6, 1, 5] : tensor<6x5xf32> into tensor<1x6x1x5xf32>
  %v20 = tensor.collapse_shape %v19 [[0], [1], [2, 3]] : tensor<1x6x1x5xf32> into tensor<1x6x5xf32>
  %v21 = tensor.empty() : tensor<1x6x2x5xf32>
  %v22 = linalg.broadcast ins(%v20 : tensor<1x6x5xf32>) outs(%v21 : tensor<1x6x2x5xf32>) dimensions = [2]
  %v23 = tensor.collapse_shape %v22 [[0, 1], [2, 3]] : tensor<1x6x2x5xf32> into tensor<6x10xf32>
  return %v14, %v18, %v23 : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x10xf32>
}
func.func @scan(%arg0: tensor<6x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(1), S(0)]>}) -> (tensor<6x5xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>}, tensor<6x5xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>}, tensor<6x10xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>}) {
  %c1 = arith.constant 0x00000000 : f32
  %v2 = tensor.empty() : tensor<6x5xf32>
  %v3 = linalg.fill ins(%c1 : f32) outs(%v2 : tensor<6x5xf32>) -> tensor<6x5xf32>
  %v14 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<6x5xf32>) outs(%v3 : tensor<6x5xf32>) {
  ^bb0(%a4: f32, %o5: f32):
    %s6 = linalg.index 1 : index
    %s7 = arith.index_cast %s6 : index to i64
    %s8 = linalg.index 2 : index
    %s9 = arith.index_cast %s8 : index to i64
    %s10 = arith.cmpi sle, %s9, %s7 : i64
    %s11 = arith.constant 0x00000000 : f32
    %s12 = arith.select %s10, %a4, %s11 : f32
    %s13 = arith.addf %o5, %s12 : f32
    linalg.yield %s13 : f32
  } -> tensor<6x5xf32>
  %v15 = tensor.empty() : tensor<6x5xf32>
  %v18 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, -d1 + 4)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<6x5xf32>) outs(%v15 : tensor<6x5xf32>) {
  ^bb0(%a16: f32, %o17: f32):
    linalg.yield %a16 : f32
  } -> tensor<6x5xf32>
  %v19 = tensor.expand_shape %arg0 [[0, 1], [2, 3]] output_shape [1, 6, 1, 5] : tensor<6x5xf32> into tensor<1x6x1x5xf32>
  %v20 = tensor.collapse_shape %v19 [[0], [1], [2, 3]] : tensor<1x6x1x5xf32> into tensor<1x6x5xf32>
  %v21 = tensor.empty() : tensor<1x6x2x5xf32>
  %v22 = linalg.broadcast ins(%v20 : tensor<1x6x5xf32>) outs(%v21 : tensor<1x6x2x5xf32>) dimensions = [2]
  %v23 = tensor.collapse_shape %v22 [[0, 1], [2, 3]] : tensor<1x6x2x5xf32> into tensor<6x10xf32>
  return %v14, %v18, %v23 : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x10xf32>
}
