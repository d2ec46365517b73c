spmd.mesh @mesh ["x"=5]
func.func @main(
    %a0: tensor<8x2xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
    %a1: tensor<7x3xf32> {spmd.layout = #spmd.layout<@mesh, [P(sum)]>},
    %a2: tensor<7x3xf32> {spmd.layout = #spmd.layout<@mesh, [R]>})
    -> (tensor<16x1xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}, tensor<21x1xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}, tensor<7x3xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %v1 = tensor.collapse_shape %a0 [[0, 1]] : tensor<8x2xf32> into tensor<16xf32>
  %v2 = tensor.expand_shape %v1 [[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
  %v3 = spmd.constrain %a1 to #spmd.layout<@mesh, [S(1)]> : tensor<7x3xf32>
  %v4 = arith.maximumf %a1, %a2 : tensor<7x3xf32>
  %v5 = tensor.collapse_shape %v4 [[0, 1]] : tensor<7x3xf32> into tensor<21xf32>
  %v6 = tensor.expand_shape %v5 [[0, 1]] output_shape [21, 1] : tensor<21xf32> into tensor<21x1xf32>
  return %v2, %v6, %v3 : tensor<16x1xf32>, tensor<21x1xf32>, tensor<7x3xf32>
}
