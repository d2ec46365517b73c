func.func @from_elements(%a: f32) -> tensor<1000000000000xf32> {
  %x = "tensor.from_elements"(%a) : (f32) -> tensor<1000000000000xf32>
  return %x : tensor<1000000000000xf32>
}
