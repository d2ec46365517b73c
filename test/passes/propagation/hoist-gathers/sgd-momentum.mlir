// RUN: spmd-opt %s --pass-pipeline='builtin.module(spmd-propagate,func.func(spmd-hoist-gathers))' | FileCheck %s
// RUN: spmd-opt %s --pass-pipeline='builtin.module(spmd-propagate)' | FileCheck %s --check-prefix=BEFORE
// RUN: spmd-opt %s --pass-pipeline='builtin.module(spmd-partition-pipeline)' | FileCheck %s --check-prefix=LOCAL
// RUN: spmd-run %s --seed 1 --check | FileCheck %s --check-prefix=EXEC

// A momentum update on a gradient that arrives sharded (a sum over the
// batch of a sequence-sharded activation), with replicated parameter and
// momentum returned replicated. Propagation spreads the shard through the
// update for free (the replicated operands are sliced) and gathers both
// results; gathering the one gradient instead moves half the bytes.

spmd.mesh @mesh ["tp"=4]
#red = affine_map<(b, s, d) -> (b, s, d)>
#sum = affine_map<(b, s, d) -> (s, d)>
#id = affine_map<(s, d) -> (s, d)>

// BEFORE-LABEL: func.func @step(
// BEFORE-COUNT-2: spmd.constrain %{{.*}} to #spmd.layout<@mesh, [R]> : tensor<16x64xf32>

// CHECK-LABEL: func.func @step(
// CHECK: %[[G:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]{{.*}}spmd.layout = #spmd.layout<@mesh, [S(0)]>
// CHECK: %[[GR:.*]] = spmd.constrain %[[G]] to #spmd.layout<@mesh, [R]> : tensor<16x64xf32>
// CHECK-NOT: spmd.constrain
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%arg1, %[[GR]] : {{.*}}spmd.layout = #spmd.layout<@mesh, [R]>
// CHECK-NOT: spmd.constrain
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%arg0, %[[M]] : {{.*}}spmd.layout = #spmd.layout<@mesh, [R]>
// CHECK-NOT: spmd.constrain
// CHECK: return %[[P]], %[[M]]

// One all_gather in the local program, none for the results.
// LOCAL-LABEL: func.func @step(
// LOCAL-COUNT-1: spmd.all_gather
// LOCAL-NOT: spmd.all_gather
// LOCAL: return

// EXEC: check passed (4 ranks, 1 step(s))
func.func @step(%p: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
                %m: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
                %act: tensor<8x16x64xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>})
    -> (tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
        tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %mu = arith.constant 0.9 : f32
  %lr = arith.constant 0.01 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %g = linalg.generic {indexing_maps = [#red, #sum], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%act : tensor<8x16x64xf32>) outs(%z : tensor<16x64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<16x64xf32>
  %m2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %g : tensor<16x64xf32>, tensor<16x64xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.mulf %a, %mu : f32
    %y = arith.addf %x, %b : f32
    linalg.yield %y : f32
  } -> tensor<16x64xf32>
  %p2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %m2 : tensor<16x64xf32>, tensor<16x64xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.mulf %b, %lr : f32
    %y = arith.subf %a, %x : f32
    linalg.yield %y : f32
  } -> tensor<16x64xf32>
  return %p2, %m2 : tensor<16x64xf32>, tensor<16x64xf32>
}
