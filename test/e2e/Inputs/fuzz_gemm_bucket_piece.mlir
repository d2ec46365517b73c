// bench/fuzz/fuzz.py program 300130: a P(sum) argument reduced in a bucket
// with another, its piece read by a GEMM (a contiguous slice of the
// bucket buffer: the plan loader takes it as the arena at an offset).
spmd.mesh @mesh ["x"=2]
func.func @main(
    %a0: tensor<2x7xf32> {spmd.layout = #spmd.layout<@mesh, [P(sum)]>},
    %a1: tensor<2x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>},
    %a2: tensor<7x3xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
    %a3: tensor<3x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>},
    %a4: tensor<8x5xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
    %a5: tensor<5x2xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
    %a6: tensor<1x6xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>},
    %a7: tensor<7x4xf32> {spmd.layout = #spmd.layout<@mesh, [P(sum)]>},
    %a8: tensor<4x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>})
    -> (tensor<1x6xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}, tensor<2x7xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}, tensor<7x5xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %v1 = tensor.collapse_shape %a0 [[0, 1]] : tensor<2x7xf32> into tensor<14xf32>
  %v2 = tensor.expand_shape %v1 [[0, 1]] output_shape [14, 1] : tensor<14xf32> into tensor<14x1xf32>
  %v3 = arith.maximumf %a0, %a0 : tensor<2x7xf32>
  %v4 = tensor.empty() : tensor<7x2xf32>
  %v5 = linalg.transpose ins(%a0 : tensor<2x7xf32>) outs(%v4 : tensor<7x2xf32>) permutation = [1, 0]
  %v6 = tensor.concat dim(1) %a0, %a1 : (tensor<2x7xf32>, tensor<2x5xf32>) -> tensor<2x12xf32>
  %v7 = tensor.empty() : tensor<2x3xf32>
  %v8 = linalg.fill ins(%zero : f32) outs(%v7 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %v9 = linalg.matmul ins(%v3, %a2 : tensor<2x7xf32>, tensor<7x3xf32>) outs(%v8 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %v10 = tensor.empty() : tensor<3x5xf32>
  %v11 = linalg.fill ins(%zero : f32) outs(%v10 : tensor<3x5xf32>) -> tensor<3x5xf32>
  %v12 = linalg.matmul ins(%a3, %a4 : tensor<3x8xf32>, tensor<8x5xf32>) outs(%v11 : tensor<3x5xf32>) -> tensor<3x5xf32>
  %v13 = tensor.empty() : tensor<3x2xf32>
  %v14 = linalg.fill ins(%zero : f32) outs(%v13 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %v15 = linalg.matmul ins(%v12, %a5 : tensor<3x5xf32>, tensor<5x2xf32>) outs(%v14 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %v16 = arith.negf %a6 : tensor<1x6xf32>
  %v17 = math.tanh %a6 : tensor<1x6xf32>
  %v18 = tensor.empty() : tensor<7x5xf32>
  %v19 = linalg.fill ins(%zero : f32) outs(%v18 : tensor<7x5xf32>) -> tensor<7x5xf32>
  %v20 = linalg.matmul ins(%a7, %a8 : tensor<7x4xf32>, tensor<4x5xf32>) outs(%v19 : tensor<7x5xf32>) -> tensor<7x5xf32>
  %v21 = spmd.constrain %v6 to #spmd.layout<@mesh, [R]> : tensor<2x12xf32>
  return %v17, %v3, %v20 : tensor<1x6xf32>, tensor<2x7xf32>, tensor<7x5xf32>
}
