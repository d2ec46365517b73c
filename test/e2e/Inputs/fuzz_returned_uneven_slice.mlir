// bench/fuzz/fuzz.py program 300193: a returned slice whose size differs
// between ranks (copied out into a runtime-sized buffer of its own).
spmd.mesh @mesh ["x"=2, "y"=2]
func.func @main(
    %a0: tensor<1x7xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(0)]>},
    %a1: tensor<1x2xf32> {spmd.layout = #spmd.layout<@mesh, [S(1), R]>},
    %a2: tensor<4x7xf32> {spmd.layout = #spmd.layout<@mesh, [R, R]>},
    %a3: tensor<2x1xf32> {spmd.layout = #spmd.layout<@mesh, [P(sum), P(sum)]>},
    %a4: tensor<2x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(1), S(1)]>})
    -> (tensor<2x1xf32> {spmd.layout = #spmd.layout<@mesh, [S(1), S(1)]>}, tensor<3x3xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %v1 = tensor.empty() : tensor<7x1xf32>
  %v2 = linalg.transpose ins(%a0 : tensor<1x7xf32>) outs(%v1 : tensor<7x1xf32>) permutation = [1, 0]
  %v3 = tensor.empty() : tensor<7x2xf32>
  %v4 = linalg.fill ins(%zero : f32) outs(%v3 : tensor<7x2xf32>) -> tensor<7x2xf32>
  %v5 = linalg.matmul ins(%v2, %a1 : tensor<7x1xf32>, tensor<1x2xf32>) outs(%v4 : tensor<7x2xf32>) -> tensor<7x2xf32>
  %v6 = tensor.empty() : tensor<7x1xf32>
  %v7 = linalg.transpose ins(%a0 : tensor<1x7xf32>) outs(%v6 : tensor<7x1xf32>) permutation = [1, 0]
  %v8 = tensor.extract_slice %a2[0, 4] [3, 3] [1, 1] : tensor<4x7xf32> to tensor<3x3xf32>
  %v9 = tensor.extract_slice %v2[0, 0] [2, 1] [1, 1] : tensor<7x1xf32> to tensor<2x1xf32>
  %v10 = arith.subf %v9, %a3 : tensor<2x1xf32>
  %v11 = arith.mulf %a2, %a2 : tensor<4x7xf32>
  %v12 = tensor.concat dim(0) %v10, %a3 : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<4x1xf32>
  %v13 = tensor.collapse_shape %v11 [[0, 1]] : tensor<4x7xf32> into tensor<28xf32>
  %v14 = tensor.expand_shape %v13 [[0, 1]] output_shape [1, 28] : tensor<28xf32> into tensor<1x28xf32>
  %v15 = tensor.empty() : tensor<1x8xf32>
  %v16 = linalg.fill ins(%zero : f32) outs(%v15 : tensor<1x8xf32>) -> tensor<1x8xf32>
  %v17 = linalg.matmul ins(%a1, %a4 : tensor<1x2xf32>, tensor<2x8xf32>) outs(%v16 : tensor<1x8xf32>) -> tensor<1x8xf32>
  return %v9, %v8 : tensor<2x1xf32>, tensor<3x3xf32>
}
