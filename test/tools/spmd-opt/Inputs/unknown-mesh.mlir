func.func @f(%x: tensor<4xf32> {spmd.layout = #spmd.layout<@nowhere, [S(0)]>}) {
  return
}
