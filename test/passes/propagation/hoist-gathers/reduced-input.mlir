// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-hoist-gathers))' | FileCheck %s

// Propagated input (layout-consistent): a partial product reduce-scattered
// (P -> S), scaled by a slice of a replicated weight, and gathered for the
// replicated result (S -> R): two collectives. Replicated, the region needs
// one all_reduce (P -> R) of the same bytes: one latency less. The slice of
// the replicated weight is replaced by the weight itself.

spmd.mesh @mesh ["tp"=4]

// CHECK-LABEL: func.func @f(
// CHECK: %[[Y:.*]] = linalg.matmul
// CHECK: %[[YR:.*]] = spmd.constrain %[[Y]] to #spmd.layout<@mesh, [R]>
// CHECK-NOT: spmd.constrain
// CHECK: %[[C:.*]] = linalg.mul {spmd.layout = #spmd.layout<@mesh, [R]>} ins(%[[YR]], %arg0 : {{.*}}) outs(%[[E:.*]] :
// CHECK-NOT: spmd.constrain
// CHECK: return %[[C]]
func.func @f(%a: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
             %w: tensor<64x64xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
             %x: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>})
    -> (tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} : tensor<16x64xf32>
  %z = linalg.fill {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %y = linalg.matmul {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} ins(%x, %w : tensor<16x64xf32>, tensor<64x64xf32>) outs(%z : tensor<16x64xf32>) -> tensor<16x64xf32>
  %ys = spmd.constrain %y to #spmd.layout<@mesh, [S(0)]> : tensor<16x64xf32>
  %as = spmd.constrain %a to #spmd.layout<@mesh, [S(0)]> : tensor<16x64xf32>
  %e2 = tensor.empty() {spmd.layout = #spmd.layout<@mesh, [S(0)]>} : tensor<16x64xf32>
  %c = linalg.mul {spmd.layout = #spmd.layout<@mesh, [S(0)]>} ins(%ys, %as : tensor<16x64xf32>, tensor<16x64xf32>) outs(%e2 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %r = spmd.constrain %c to #spmd.layout<@mesh, [R]> : tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}
