// RUN: spmd-opt %s --split-input-file --spmd-propagate -verify-diagnostics | FileCheck %s
// Running the pass on its own output changes nothing.
// RUN: spmd-opt %s --split-input-file --spmd-propagate | spmd-opt --split-input-file --spmd-propagate -verify-diagnostics | FileCheck %s

// Megatron MLP forward on a 1-D mesh of 4: W1 column-split, W2 row-split.
// The hidden activation is S(1), relu keeps it, the second matmul gives
// P(sum), and the only reshard is P(sum) -> R before the return.

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @mlp_forward
func.func @mlp_forward(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
                       %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                       %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  // CHECK-NOT: spmd.constrain
  // CHECK: tensor.empty() {spmd.layout = #spmd.layout<@tp, [S(1)]>} : tensor<8x64xf32>
  // CHECK: linalg.fill {spmd.layout = #spmd.layout<@tp, [S(1)]>}
  // CHECK: %[[H:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@tp, [S(1)]>} ins(%arg0, %arg1
  // CHECK: tensor.empty() {spmd.layout = #spmd.layout<@tp, [S(1)]>} : tensor<8x64xf32>
  // CHECK: %[[R:.*]] = linalg.map ins(%[[H]] : {{.*}}) outs({{.*}}) {spmd.layout = #spmd.layout<@tp, [S(1)]>}
  // The second init is a zero fill: it is made P(sum) directly.
  // CHECK: tensor.empty() {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<8x16xf32>
  // CHECK: linalg.fill {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
  // CHECK: %[[Y:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>} ins(%[[R]], %arg2
  // CHECK-NEXT: %[[C:.*]] = spmd.constrain %[[Y]] to #spmd.layout<@tp, [R]> : tensor<8x16xf32>
  // CHECK-NEXT: return %[[C]]
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x64xf32>
  %r = linalg.map ins(%h : tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>)
    (%in: f32, %out: f32) {
      %m = arith.maximumf %in, %zero : f32
      linalg.yield %m : f32
    }
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// The same block with the result declared P(sum): no reshard at all.

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @mlp_forward_partial
// CHECK-SAME: -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>})
// CHECK-NOT: spmd.constrain
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK: linalg.generic {{.*}} {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK: %[[Y:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK-NOT: spmd.constrain
// CHECK: return %[[Y]]
#id = affine_map<(i, j) -> (i, j)>
func.func @mlp_forward_partial(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
                               %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                               %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.maximumf %in, %zero : f32
      linalg.yield %m : f32
  } -> tensor<8x64xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A residual add after the block keeps the partial (R -> P of the residual is
// local), so the one all-reduce moves past it; an unannotated result takes
// the layout it is given.

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @mlp_residual
// CHECK-SAME: -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>})
// CHECK: %[[Y:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK: %[[XP:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [P(sum)]>
// CHECK: %[[S:.*]] = arith.addf %[[XP]], %[[Y]] {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK-NOT: spmd.constrain
// CHECK: return %[[S]]
func.func @mlp_residual(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
                        %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                        %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %s = arith.addf %x, %y : tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}

// -----

// 2-D mesh dp x tp: data parallel on dp, Megatron on tp. The activations are
// [S(0), S(1)], the second matmul [S(0), P(sum)], and the one reshard reduces
// over tp only.

spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @mlp_2d
// CHECK-NOT: spmd.constrain
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@mesh, [S(0), S(1)]>}
// CHECK: linalg.map {{.*}} {spmd.layout = #spmd.layout<@mesh, [S(0), S(1)]>}
// CHECK: linalg.fill {spmd.layout = #spmd.layout<@mesh, [S(0), P(sum)]>}
// CHECK: %[[Y:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@mesh, [S(0), P(sum)]>}
// CHECK-NEXT: %[[C:.*]] = spmd.constrain %[[Y]] to #spmd.layout<@mesh, [S(0), R]>
// CHECK-NEXT: return %[[C]]
func.func @mlp_2d(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>},
                  %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>},
                  %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(0)]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x64xf32>
  %r = linalg.map { math.exp } ins(%h : tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>)
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// Sequence parallel: activations are S(0) on the token dim between blocks.
// The user's constrains are the reshard points (all_gather in, reduce_scatter
// out); propagation adds none and makes the second matmul P(sum) right before
// the S(0) constrain.

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @mlp_sequence_parallel
// CHECK: %[[G:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK-NOT: spmd.constrain
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@tp, [S(1)]>} ins(%[[G]], %arg1
// CHECK-NOT: spmd.constrain
// CHECK: %[[Y:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK-NEXT: %[[S:.*]] = spmd.constrain %[[Y]] to #spmd.layout<@tp, [S(0)]>
// CHECK-NEXT: return %[[S]]
func.func @mlp_sequence_parallel(
    %x: tensor<32x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
    %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
    %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<32x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %g = spmd.constrain %x to #spmd.layout<@tp, [R]> : tensor<32x16xf32>
  %e1 = tensor.empty() : tensor<32x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %h = linalg.matmul ins(%g, %w1 : tensor<32x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %e3 = tensor.empty() : tensor<32x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<32x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %s = spmd.constrain %y to #spmd.layout<@tp, [S(0)]> : tensor<32x16xf32>
  return %s : tensor<32x16xf32>
}

// -----

// A Megatron training step with a hand-written backward. dy arrives R. The
// backward activations follow the forward splits (dr, dh S(1)); the weight
// gradients come out in their weights' layouts (dW1 S(1), dW2 S(0)) with no
// communication; the input gradient dx contracts over the split hidden dim,
// so it is P(sum): the step has two reshards (y and dx to R), one of them
// only because dx is returned.

spmd.mesh @tp ["tp"=4]

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#km = affine_map<(m, n, k) -> (k, m)>
#kn = affine_map<(m, n, k) -> (k, n)>
#id = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @mlp_step
// CHECK-SAME: -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>}, tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}, tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}, tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>})
// CHECK-NOT: spmd.constrain
// CHECK: %[[H:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK: %[[R:.*]] = linalg.map {{.*}} {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK: %[[Y:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// dr = dy @ W2^T
// CHECK: %[[DR:.*]] = linalg.generic {{.*}} ins(%arg3, %arg2 {{.*}} attrs = {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// dh = dr * (h > 0)
// CHECK: %[[DH:.*]] = linalg.generic {{.*}} ins(%[[DR]], %[[H]] {{.*}} attrs = {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// dW2 = r^T @ dy, dW1 = x^T @ dh
// CHECK: %[[DW2:.*]] = linalg.generic {{.*}} ins(%[[R]], %arg3 {{.*}} attrs = {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// CHECK: %[[DW1:.*]] = linalg.generic {{.*}} ins(%arg0, %[[DH]] {{.*}} attrs = {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// dx = dh @ W1^T
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} ins(%[[DH]], %arg1 {{.*}} attrs = {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK-NOT: spmd.constrain
// CHECK: %[[YR:.*]] = spmd.constrain %[[Y]] to #spmd.layout<@tp, [R]>
// CHECK-NEXT: %[[DXR:.*]] = spmd.constrain %[[DX]] to #spmd.layout<@tp, [R]>
// CHECK-NEXT: return %[[YR]], %[[DW1]], %[[DW2]], %[[DXR]]
func.func @mlp_step(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
                    %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                    %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                    %dy: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
        tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
        tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
        tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %r = linalg.map ins(%h : tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>)
    (%in: f32, %out: f32) {
      %m = arith.maximumf %in, %zero : f32
      linalg.yield %m : f32
    }
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // dr[m, n] = sum_k dy[m, k] * w2[n, k]
  %dr = linalg.generic {indexing_maps = [#mk, #nk, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %w2 : tensor<8x16xf32>, tensor<64x16xf32>) outs(%f1 : tensor<8x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  // dh = h > 0 ? dr : 0
  %dh = linalg.generic {indexing_maps = [#id, #id, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%dr, %h : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>) {
    ^bb0(%g: f32, %v: f32, %o: f32):
      %pos = arith.cmpf ogt, %v, %zero : f32
      %s = arith.select %pos, %g, %zero : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  // dw2[m, n] = sum_k r[k, m] * dy[k, n]
  %e4 = tensor.empty() : tensor<64x16xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %dw2 = linalg.generic {indexing_maps = [#km, #kn, #mn],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%r, %dy : tensor<8x64xf32>, tensor<8x16xf32>) outs(%f4 : tensor<64x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<64x16xf32>
  // dw1[m, n] = sum_k x[k, m] * dh[k, n]
  %e5 = tensor.empty() : tensor<16x64xf32>
  %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %dw1 = linalg.generic {indexing_maps = [#km, #kn, #mn],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %dh : tensor<8x16xf32>, tensor<8x64xf32>) outs(%f5 : tensor<16x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<16x64xf32>
  // dx[m, n] = sum_k dh[m, k] * w1[n, k]
  %dx = linalg.generic {indexing_maps = [#mk, #nk, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dh, %w1 : tensor<8x64xf32>, tensor<16x64xf32>) outs(%f3 : tensor<8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %y, %dw1, %dw2, %dx : tensor<8x16xf32>, tensor<16x64xf32>, tensor<64x16xf32>, tensor<8x16xf32>
}

// -----

// The same step on a 2-D mesh dp x tp, the batch split on dp as well.
// Activations are [S(0), S(1)]; the weight gradients sum over the batch, so
// they are P(sum) on dp in their weights' tp layout and are reduced over dp
// only; y and dx are reduced over tp only.

spmd.mesh @mesh ["dp"=2, "tp"=4]

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#km = affine_map<(m, n, k) -> (k, m)>
#kn = affine_map<(m, n, k) -> (k, n)>
#id = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @mlp_step_2d
// CHECK-NOT: spmd.constrain
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@mesh, [S(0), S(1)]>}
// CHECK: %[[Y:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@mesh, [S(0), P(sum)]>}
// CHECK: linalg.generic {{.*}} attrs = {spmd.layout = #spmd.layout<@mesh, [S(0), S(1)]>}
// CHECK: linalg.generic {{.*}} attrs = {spmd.layout = #spmd.layout<@mesh, [S(0), S(1)]>}
// CHECK: %[[DW2:.*]] = linalg.generic {{.*}} attrs = {spmd.layout = #spmd.layout<@mesh, [P(sum), S(0)]>}
// CHECK: %[[DW1:.*]] = linalg.generic {{.*}} attrs = {spmd.layout = #spmd.layout<@mesh, [P(sum), S(1)]>}
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} attrs = {spmd.layout = #spmd.layout<@mesh, [S(0), P(sum)]>}
// CHECK-NOT: spmd.constrain
// CHECK: %[[YR:.*]] = spmd.constrain %[[Y]] to #spmd.layout<@mesh, [S(0), R]>
// CHECK-NEXT: %[[DW1R:.*]] = spmd.constrain %[[DW1]] to #spmd.layout<@mesh, [R, S(1)]>
// CHECK-NEXT: %[[DW2R:.*]] = spmd.constrain %[[DW2]] to #spmd.layout<@mesh, [R, S(0)]>
// CHECK-NEXT: %[[DXR:.*]] = spmd.constrain %[[DX]] to #spmd.layout<@mesh, [S(0), R]>
// CHECK-NEXT: return %[[YR]], %[[DW1R]], %[[DW2R]], %[[DXR]]
func.func @mlp_step_2d(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>},
                    %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>},
                    %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(0)]>},
                    %dy: tensor<8x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>},
        tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>},
        tensor<64x16xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(0)]>},
        tensor<8x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %r = linalg.map ins(%h : tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>)
    (%in: f32, %out: f32) {
      %m = arith.maximumf %in, %zero : f32
      linalg.yield %m : f32
    }
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // dr[m, n] = sum_k dy[m, k] * w2[n, k]
  %dr = linalg.generic {indexing_maps = [#mk, #nk, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %w2 : tensor<8x16xf32>, tensor<64x16xf32>) outs(%f1 : tensor<8x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  // dh = h > 0 ? dr : 0
  %dh = linalg.generic {indexing_maps = [#id, #id, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%dr, %h : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>) {
    ^bb0(%g: f32, %v: f32, %o: f32):
      %pos = arith.cmpf ogt, %v, %zero : f32
      %s = arith.select %pos, %g, %zero : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  // dw2[m, n] = sum_k r[k, m] * dy[k, n]
  %e4 = tensor.empty() : tensor<64x16xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %dw2 = linalg.generic {indexing_maps = [#km, #kn, #mn],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%r, %dy : tensor<8x64xf32>, tensor<8x16xf32>) outs(%f4 : tensor<64x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<64x16xf32>
  // dw1[m, n] = sum_k x[k, m] * dh[k, n]
  %e5 = tensor.empty() : tensor<16x64xf32>
  %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %dw1 = linalg.generic {indexing_maps = [#km, #kn, #mn],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %dh : tensor<8x16xf32>, tensor<8x64xf32>) outs(%f5 : tensor<16x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<16x64xf32>
  // dx[m, n] = sum_k dh[m, k] * w1[n, k]
  %dx = linalg.generic {indexing_maps = [#mk, #nk, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dh, %w1 : tensor<8x64xf32>, tensor<16x64xf32>) outs(%f3 : tensor<8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %y, %dw1, %dw2, %dx : tensor<8x16xf32>, tensor<16x64xf32>, tensor<64x16xf32>, tensor<8x16xf32>
}
