spmd.mesh @m ["x"=4]
func.func @f(%x: tensor<13x2xf32>) -> tensor<4x2xf32> {
  %0 = spmd.reduce_scatter %x on @m ["x"] dim 0 sum : tensor<13x2xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
