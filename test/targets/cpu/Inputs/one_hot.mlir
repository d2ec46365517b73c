// An embedding lookup written as a contraction with a one-hot matrix, and
// its backward (the transposed contraction), as the PyTorch frontend
// writes them; the table is sharded on the vocabulary over 2 ranks
// (7 rows: 4 and 3), so each rank compares against its own rows (an
// offset) and the lookup is a partial sum.
spmd.mesh @mesh ["x"=2]
#tok = affine_map<(b, t, d, v) -> (b, t)>
#tab = affine_map<(b, t, d, v) -> (v, d)>
#emb = affine_map<(b, t, d, v) -> (b, t, d)>
#btok = affine_map<(v, d, b, t) -> (b, t)>
#bg = affine_map<(v, d, b, t) -> (b, t, d)>
#bout = affine_map<(v, d, b, t) -> (v, d)>
func.func @lookup(%idx: tensor<5x3xi64> {spmd.layout = #spmd.layout<@mesh, [R]>},
                  %table: tensor<7x4xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                  %g: tensor<5x3x4xf32> {spmd.layout = #spmd.layout<@mesh, [R]>})
    -> (tensor<5x3x4xf32>, tensor<7x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<5x3x4xf32>
  %ef = linalg.fill ins(%zero : f32) outs(%e0 : tensor<5x3x4xf32>) -> tensor<5x3x4xf32>
  %emb = linalg.generic {indexing_maps = [#tok, #tab, #emb],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%idx, %table : tensor<5x3xi64>, tensor<7x4xf32>) outs(%ef : tensor<5x3x4xf32>) {
  ^bb0(%i: i64, %w: f32, %acc: f32):
    %v = linalg.index 3 : index
    %vi = arith.index_cast %v : index to i64
    %hit = arith.cmpi eq, %i, %vi : i64
    %s = arith.select %hit, %w, %zero : f32
    %r = arith.addf %acc, %s : f32
    linalg.yield %r : f32
  } -> tensor<5x3x4xf32>
  %t0 = tensor.empty() : tensor<7x4xf32>
  %tf = linalg.fill ins(%zero : f32) outs(%t0 : tensor<7x4xf32>) -> tensor<7x4xf32>
  %grad = linalg.generic {indexing_maps = [#btok, #bg, #bout],
      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%idx, %g : tensor<5x3xi64>, tensor<5x3x4xf32>) outs(%tf : tensor<7x4xf32>) {
  ^bb0(%i: i64, %x: f32, %acc: f32):
    %v = linalg.index 0 : index
    %vi = arith.index_cast %v : index to i64
    %hit = arith.cmpi eq, %vi, %i : i64
    %s = arith.select %hit, %x, %zero : f32
    %r = arith.addf %s, %acc : f32
    linalg.yield %r : f32
  } -> tensor<7x4xf32>
  return %emb, %grad : tensor<5x3x4xf32>, tensor<7x4xf32>
}
