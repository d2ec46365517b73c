spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32> {spmd.layout = #spmd.layout<@m, [S(0]>}) {
  return
}
