// An uneven shard collapsed and gathered: 5 rows of 3 on 4 devices (2, 2,
// 1, 0 rows: 6, 6, 3, 0 elements, not torch.chunk(15, 4)'s 4, 4, 4, 3), and
// the same through a 3x3 matmul (fuzz.py seed 44, program 4400757).
spmd.mesh @mesh ["x"=4]
func.func @main(%a: tensor<5x4xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                %b: tensor<4x3xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
                %c: tensor<3x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                %d: tensor<5x3xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>})
    -> (tensor<15xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
        tensor<1x9xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x3xf32>) -> tensor<5x3xf32>
  %m = linalg.matmul ins(%a, %b : tensor<5x4xf32>, tensor<4x3xf32>) outs(%f : tensor<5x3xf32>) -> tensor<5x3xf32>
  %m2 = arith.addf %m, %m : tensor<5x3xf32>
  %flat = tensor.collapse_shape %m2 [[0, 1]] : tensor<5x3xf32> into tensor<15xf32>
  %e2 = tensor.empty() : tensor<3x3xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %n = linalg.matmul ins(%c, %d : tensor<3x5xf32>, tensor<5x3xf32>) outs(%f2 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %n2 = arith.addf %n, %n : tensor<3x3xf32>
  %flat2 = tensor.collapse_shape %n2 [[0, 1]] : tensor<3x3xf32> into tensor<9xf32>
  %row = tensor.expand_shape %flat2 [[0, 1]] output_shape [1, 9] : tensor<9xf32> into tensor<1x9xf32>
  return %flat, %row : tensor<15xf32>, tensor<1x9xf32>
}
