// RUN: spmd-opt %s --spmd-fuse-elementwise | FileCheck %s

// Scalar kernels (0-d generics) that read only arguments and constants are
// merged, one multi-result generic per dependency level, at the top of the
// function: each parameter's AdamW step counter t + 1 (level 0) and its
// bias correction b1^(t + 1) (level 1), one kernel launch each before. A
// scalar kernel that reads a computed value (the loss, from a reduction)
// stays where it is.

// CHECK-LABEL: func.func @step(
// CHECK: %[[T:.*]]:2 = linalg.generic {{.*}} iterator_types = []} ins(%arg0, %arg1 : tensor<f32>, tensor<f32>)
// CHECK-COUNT-2: arith.addf
// CHECK: linalg.yield {{.*}}, {{.*}} : f32, f32
// CHECK: %[[B:.*]]:2 = linalg.generic {{.*}} iterator_types = []} ins(%[[T]]#0, %[[T]]#1 : tensor<f32>, tensor<f32>)
// CHECK-COUNT-2: math.powf
// CHECK: linalg.generic {{.*}} ins(%arg2, %[[B]]#0 :
// CHECK: linalg.generic {{.*}} ins(%arg3, %[[B]]#1 :
// CHECK: %[[L:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]}
// CHECK: linalg.generic {{.*}} iterator_types = []} ins(%[[L]] : tensor<f32>)
// CHECK: return %[[T]]#0, %[[T]]#1,
#s = affine_map<() -> ()>
#m = affine_map<(d0) -> (d0)>
#b = affine_map<(d0) -> ()>
func.func @step(%s0: tensor<f32>, %s1: tensor<f32>, %p0: tensor<8xf32>, %p1: tensor<8xf32>, %x: tensor<8xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>) {
  %one = arith.constant 1.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %n0 = linalg.generic {indexing_maps = [#s, #s], iterator_types = []} ins(%s0 : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %one : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<f32>
  %c0 = linalg.generic {indexing_maps = [#s, #s], iterator_types = []} ins(%n0 : tensor<f32>) outs(%e1 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.9 : f32
    %r = math.powf %c, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e2 = tensor.empty() : tensor<8xf32>
  %u0 = linalg.generic {indexing_maps = [#m, #b, #m], iterator_types = ["parallel"]} ins(%p0, %c0 : tensor<8xf32>, tensor<f32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e3 = tensor.empty() : tensor<f32>
  %n1 = linalg.generic {indexing_maps = [#s, #s], iterator_types = []} ins(%s1 : tensor<f32>) outs(%e3 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %one : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e4 = tensor.empty() : tensor<f32>
  %c1 = linalg.generic {indexing_maps = [#s, #s], iterator_types = []} ins(%n1 : tensor<f32>) outs(%e4 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.9 : f32
    %r = math.powf %c, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e5 = tensor.empty() : tensor<8xf32>
  %u1 = linalg.generic {indexing_maps = [#m, #b, #m], iterator_types = ["parallel"]} ins(%p1, %c1 : tensor<8xf32>, tensor<f32>) outs(%e5 : tensor<8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %zero = arith.constant 0.0 : f32
  %e7 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e7 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#m, #b], iterator_types = ["reduction"]} ins(%x : tensor<8xf32>) outs(%z : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e6 = tensor.empty() : tensor<f32>
  %l = linalg.generic {indexing_maps = [#s, #s], iterator_types = []} ins(%loss : tensor<f32>) outs(%e6 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %n0, %n1, %u0, %u1, %l : tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>
}
