spmd.mesh @mesh ["x"=2]
func.func @main(%a: tensor<4x7xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) -> (tensor<3x3xf32>, tensor<2x3xf32>) {
  %s = tensor.extract_slice %a[0, 6] [3, 3] [1, -2] : tensor<4x7xf32> to tensor<3x3xf32>
  %z = tensor.extract_slice %a[1, 2] [2, 3] [2, 0] : tensor<4x7xf32> to tensor<2x3xf32>
  return %s, %z : tensor<3x3xf32>, tensor<2x3xf32>
}
