// RUN: spmd-opt %s --spmd-fuse-elementwise | FileCheck %s

// A producer read through a broadcast (a 0-d bias correction 1 - b1^t, as
// AdamW computes it) is not fused into the per-element consumer, where it
// would be recomputed for every element; a same-shape producer is.

// CHECK-LABEL: func.func @scale(
// CHECK: %[[C:.*]] = linalg.generic {{.*}} iterator_types = []
// CHECK: math.powf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]{{.*}} ins(%arg0, %[[C]] : tensor<1024xf32>, tensor<f32>)
// CHECK-NOT: math.powf
// CHECK: arith.mulf
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @scale(%p: tensor<1024xf32>, %t: tensor<f32>) -> tensor<1024xf32> {
  %b1 = arith.constant 0.9 : f32
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %bc = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
      ins(%t : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%s: f32, %o: f32):
    %pw = math.powf %b1, %s : f32
    %r = arith.subf %one, %pw : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<1024xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%p : tensor<1024xf32>) outs(%e1 : tensor<1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %two : f32
    linalg.yield %m : f32
  } -> tensor<1024xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%d, %bc : tensor<1024xf32>, tensor<f32>) outs(%e1 : tensor<1024xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %q = arith.divf %x, %c : f32
    linalg.yield %q : f32
  } -> tensor<1024xf32>
  return %y : tensor<1024xf32>
}
