// A Megatron-style MLP on a 1-D tensor-parallel mesh of 4 devices: W1 is
// split by columns, W2 by rows, so the hidden activation stays sharded and
// the output is a pending sum (one all_reduce when it is needed).
spmd.mesh @tp ["tp"=4]

func.func @mlp(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
               %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
               %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x64xf32>
  %a = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
  } -> tensor<8x64xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
