func.func @insert(%a: tensor<2xf32>, %d: tensor<8xf32>) -> tensor<8xf32> {
  %r = tensor.insert_slice %a into %d[1] [2] [-4] : tensor<2xf32> into tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @subview(%m: memref<8xf32>) -> memref<2xf32, strided<[-9223372036854775807], offset: 7>> {
  %v = memref.subview %m[7] [2] [-9223372036854775807] : memref<8xf32> to memref<2xf32, strided<[-9223372036854775807], offset: 7>>
  return %v : memref<2xf32, strided<[-9223372036854775807], offset: 7>>
}
