func.func @concat(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> tensor<8x32xf32> {
  %x = tensor.concat dim(-1) %a, %b : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x32xf32>
  return %x : tensor<8x32xf32>
}
