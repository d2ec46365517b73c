func.func @slice(%a: tensor<8x16xf32>) -> tensor<4x4xf32> {
  %s = tensor.extract_slice %a[0, 0] [4, -0x8000000000000000] [1, 1] : tensor<8x16xf32> to tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}
