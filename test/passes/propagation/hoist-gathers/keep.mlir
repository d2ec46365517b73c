// RUN: spmd-opt %s --pass-pipeline='builtin.module(spmd-propagate,func.func(spmd-hoist-gathers))' | FileCheck %s

// Regions spmd-hoist-gathers leaves sharded.

spmd.mesh @mesh ["tp"=4]
#id = affine_map<(s, d) -> (s, d)>

// Two sharded inputs, one gathered result: gathering the inputs would move
// twice the bytes.
// CHECK-LABEL: func.func @two_in_one_out(
// CHECK: linalg.add {{.*}}spmd.layout = #spmd.layout<@mesh, [S(0)]>
// CHECK: %[[R:.*]] = spmd.constrain %{{.*}} to #spmd.layout<@mesh, [R]>
// CHECK-NEXT: return %[[R]]
func.func @two_in_one_out(%a: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                          %b: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}) {
  %e = tensor.empty() : tensor<16x64xf32>
  %c = linalg.add ins(%a, %b : tensor<16x64xf32>, tensor<16x64xf32>) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %c : tensor<16x64xf32>
}

// Results that stay sharded: nothing to save.
// CHECK-LABEL: func.func @stays_sharded(
// CHECK: %[[W:.*]] = spmd.constrain %arg1 to #spmd.layout<@mesh, [S(0)]>
// CHECK: linalg.mul {{.*}}spmd.layout = #spmd.layout<@mesh, [S(0)]>{{.*}} ins(%arg0, %[[W]]
// CHECK-NOT: spmd.constrain
// CHECK: return
func.func @stays_sharded(%a: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                         %w: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>})
    -> (tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) {
  %e = tensor.empty() : tensor<16x64xf32>
  %c = linalg.mul ins(%a, %w : tensor<16x64xf32>, tensor<16x64xf32>) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %c : tensor<16x64xf32>
}
