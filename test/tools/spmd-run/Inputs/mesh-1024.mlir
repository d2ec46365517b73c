spmd.mesh @m ["x"=1024]
func.func @main(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@m, [R]>})
    -> (tensor<8xf32> {spmd.layout = #spmd.layout<@m, [R]>}) {
  %y = arith.addf %x, %x : tensor<8xf32>
  return %y : tensor<8xf32>
}
