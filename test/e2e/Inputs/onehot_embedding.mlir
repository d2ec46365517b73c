// An embedding lookup and its gradient written as one-hot reductions whose
// vocabulary loop is sharded unevenly (13 rows nested over a 2x2 mesh: 4,3,3,3).
// Partition offsets their linalg.index by spmd.local_offset, which the plan
// passes to the kernels as a scalar argument computed per rank.
spmd.mesh @mesh ["dp"=2, "tp"=2]

#ids = affine_map<(i, d, v) -> (i)>
#tab = affine_map<(i, d, v) -> (v, d)>
#out = affine_map<(i, d, v) -> (i, d)>
#gids = affine_map<(v, d, i) -> (i)>
#gdy = affine_map<(v, d, i) -> (i, d)>
#gout = affine_map<(v, d, i) -> (v, d)>

func.func @embed(%ids: tensor<3xi64> {spmd.layout = #spmd.layout<@mesh, [R, R]>},
                 %table: tensor<13x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>},
                 %dy: tensor<3x8xf32> {spmd.layout = #spmd.layout<@mesh, [R, R]>})
    -> (tensor<3x8xf32> {spmd.layout = #spmd.layout<@mesh, [R, R]>},
        tensor<13x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<3x8xf32>) -> tensor<3x8xf32>
  %out = linalg.generic {indexing_maps = [#ids, #tab, #out],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ids, %table : tensor<3xi64>, tensor<13x8xf32>) outs(%init : tensor<3x8xf32>) {
  ^bb0(%id: i64, %t: f32, %acc: f32):
    %v = linalg.index 2 : index
    %vi = arith.index_cast %v : index to i64
    %hit = arith.cmpi eq, %id, %vi : i64
    %x = arith.select %hit, %t, %zero : f32
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<3x8xf32>
  %ge = tensor.empty() : tensor<13x8xf32>
  %ginit = linalg.fill ins(%zero : f32) outs(%ge : tensor<13x8xf32>) -> tensor<13x8xf32>
  %g = linalg.generic {indexing_maps = [#gids, #gdy, #gout],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ids, %dy : tensor<3xi64>, tensor<3x8xf32>) outs(%ginit : tensor<13x8xf32>) {
  ^bb0(%id: i64, %d: f32, %acc: f32):
    %v = linalg.index 0 : index
    %vi = arith.index_cast %v : index to i64
    %hit = arith.cmpi eq, %id, %vi : i64
    %x = arith.select %hit, %d, %zero : f32
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<13x8xf32>
  return %out, %g : tensor<3x8xf32>, tensor<13x8xf32>
}
