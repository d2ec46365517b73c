// RUN: spmd-opt %s --spmd-compile | FileCheck %s
// RUN: spmd-run %s --entry linear3d --seed 1 --check | FileCheck %s --check-prefix=EXEC
// RUN: spmd-run %s --entry heads --seed 2 --check | FileCheck %s --check-prefix=EXEC
// RUN: spmd-run %s --entry scores --seed 3 --check | FileCheck %s --check-prefix=EXEC
// RUN: spmd-run %s --entry strided --seed 4 --check | FileCheck %s --check-prefix=EXEC
// RUN: spmd-run %s --entry member --seed 5 --check | FileCheck %s --check-prefix=EXEC
// EXEC: check passed

// Contractions written as linalg.generic (what spmd-fold-reshapes makes of
// linear layers on [b, t, d] activations and of attention's grouped heads)
// become BLAS GEMMs on contiguous reshaped views of their buffers, when
// the loop groups (batch, m, n, k) are contiguous in every operand.

#lhs3 = affine_map<(b, t, n, k) -> (b, t, k)>
#w = affine_map<(b, t, n, k) -> (k, n)>
#out3 = affine_map<(b, t, n, k) -> (b, t, n)>

// m = (b, t): one 2-D GEMM on [32, 16] x [16, 8].
// CHECK-LABEL: func.func @linear3d(
// CHECK: %[[A:.*]] = memref.collapse_shape %arg0 {{\[}}[0, 1], [2]] : memref<4x8x16xf32> into memref<32x16xf32>
// CHECK: %[[C:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : memref<4x8x8xf32> into memref<32x8xf32>
// CHECK: spmd.plan_gemm %[[A]], %arg1, %[[C]] beta 0
func.func @linear3d(%x: tensor<4x8x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %y = linalg.generic {indexing_maps = [#lhs3, #w, #out3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x8x16xf32>, tensor<16x8xf32>) outs(%z : tensor<4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8x8xf32>
  return %y : tensor<4x8x8xf32>
}

// Batch = (b, h), k = (d): q k^T per head as a batched GEMM with B
// transposed, batch 2*4.
#q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
// CHECK-LABEL: func.func @heads(
// CHECK-DAG: memref.collapse_shape %arg0 {{\[}}[0, 1], [2], [3]] : memref<2x4x8x16xf32> into memref<8x8x16xf32>
// CHECK-DAG: memref.collapse_shape %arg1 {{\[}}[0, 1], [2], [3]] : memref<2x4x8x16xf32> into memref<8x8x16xf32>
// CHECK: spmd.plan_gemm {{.*}} transpose_b beta 0 : memref<8x8x16xf32>, memref<8x8x16xf32>, memref<8x8x8xf32>
func.func @heads(%q: tensor<2x4x8x16xf32>, %kk: tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) outs(%z : tensor<2x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// k = (t, d) collapsed: x^T-style weight gradient with A transposed,
// dW[k, n] = sum over (b, t) of x[b, t, k] * dy[b, t, n].
#xa = affine_map<(k, n, b, t) -> (b, t, k)>
#dy = affine_map<(k, n, b, t) -> (b, t, n)>
#dw = affine_map<(k, n, b, t) -> (k, n)>
// CHECK-LABEL: func.func @scores(
// CHECK: spmd.plan_gemm {{.*}} transpose_a beta 0 : memref<32x16xf32>, memref<32x8xf32>, memref<16x8xf32>
func.func @scores(%x: tensor<4x8x16xf32>, %g: tensor<4x8x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.generic {indexing_maps = [#xa, #dy, #dw], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %g : tensor<4x8x16xf32>, tensor<4x8x8xf32>) outs(%z : tensor<16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

// The batch loop between m and k in A: no row-major view, so a kernel.
#sa = affine_map<(b, m, n, k) -> (m, b, k)>
#sb = affine_map<(b, m, n, k) -> (b, k, n)>
#sc = affine_map<(b, m, n, k) -> (b, m, n)>
// CHECK-LABEL: func.func @strided(
// CHECK-NOT: spmd.plan_gemm
// CHECK: spmd.plan_kernel
// CHECK-NOT: spmd.plan_gemm
// CHECK: return
func.func @strided(%a: tensor<8x2x16xf32>, %b: tensor<2x16x8xf32>) -> tensor<2x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y = linalg.generic {indexing_maps = [#sa, #sb, #sc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x2x16xf32>, tensor<2x16x8xf32>) outs(%z : tensor<2x8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %c: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}

// A weight read as a strided view (a member of a bucketed all_gather's
// rank-major result): its k = (h, d) run does not collapse in place, so it
// is copied into a buffer of its own and the contraction stays a GEMM.
#ma = affine_map<(b, s, n, h, d) -> (b, s, h, d)>
#mw = affine_map<(b, s, n, h, d) -> (h, d, n)>
#mc = affine_map<(b, s, n, h, d) -> (b, s, n)>
// CHECK-LABEL: func.func @member(
// CHECK: spmd.plan_kernel @[[K:[a-z_0-9]+]](%arg1, %[[COPY:.*]]) :
// CHECK: %[[B:.*]] = memref.collapse_shape %[[COPY]] {{\[}}[0, 1], [2]] : memref<4x4x8xf32> into memref<16x8xf32>
// CHECK: spmd.plan_gemm %{{.*}}, %[[B]], %{{.*}} beta 0
// CHECK: func.func @[[K]](
// CHECK: memref.subview %arg0[0, 32] [4, 32] [1, 1]
// CHECK: linalg.copy
func.func @member(%x: tensor<2x3x4x4xf32>, %big: tensor<4x96xf32>) -> tensor<2x3x8xf32> {
  %zero = arith.constant 0.0 : f32
  %slice = tensor.extract_slice %big[0, 32] [4, 32] [1, 1] : tensor<4x96xf32> to tensor<4x32xf32>
  %w = tensor.expand_shape %slice [[0], [1, 2]] output_shape [4, 4, 8] : tensor<4x32xf32> into tensor<4x4x8xf32>
  %e = tensor.empty() : tensor<2x3x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %y = linalg.generic {indexing_maps = [#ma, #mw, #mc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<2x3x4x4xf32>, tensor<4x4x8xf32>) outs(%z : tensor<2x3x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}
