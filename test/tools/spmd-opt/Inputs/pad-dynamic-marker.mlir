func.func @pad(%a: tensor<8x16xf32>) -> tensor<8x18xf32> {
  %zero = arith.constant 0.0 : f32
  %x = tensor.pad %a low[0, -9223372036854775808] high[0, 1] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : f32
  } : tensor<8x16xf32> to tensor<8x18xf32>
  return %x : tensor<8x18xf32>
}
