spmd.mesh @mesh ["x"=2, "y"=2]
func.func @main(%a: tensor<4x7xf32> {spmd.layout = #spmd.layout<@mesh, [R, R]>}) -> tensor<3x3xf32> {
  %s = tensor.extract_slice %a[0, 4] [3, 3] [1, -2147483648] : tensor<4x7xf32> to tensor<3x3xf32>
  return %s : tensor<3x3xf32>
}
