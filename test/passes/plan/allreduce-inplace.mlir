// RUN: spmd-opt %s --spmd-compile | FileCheck %s

// An all_reduce reduces in place when its input is dead afterwards, and
// into a copy when the input is used again (one-shot bufferization decides).

spmd.mesh @mesh ["tp"=2]

// CHECK-LABEL: func.func @dead_input
// CHECK: spmd.plan_all_reduce %[[B:.*]], %[[B]] on @mesh ["tp"] sum
// CHECK-NOT: spmd.plan_copy
func.func @dead_input(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.mulf %a, %a : f32
      linalg.yield %s : f32
  } -> tensor<8xf32>
  %r = spmd.all_reduce %y on @mesh ["tp"] sum : tensor<8xf32>
  return %r : tensor<8xf32>
}

// CHECK-LABEL: func.func @live_input
// CHECK: %[[Y:.*]] = spmd.plan_buffer offset {{.*}} : memref<8xf32>
// CHECK: %[[C:.*]] = spmd.plan_buffer offset {{.*}} : memref<8xf32>
// CHECK: spmd.plan_copy %[[Y]], %[[C]]
// CHECK: spmd.plan_all_reduce %[[C]], %[[C]] on @mesh ["tp"] max
// CHECK: return %[[C]], %[[Y]]
func.func @live_input(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.mulf %a, %a : f32
      linalg.yield %s : f32
  } -> tensor<8xf32>
  %r = spmd.all_reduce %y on @mesh ["tp"] max : tensor<8xf32>
  return %r, %y : tensor<8xf32>, tensor<8xf32>
}

// Entry arguments are never written: reducing one works on a copy.
// CHECK-LABEL: func.func @argument
// CHECK: %[[C:.*]] = spmd.plan_buffer offset 0 bytes 32 : memref<8xf32>
// CHECK-NEXT: spmd.plan_copy %arg0, %[[C]]
// CHECK-NEXT: spmd.plan_all_reduce %[[C]], %[[C]] on @mesh ["tp"] sum
// CHECK-NEXT: return %[[C]]
func.func @argument(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = spmd.all_reduce %x on @mesh ["tp"] sum : tensor<8xf32>
  return %r : tensor<8xf32>
}
