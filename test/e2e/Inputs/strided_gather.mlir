// Every other column (x[:, ::2], as RoPE takes the even features) of rows
// sharded 2,2,1,0 on 4 ranks, gathered: the gather reads a strided view,
// which spmd-outline-plan copies into a contiguous buffer first.
spmd.mesh @mesh ["x"=4]
func.func @strided(%a: tensor<5x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<5x4xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}) {
  %even = tensor.extract_slice %a[0, 0] [5, 4] [1, 2] : tensor<5x8xf32> to tensor<5x4xf32>
  %s = spmd.constrain %even to #spmd.layout<@mesh, [R]> : tensor<5x4xf32>
  %r = arith.addf %s, %s : tensor<5x4xf32>
  return %r : tensor<5x4xf32>
}
