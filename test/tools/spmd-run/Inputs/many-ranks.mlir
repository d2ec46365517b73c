spmd.mesh @mesh ["x"=100000]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = spmd.constrain %x to #spmd.layout<@mesh, [R]> : tensor<4xf32>
  return %y : tensor<4xf32>
}
