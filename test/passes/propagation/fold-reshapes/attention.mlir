// RUN: spmd-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(spmd-fold-reshapes))' | FileCheck %s
// RUN: spmd-opt %s --split-input-file --spmd-partition-pipeline | spmd-opt --spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=COMM
// RUN: spmd-opt %s --split-input-file --pass-pipeline='builtin.module(spmd-propagate,spmd-partition)' | spmd-opt --spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=NOFOLD

// Attention scores as PyTorch's matmul decomposition writes them: the heads
// [b, h, t, d] flattened into the batch of a batch_matmul and unflattened
// after. Folded, the batched matmul is a generic over (b, h, t, s, d): the
// head dim is a loop of its own.
// CHECK-LABEL: func.func @scores
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%arg0, %arg1 : tensor<8x4x16x16xf32>, tensor<8x4x16x16xf32>)
// CHECK-NOT: tensor.expand_shape
// CHECK: return
//
// With q and k sharded on the heads (S(1)), the scores stay sharded: no
// collective at all.
// COMM: "totals": {
// COMM-NEXT: "count": 0,
// Without the folding the head sharding cannot pass the collapse: q and k
// are gathered.
// NOFOLD: "totals": {
// NOFOLD: "all_gather": {"count":2,
spmd.mesh @tp ["tp"=4]
func.func @scores(%q: tensor<8x4x16x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                  %k: tensor<8x4x16x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> (tensor<8x4x16x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<8x4x16x16xf32> into tensor<32x16x16xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<8x4x16x16xf32> into tensor<32x16x16xf32>
  %e = tensor.empty() : tensor<32x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x16x16xf32>) -> tensor<32x16x16xf32>
  %s = linalg.batch_matmul ins(%q3, %k3 : tensor<32x16x16xf32>, tensor<32x16x16xf32>)
                           outs(%f : tensor<32x16x16xf32>) -> tensor<32x16x16xf32>
  %s4 = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [8, 4, 16, 16] : tensor<32x16x16xf32> into tensor<8x4x16x16xf32>
  return %s4 : tensor<8x4x16x16xf32>
}

// -----

// A layout written on the op is the user's: that op is not folded.
// CHECK-LABEL: func.func @annotated
// CHECK: tensor.collapse_shape
// CHECK: linalg.batch_matmul
// COMM: "totals": {
spmd.mesh @tp ["tp"=4]
func.func @annotated(%q: tensor<8x4x16x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
                     %k: tensor<8x4x16x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>})
    -> (tensor<8x4x16x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<8x4x16x16xf32> into tensor<32x16x16xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<8x4x16x16xf32> into tensor<32x16x16xf32>
  %e = tensor.empty() : tensor<32x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x16x16xf32>) -> tensor<32x16x16xf32>
  %s = linalg.batch_matmul {spmd.layout = #spmd.layout<@tp, [S(0)]>}
                           ins(%q3, %k3 : tensor<32x16x16xf32>, tensor<32x16x16xf32>)
                           outs(%f : tensor<32x16x16xf32>) -> tensor<32x16x16xf32>
  %s4 = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [8, 4, 16, 16] : tensor<32x16x16xf32> into tensor<8x4x16x16xf32>
  return %s4 : tensor<8x4x16x16xf32>
}
