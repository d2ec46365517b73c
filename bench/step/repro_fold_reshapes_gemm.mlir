// Minimal reproducer: after spmd-fold-reshapes a linear layer on a 3-D
// activation is no longer a GEMM in the plan.
//
// The frontend writes nn.Linear on [b, t, d] as collapse [b*t, d] ->
// linalg.matmul -> expand [b, t, n]. spmd-partition-pipeline's first pass,
// spmd-fold-reshapes (upstream fold-reshape-by-expansion), folds the reshapes
// into the matmul, which becomes a linalg.generic with loops (b, t, n, k).
// spmd-outline-plan's matchGemm only takes linalg.matmul/batch_matmul, so the
// contraction becomes a plan_kernel: a scalar loop nest from
// convert-linalg-to-loops instead of a BLAS call. Results stay correct
// (spmd-run --check passes), the speed does not: in bench/step's transformer
// block all 24 contractions of the step run this way (about 30x slower).
//
//   spmd-opt repro_fold_reshapes_gemm.mlir --spmd-compile=partition=off \
//     | grep -c spmd.plan_gemm                                      # 1
//   spmd-opt repro_fold_reshapes_gemm.mlir --spmd-compile \
//     | grep -c spmd.plan_gemm                                      # 0
//   spmd-opt repro_fold_reshapes_gemm.mlir \
//     --pass-pipeline='builtin.module(func.func(spmd-fold-reshapes))'
//     # -> linalg.generic, maps (d0,d1,d3) x (d3,d2) -> (d0,d1,d2)
//   spmd-run repro_fold_reshapes_gemm.mlir --seed 1 --check   # passes
spmd.mesh @mesh ["tp"=4]
func.func @linear3d(%x: tensor<4x8x16xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
                    %w: tensor<16x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>})
    -> (tensor<4x8x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(2)]>}) {
  %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<4x8x16xf32> into tensor<32x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<32x32xf32>) -> tensor<32x32xf32>
  %y = linalg.matmul ins(%x2, %w : tensor<32x16xf32>, tensor<16x32xf32>)
                     outs(%init : tensor<32x32xf32>) -> tensor<32x32xf32>
  %y3 = tensor.expand_shape %y [[0, 1], [2]] output_shape [4, 8, 32] : tensor<32x32xf32> into tensor<4x8x32xf32>
  return %y3 : tensor<4x8x32xf32>
}
