func.func @collapse(%a: tensor<8x16xf32>) -> tensor<128xf32> {
  %c = tensor.collapse_shape %a [[4294967296, 1]] : tensor<8x16xf32> into tensor<128xf32>
  return %c : tensor<128xf32>
}
