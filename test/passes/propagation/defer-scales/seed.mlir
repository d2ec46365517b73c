// RUN: spmd-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(spmd-defer-scales))' | FileCheck %s

// A mean loss's backward seed, -1/count with count a sum over the batch,
// scales the whole backward. The backward (dz, its transposed contraction
// dw) is computed from 1 instead; dw is scaled by the seed right before the
// SGD update, the first op not linear in it. The loss itself (not linear
// in the seed's closure) is untouched.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#scalar2 = affine_map<(i, j) -> ()>
#scalar0 = affine_map<() -> ()>

// CHECK-LABEL: func.func @sgd_step
// CHECK: %[[COUNT:.*]] = linalg.reduce
// CHECK: %[[SEED:.*]] = linalg.generic {{.*}} ins(%[[COUNT]] : tensor<f32>)
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DZ:.*]] = linalg.generic {{.*}} ins(%arg3, %[[ONE]] : tensor<8x3xf32>, tensor<f32>)
// CHECK: %[[DW:.*]] = linalg.matmul ins(%{{.*}}, %[[DZ]] :
// CHECK: %[[SCALED:.*]] = linalg.generic {{.*}} ins(%[[DW]], %[[SEED]] : tensor<4x3xf32>, tensor<f32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: linalg.yield %[[P]]
// CHECK: linalg.generic {{.*}} ins(%arg1, %[[SCALED]] : tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK: return
func.func @sgd_step(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>, %mask: tensor<8xf32>,
                    %dy: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<f32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %count = linalg.reduce ins(%mask : tensor<8xf32>) outs(%z0 : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %seed = linalg.generic {indexing_maps = [#scalar0, #scalar0], iterator_types = []}
      ins(%count : tensor<f32>) outs(%e0 : tensor<f32>) {
    ^bb0(%c: f32, %o: f32):
      %m1 = arith.constant -1.0 : f32
      %q = arith.divf %m1, %c : f32
      linalg.yield %q : f32
    } -> tensor<f32>
  %e1 = tensor.empty() : tensor<8x3xf32>
  %dz = linalg.generic {indexing_maps = [#id, #scalar2, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dy, %seed : tensor<8x3xf32>, tensor<f32>) outs(%e1 : tensor<8x3xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %p = arith.mulf %a, %b : f32
      linalg.yield %p : f32
    } -> tensor<8x3xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %xt = linalg.transpose ins(%x : tensor<8x4xf32>) outs(%e2 : tensor<4x8xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<4x3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %dw = linalg.matmul ins(%xt, %dz : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z3 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %new = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %dw : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e3 : tensor<4x3xf32>) {
    ^bb0(%a: f32, %g: f32, %o: f32):
      %lr = arith.constant 0.1 : f32
      %step = arith.mulf %lr, %g : f32
      %u = arith.subf %a, %step : f32
      linalg.yield %u : f32
    } -> tensor<4x3xf32>
  return %new, %count : tensor<4x3xf32>, tensor<f32>
}

// -----

// No contraction in the closure (the scalar only scales a returned value):
// nothing to gain, nothing changes.
#id1 = affine_map<(i) -> (i)>
#s1 = affine_map<(i) -> ()>
// CHECK-LABEL: func.func @no_backward
// CHECK-NOT: arith.constant dense<1.0
// CHECK: return
func.func @no_backward(%v: tensor<8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%v : tensor<8xf32>) outs(%z0 : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %e1 = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id1, #s1, #id1], iterator_types = ["parallel"]}
      ins(%v, %sum : tensor<8xf32>, tensor<f32>) outs(%e1 : tensor<8xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %q = arith.divf %a, %b : f32
      linalg.yield %q : f32
    } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A 16-bit backward is left alone: computed from 1 instead of -1/count, a
// summed loss's gradients could overflow f16.
#idh = affine_map<(i, j) -> (i, j)>
#scalarh = affine_map<(i, j) -> ()>
#scalarh0 = affine_map<() -> ()>
// CHECK-LABEL: func.func @half_backward
// CHECK-NOT: arith.constant dense<1.0
// CHECK: return
func.func @half_backward(%x: tensor<8x4xf16>, %mask: tensor<8xf32>,
                         %dy: tensor<8x3xf16>) -> tensor<4x3xf16> {
  %zero = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : f16
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %count = linalg.reduce ins(%mask : tensor<8xf32>) outs(%z0 : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %seed = linalg.generic {indexing_maps = [#scalarh0, #scalarh0], iterator_types = []}
      ins(%count : tensor<f32>) outs(%e0 : tensor<f32>) {
    ^bb0(%c: f32, %o: f32):
      %m1 = arith.constant -1.0 : f32
      %q = arith.divf %m1, %c : f32
      linalg.yield %q : f32
    } -> tensor<f32>
  %e1 = tensor.empty() : tensor<8x3xf16>
  %dz = linalg.generic {indexing_maps = [#idh, #scalarh, #idh], iterator_types = ["parallel", "parallel"]}
      ins(%dy, %seed : tensor<8x3xf16>, tensor<f32>) outs(%e1 : tensor<8x3xf16>) {
    ^bb0(%a: f16, %b: f32, %o: f16):
      %bh = arith.truncf %b : f32 to f16
      %p = arith.mulf %a, %bh : f16
      linalg.yield %p : f16
    } -> tensor<8x3xf16>
  %e2 = tensor.empty() : tensor<4x8xf16>
  %xt = linalg.transpose ins(%x : tensor<8x4xf16>) outs(%e2 : tensor<4x8xf16>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<4x3xf16>
  %z3 = linalg.fill ins(%zh : f16) outs(%e3 : tensor<4x3xf16>) -> tensor<4x3xf16>
  %dw = linalg.matmul ins(%xt, %dz : tensor<4x8xf16>, tensor<8x3xf16>) outs(%z3 : tensor<4x3xf16>) -> tensor<4x3xf16>
  return %dw : tensor<4x3xf16>
}

// -----

// The seed reaches the contraction only through a non-linear op (exp):
// the backward is not linear in it, nothing changes.
#idn = affine_map<(i, j) -> (i, j)>
#scalarn = affine_map<(i, j) -> ()>
#scalarn0 = affine_map<() -> ()>
// CHECK-LABEL: func.func @not_linear
// CHECK-NOT: arith.constant dense<1.0
// CHECK: return
func.func @not_linear(%x: tensor<8x4xf32>, %mask: tensor<8xf32>,
                      %dy: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %count = linalg.reduce ins(%mask : tensor<8xf32>) outs(%z0 : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %e1 = tensor.empty() : tensor<8x3xf32>
  %dz = linalg.generic {indexing_maps = [#idn, #scalarn, #idn], iterator_types = ["parallel", "parallel"]}
      ins(%dy, %count : tensor<8x3xf32>, tensor<f32>) outs(%e1 : tensor<8x3xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %p = arith.mulf %a, %b : f32
      %q = math.exp %p : f32
      linalg.yield %q : f32
    } -> tensor<8x3xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %xt = linalg.transpose ins(%x : tensor<8x4xf32>) outs(%e2 : tensor<4x8xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<4x3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %dw = linalg.matmul ins(%xt, %dz : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z3 : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %dw : tensor<4x3xf32>
}
