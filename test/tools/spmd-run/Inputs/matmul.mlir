// A GEMM (OpenBLAS on the CPU) on 2 ranks: rows of x sharded.
spmd.mesh @mesh ["dp"=2]
func.func @f(%x: tensor<64x48xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
             %w: tensor<48x32xf32>)
    -> (tensor<64x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = linalg.matmul ins(%x, %w : tensor<64x48xf32>, tensor<48x32xf32>)
                     outs(%z : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}
