// RUN: spmd-opt %s --split-input-file --spmd-propagate | FileCheck %s

// A partial moves on through a linear op only while reducing its result is
// no more expensive than reducing the operand (the lookahead charges the
// result's eventual reduction): a bias gradient, the sum of a partial
// [64, 256] over its rows, stays partial and the small [256] result is
// reduced.
spmd.mesh @tp ["tp"=4]
#rows = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
// CHECK-LABEL: func.func @bias_grad
// CHECK: linalg.generic {{.*}} attrs = {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK: %[[R:.*]] = spmd.constrain %{{.*}} to #spmd.layout<@tp, [R]> : tensor<256xf32>
// CHECK: return %[[R]]
func.func @bias_grad(%dy: tensor<64x256xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>})
    -> (tensor<256xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
  %s = linalg.generic {indexing_maps = [#rows, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dy : tensor<64x256xf32>) outs(%f : tensor<256xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = arith.addf %o, %a : f32
      linalg.yield %t : f32
  } -> tensor<256xf32>
  return %s : tensor<256xf32>
}

// -----

// A layer norm's backward: the partial input gradient (the backward of a
// column-parallel matmul) feeds several consumers: the weight and bias
// gradients and a nonlinear use. Keeping it partial in each would reduce
// every [64] gradient separately (replicated norm parameters must not get
// partial gradients); it is reduced once, before all its users, and
// everything after is computed replicated.
spmd.mesh @tp ["tp"=4]
#x = affine_map<(i, j) -> (i, j)>
#w = affine_map<(i, j) -> (j)>
// CHECK-LABEL: func.func @norm_backward
// CHECK: %[[DY:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]> : tensor<128x64xf32>
// CHECK-NOT: spmd.constrain
// CHECK: return
func.func @norm_backward(%dy: tensor<128x64xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>},
                         %xhat: tensor<128x64xf32> {spmd.layout = #spmd.layout<@tp, [R]>})
    -> (tensor<64xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
        tensor<64xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
        tensor<128x64xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %dw = linalg.generic {indexing_maps = [#x, #x, #w], iterator_types = ["reduction", "parallel"]}
      ins(%dy, %xhat : tensor<128x64xf32>, tensor<128x64xf32>) outs(%f : tensor<64xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %p = arith.mulf %a, %b : f32
      %t = arith.addf %o, %p : f32
      linalg.yield %t : f32
  } -> tensor<64xf32>
  %db = linalg.generic {indexing_maps = [#x, #w], iterator_types = ["reduction", "parallel"]}
      ins(%dy : tensor<128x64xf32>) outs(%f : tensor<64xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = arith.addf %o, %a : f32
      linalg.yield %t : f32
  } -> tensor<64xf32>
  %sq = arith.mulf %dy, %dy : tensor<128x64xf32>
  return %dw, %db, %sq : tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>
}
