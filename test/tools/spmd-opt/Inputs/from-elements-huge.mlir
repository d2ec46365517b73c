func.func @f(%a: f32) -> tensor<1000000000000xf32> {
  %t = tensor.from_elements %a, %a, %a, %a : tensor<1000000000000xf32>
  return %t : tensor<1000000000000xf32>
}
