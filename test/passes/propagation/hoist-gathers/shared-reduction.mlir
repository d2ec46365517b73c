// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-hoist-gathers))' | FileCheck %s

// Propagated input (layout-consistent): the input gradient of a row-parallel
// layer is partial; it is all-reduced for the next op's backward anyway
// (%gr), while the bias gradient sums the partial copy and is all-reduced
// on its own (a second all_reduce, of the [64] result). Reading the
// reduced gradient instead makes the bias gradient replicated for free.

spmd.mesh @mesh ["tp"=4]
#id = affine_map<(b, d) -> (b, d)>
#col = affine_map<(b, d) -> (d)>

// CHECK-LABEL: func.func @f(
// CHECK: %[[G:.*]] = linalg.matmul
// CHECK: %[[GR:.*]] = spmd.constrain %[[G]] to #spmd.layout<@mesh, [R]>
// CHECK: %[[BIAS:.*]] = linalg.generic {{.*}} ins(%[[GR]] : tensor<512x64xf32>) outs(%{{.*}} : tensor<64xf32>) attrs =  {spmd.layout = #spmd.layout<@mesh, [R]>}
// CHECK: return %{{.*}}, %[[BIAS]]
func.func @f(%x: tensor<512x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>},
             %w: tensor<32x64xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<512x64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
        tensor<64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} : tensor<512x64xf32>
  %z = linalg.fill {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} ins(%zero : f32) outs(%e : tensor<512x64xf32>) -> tensor<512x64xf32>
  %g = linalg.matmul {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} ins(%x, %w : tensor<512x32xf32>, tensor<32x64xf32>) outs(%z : tensor<512x64xf32>) -> tensor<512x64xf32>
  %gr = spmd.constrain %g to #spmd.layout<@mesh, [R]> : tensor<512x64xf32>
  %eb = tensor.empty() {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} : tensor<64xf32>
  %zb = linalg.fill {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} ins(%zero : f32) outs(%eb : tensor<64xf32>) -> tensor<64xf32>
  %bias = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%g : tensor<512x64xf32>) outs(%zb : tensor<64xf32>) attrs = {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %br = spmd.constrain %bias to #spmd.layout<@mesh, [R]> : tensor<64xf32>
  %er = tensor.empty() {spmd.layout = #spmd.layout<@mesh, [R]>} : tensor<512x64xf32>
  %y = linalg.mul {spmd.layout = #spmd.layout<@mesh, [R]>} ins(%gr, %gr : tensor<512x64xf32>, tensor<512x64xf32>) outs(%er : tensor<512x64xf32>) -> tensor<512x64xf32>
  return %y, %br : tensor<512x64xf32>, tensor<64xf32>
}
