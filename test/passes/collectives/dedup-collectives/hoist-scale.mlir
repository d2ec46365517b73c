// RUN: spmd-opt %s --split-input-file -spmd-dedup-collectives | FileCheck %s

// A gradient scaled by the mean loss's reduced count, then reduced: the
// reduction moves before the scale, so it no longer waits for the count.
spmd.mesh @dp4 ["dp"=4]
#id = affine_map<(i, j) -> (i, j)>
#s = affine_map<(i, j) -> ()>
#s0 = affine_map<() -> ()>

// CHECK-LABEL: func.func @uniform_scale
// CHECK: %[[N:.*]] = spmd.all_reduce %arg1 on @dp4 ["dp"] sum : tensor<f32>
// CHECK: %[[INV:.*]] = linalg.generic {{.*}} ins(%[[N]] : tensor<f32>)
// CHECK: %[[R:.*]] = spmd.all_reduce %arg0 on @dp4 ["dp"] sum : tensor<4x3xf32>
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[R]], %[[INV]] : tensor<4x3xf32>, tensor<f32>)
// CHECK: arith.mulf
// CHECK: return %[[S]]
func.func @uniform_scale(%g: tensor<4x3xf32>, %count: tensor<f32>) -> tensor<4x3xf32> {
  %n = spmd.all_reduce %count on @dp4 ["dp"] sum : tensor<f32>
  %e0 = tensor.empty() : tensor<f32>
  %inv = linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []}
      ins(%n : tensor<f32>) outs(%e0 : tensor<f32>) {
    ^bb0(%c: f32, %o: f32):
      %one = arith.constant 1.0 : f32
      %q = arith.divf %one, %c : f32
      linalg.yield %q : f32
    } -> tensor<f32>
  %e = tensor.empty() : tensor<4x3xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %inv : tensor<4x3xf32>, tensor<f32>) outs(%e : tensor<4x3xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %p = arith.mulf %a, %b : f32
      linalg.yield %p : f32
    } -> tensor<4x3xf32>
  %r = spmd.all_reduce %scaled on @dp4 ["dp"] sum : tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// Not moved: a scale that differs between ranks (not reduced), and a max.
spmd.mesh @dp4 ["dp"=4]
#id = affine_map<(i, j) -> (i, j)>
#s = affine_map<(i, j) -> ()>

// CHECK-LABEL: func.func @not_uniform
// CHECK: %[[S:.*]] = linalg.generic
// CHECK: spmd.all_reduce %[[S]] on @dp4 ["dp"] sum
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: spmd.all_reduce %[[M]] on @dp4 ["dp"] max
func.func @not_uniform(%g: tensor<4x3xf32>, %c: tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %e = tensor.empty() : tensor<4x3xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %c : tensor<4x3xf32>, tensor<f32>) outs(%e : tensor<4x3xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %p = arith.mulf %a, %b : f32
      linalg.yield %p : f32
    } -> tensor<4x3xf32>
  %r = spmd.all_reduce %scaled on @dp4 ["dp"] sum : tensor<4x3xf32>
  %k = arith.constant dense<2.0> : tensor<f32>
  %m = linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %k : tensor<4x3xf32>, tensor<f32>) outs(%e : tensor<4x3xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %p = arith.mulf %a, %b : f32
      linalg.yield %p : f32
    } -> tensor<4x3xf32>
  %x = spmd.all_reduce %m on @dp4 ["dp"] max : tensor<4x3xf32>
  return %r, %x : tensor<4x3xf32>, tensor<4x3xf32>
}
