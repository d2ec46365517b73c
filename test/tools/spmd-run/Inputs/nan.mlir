// sqrt of inputs in [-1, 1] (--seed): NaN for the negative ones, in the
// partitioned run and in the reference alike; 1/0 gives +-inf alike.
spmd.mesh @mesh ["dp"=2]
func.func @f(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
        tensor<8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.sqrt ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %i = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %zero : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  return %r, %i : tensor<8xf32>, tensor<8xf32>
}
