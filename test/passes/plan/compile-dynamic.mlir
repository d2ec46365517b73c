// RUN: spmd-opt %s --spmd-compile | FileCheck %s

// Rank-dependent (dynamic) dims: buffers sized from an argument's dim live
// outside the arena ("bytes 0", allocated by the runtime at the rank's
// size); static buffers still share the arena.

// CHECK-LABEL: func.func @scale(
// CHECK-SAME: spmd.plan_arena_bytes = 64
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0 : memref<?x16xf32>
// CHECK: %[[D:.*]] = spmd.plan_buffer[%[[N]]] offset 0 bytes 0 : memref<?x16xf32>
// CHECK: spmd.plan_kernel @scale_kernel_0(%arg0, %[[D]]) : memref<?x16xf32>, memref<?x16xf32>
// CHECK: %[[S:.*]] = spmd.plan_buffer offset 0 bytes 64 : memref<16xf32>
// CHECK: return %[[D]], %[[S]]
func.func @scale(%x: tensor<?x16xf32>) -> (tensor<?x16xf32>, tensor<16xf32>) {
  %c0 = arith.constant 0 : index
  %two = arith.constant 2.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x16xf32>) outs(%e : tensor<?x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.mulf %a, %two : f32
      linalg.yield %s : f32
  } -> tensor<?x16xf32>
  %z = tensor.empty() : tensor<16xf32>
  %f = linalg.fill ins(%two : f32) outs(%z : tensor<16xf32>) -> tensor<16xf32>
  return %y, %f : tensor<?x16xf32>, tensor<16xf32>
}
