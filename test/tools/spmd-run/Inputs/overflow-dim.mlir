// A dim of INT64_MAX elements sharded over 4 devices: its shard size
// wrapped negative in partitioning; now the tensor is refused for its size.
spmd.mesh @mesh ["x"=4]
func.func @f(%a: tensor<9223372036854775807xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) -> (tensor<9223372036854775807xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}) {
  %e = tensor.empty() : tensor<9223372036854775807xf32>
  %r = linalg.add ins(%a, %a : tensor<9223372036854775807xf32>, tensor<9223372036854775807xf32>) outs(%e : tensor<9223372036854775807xf32>) -> tensor<9223372036854775807xf32>
  return %r : tensor<9223372036854775807xf32>
}
