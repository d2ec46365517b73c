func.func @main(%x: tensor<1000000000000000xf32>) -> tensor<1000000000000000xf32> {
  return %x : tensor<1000000000000000xf32>
}
