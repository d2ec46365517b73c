// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-fold-reshapes{max-rewrites=1}))' 2>&1 | FileCheck %s --check-prefix=TIGHT
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-fold-reshapes))' 2>&1 | FileCheck %s --check-prefix=FULL
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-fold-reshapes{max-rewrites=1}),spmd-propagate,spmd-partition)' | FileCheck %s --check-prefix=PART

// spmd-fold-reshapes does bounded work: with a budget too small for the
// program it stops, says so, and leaves valid IR that the rest of the
// pipeline still partitions. GQA written as expand + reshape (the key
// heads repeated) feeding attention's batched matmul.
// TIGHT: remark: spmd-fold-reshapes stopped before a fixpoint (budget of 1 rewrites or 8 sweeps)
// TIGHT-LABEL: func.func @gqa_scores
// TIGHT: return
// FULL-NOT: remark
// FULL-LABEL: func.func @gqa_scores
// FULL-NOT: linalg.batch_matmul
// FULL: linalg.generic
// FULL-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]
// FULL: return
// PART-LABEL: func.func @gqa_scores
// PART: return
spmd.mesh @tp ["tp"=2]
func.func @gqa_scores(%q: tensor<2x4x8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                      %kt: tensor<2x2x16x8xf32>)
    -> tensor<2x4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e5 = tensor.empty() : tensor<2x2x2x16x8xf32>
  %kb = linalg.broadcast ins(%kt : tensor<2x2x16x8xf32>) outs(%e5 : tensor<2x2x2x16x8xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<2x2x2x16x8xf32> into tensor<2x4x16x8xf32>
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x8x16xf32> into tensor<8x8x16xf32>
  %k3 = tensor.collapse_shape %kr [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %e = tensor.empty() : tensor<8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %s = linalg.batch_matmul ins(%q3, %k3 : tensor<8x8x16xf32>, tensor<8x16x8xf32>)
                           outs(%f : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %s4 = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [2, 4, 8, 8] : tensor<8x8x8xf32> into tensor<2x4x8x8xf32>
  return %s4 : tensor<2x4x8x8xf32>
}
