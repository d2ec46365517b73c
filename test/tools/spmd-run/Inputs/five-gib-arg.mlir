func.func @main(%x: tensor<1342177280xf32>) -> tensor<1342177280xf32> {
  return %x : tensor<1342177280xf32>
}
