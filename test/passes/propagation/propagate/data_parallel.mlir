// RUN: spmd-opt %s --split-input-file --spmd-propagate -verify-diagnostics | FileCheck %s

// Data parallel: the batch is S(0), the weights R. The forward pass stays
// S(0) on the batch dim everywhere, with no reshard.

spmd.mesh @dp ["dp"=4]

// CHECK-LABEL: func.func @dp_forward
// CHECK-NOT: spmd.constrain
// CHECK: tensor.empty() {spmd.layout = #spmd.layout<@dp, [S(0)]>} : tensor<16x32xf32>
// CHECK: linalg.fill {spmd.layout = #spmd.layout<@dp, [S(0)]>}
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@dp, [S(0)]>}
// CHECK: linalg.map {{.*}} {spmd.layout = #spmd.layout<@dp, [S(0)]>}
// CHECK: tensor.empty() {spmd.layout = #spmd.layout<@dp, [S(0)]>} : tensor<16x4xf32>
// CHECK: linalg.fill {spmd.layout = #spmd.layout<@dp, [S(0)]>}
// CHECK: %[[Y:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@dp, [S(0)]>}
// CHECK-NOT: spmd.constrain
// CHECK: return %[[Y]]
func.func @dp_forward(%x: tensor<16x8xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                      %w1: tensor<8x32xf32> {spmd.layout = #spmd.layout<@dp, [R]>},
                      %w2: tensor<32x4xf32> {spmd.layout = #spmd.layout<@dp, [R]>})
    -> (tensor<16x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<16x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<16x8xf32>, tensor<8x32xf32>)
                     outs(%f1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %r = linalg.map ins(%h : tensor<16x32xf32>) outs(%e2 : tensor<16x32xf32>)
    (%in: f32, %out: f32) {
      %m = arith.maximumf %in, %zero : f32
      linalg.yield %m : f32
    }
  %e3 = tensor.empty() : tensor<16x4xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<16x4xf32>) -> tensor<16x4xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<16x32xf32>, tensor<32x4xf32>)
                     outs(%f3 : tensor<16x4xf32>) -> tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}

// -----

// Hand-written backward of y = x @ w: dw = x^T @ dy contracts over the batch,
// so it is P(sum) and the only reshard is P(sum) -> R for the declared R
// gradient; dx = dy @ w^T stays S(0) with no reshard. The loss gradient dy
// is unannotated and gets S(0) from propagation.

spmd.mesh @dp ["dp"=4]

#xb = affine_map<(b, i, j) -> (b, i)>
#yb = affine_map<(b, i, j) -> (b, j)>
#wij = affine_map<(b, i, j) -> (i, j)>

// CHECK-LABEL: func.func @dp_backward
// CHECK-SAME: %arg2: tensor<16x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>}
// CHECK-NOT: spmd.constrain
// CHECK: tensor.empty() {spmd.layout = #spmd.layout<@dp, [P(sum)]>} : tensor<8x4xf32>
// CHECK: linalg.fill {spmd.layout = #spmd.layout<@dp, [P(sum)]>}
// CHECK: %[[DW:.*]] = linalg.generic {{.*}} attrs = {spmd.layout = #spmd.layout<@dp, [P(sum)]>}
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} attrs = {spmd.layout = #spmd.layout<@dp, [S(0)]>}
// CHECK: %[[C:.*]] = spmd.constrain %[[DW]] to #spmd.layout<@dp, [R]> : tensor<8x4xf32>
// CHECK-NOT: spmd.constrain
// CHECK: return %[[C]], %[[DX]]
func.func @dp_backward(%x: tensor<16x8xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                       %w: tensor<8x4xf32> {spmd.layout = #spmd.layout<@dp, [R]>},
                       %dy: tensor<16x4xf32>)
    -> (tensor<8x4xf32> {spmd.layout = #spmd.layout<@dp, [R]>},
        tensor<16x8xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %dw = linalg.generic {indexing_maps = [#xb, #yb, #wij],
                        iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %dy : tensor<16x8xf32>, tensor<16x4xf32>) outs(%f : tensor<8x4xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %ex = tensor.empty() : tensor<16x8xf32>
  %fx = linalg.fill ins(%zero : f32) outs(%ex : tensor<16x8xf32>) -> tensor<16x8xf32>
  %dx = linalg.generic {indexing_maps = [#yb, #wij, #xb],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %w : tensor<16x4xf32>, tensor<8x4xf32>) outs(%fx : tensor<16x8xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<16x8xf32>
  return %dw, %dx : tensor<8x4xf32>, tensor<16x8xf32>
}

// -----

// A weight update: w - lr * dw is linear in dw, so the update keeps P(sum)
// (w enters through a local R -> P) and the one reduction is of the new
// weight, declared R: no more bytes than reducing the gradient first.

spmd.mesh @dp ["dp"=4]

#xb = affine_map<(b, i, j) -> (b, i)>
#yb = affine_map<(b, i, j) -> (b, j)>
#wij = affine_map<(b, i, j) -> (i, j)>

// CHECK-LABEL: func.func @dp_step
// CHECK: %[[DW:.*]] = linalg.generic {{.*}} attrs = {spmd.layout = #spmd.layout<@dp, [P(sum)]>}
// CHECK: %[[LR:.*]] = arith.constant {spmd.layout = #spmd.layout<@dp, [R]>} dense<1.000000e-01>
// CHECK: %[[G:.*]] = arith.mulf %[[LR]], %[[DW]] {spmd.layout = #spmd.layout<@dp, [P(sum)]>}
// CHECK: %[[WP:.*]] = spmd.constrain %arg1 to #spmd.layout<@dp, [P(sum)]>
// CHECK: %[[NW:.*]] = arith.subf %[[WP]], %[[G]] {spmd.layout = #spmd.layout<@dp, [P(sum)]>}
// CHECK: %[[C:.*]] = spmd.constrain %[[NW]] to #spmd.layout<@dp, [R]>
// CHECK: return %[[C]]
func.func @dp_step(%x: tensor<16x8xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                   %w: tensor<8x4xf32> {spmd.layout = #spmd.layout<@dp, [R]>},
                   %dy: tensor<16x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>})
    -> (tensor<8x4xf32> {spmd.layout = #spmd.layout<@dp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %dw = linalg.generic {indexing_maps = [#xb, #yb, #wij],
                        iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %dy : tensor<16x8xf32>, tensor<16x4xf32>) outs(%f : tensor<8x4xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %lr = arith.constant dense<0.1> : tensor<8x4xf32>
  %g = arith.mulf %lr, %dw : tensor<8x4xf32>
  %nw = arith.subf %w, %g : tensor<8x4xf32>
  return %nw : tensor<8x4xf32>
}

// -----

// FSDP style: the weight is stored S(0) on dp and gathered (user constrain)
// before use; its gradient, a sum over the batch, is P(sum) and reduced
// straight into the storage layout S(0) (a reduce_scatter).

spmd.mesh @dp ["dp"=4]

#xb = affine_map<(b, i, j) -> (b, i)>
#yb = affine_map<(b, i, j) -> (b, j)>
#wij = affine_map<(b, i, j) -> (i, j)>

// CHECK-LABEL: func.func @fsdp
// CHECK: %[[W:.*]] = spmd.constrain %arg1 to #spmd.layout<@dp, [R]>
// CHECK-NOT: spmd.constrain
// CHECK: %[[Y:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@dp, [S(0)]>} ins(%arg0, %[[W]]
// CHECK: %[[DW:.*]] = linalg.generic {{.*}} attrs = {spmd.layout = #spmd.layout<@dp, [P(sum)]>}
// CHECK: %[[RS:.*]] = spmd.constrain %[[DW]] to #spmd.layout<@dp, [S(0)]>
// CHECK-NOT: spmd.constrain
// CHECK: return %[[Y]], %[[RS]]
func.func @fsdp(%x: tensor<16x8xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                %w: tensor<8x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                %dy: tensor<16x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>})
    -> (tensor<16x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
        tensor<8x4xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %wg = spmd.constrain %w to #spmd.layout<@dp, [R]> : tensor<8x4xf32>
  %e = tensor.empty() : tensor<16x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x4xf32>) -> tensor<16x4xf32>
  %y = linalg.matmul ins(%x, %wg : tensor<16x8xf32>, tensor<8x4xf32>)
                     outs(%f : tensor<16x4xf32>) -> tensor<16x4xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %dw = linalg.generic {indexing_maps = [#xb, #yb, #wij],
                        iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %dy : tensor<16x8xf32>, tensor<16x4xf32>) outs(%f2 : tensor<8x4xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %y, %dw : tensor<16x4xf32>, tensor<8x4xf32>
}

// -----

// Identical reshards of one value are made once: a partial gradient used by
// two consumers that need it replicated is reduced once.

spmd.mesh @dp ["dp"=4]

// CHECK-LABEL: func.func @shared_reshard
// CHECK: %[[R:.*]] = spmd.constrain %arg0 to #spmd.layout<@dp, [R]>
// CHECK: math.exp %[[R]]
// CHECK: math.tanh %[[R]]
// CHECK-NOT: spmd.constrain
func.func @shared_reshard(%g: tensor<8xf32> {spmd.layout = #spmd.layout<@dp, [P(sum)]>})
    -> (tensor<8xf32>, tensor<8xf32>) {
  %a = math.exp %g : tensor<8xf32>
  %b = math.tanh %g : tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}
