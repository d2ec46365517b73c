// RUN: spmd-opt %s --spmd-auto-shard=report=%t.report | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report
// RUN: spmd-opt %s --spmd-auto-shard --spmd-partition-pipeline | FileCheck %s --check-prefix=PART
// RUN: spmd-opt %s --spmd-auto-shard="collective-latency=1000000 report=%t.slow" -o /dev/null
// RUN: FileCheck %s --check-prefix=SLOW < %t.slow

// An MLP forward on 2 rows, whose first weight is updated (its next value
// is returned, `spmd.updates`): the search finds Megatron's plan, the first
// weight column-split (the bias with it: among plans of equal time the one
// that stores less), the second row-split, one all_reduce of the output;
// the update is computed in the weight's layout. (Weights here are
// [in, out], so the report's Linear names are swapped.)

spmd.mesh @mesh ["tp"=4]

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %arg0: tensor<2x4096xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}
// CHECK-SAME: %arg1: tensor<4096x16384xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}
// CHECK-SAME: %arg2: tensor<16384xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}
// CHECK-SAME: %arg3: tensor<16384x4096xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}
// CHECK-SAME: -> (tensor<2x4096xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
// CHECK-SAME: tensor<4096x16384xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>, spmd.updates = 1 : i64})
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@mesh, [S(1)]>}
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@mesh, [P(sum)]>}
// CHECK: arith.mulf {{.*}} {spmd.layout = #spmd.layout<@mesh, [S(1)]>}

// REPORT: spmd-auto-shard plan for @mlp on mesh @mesh [tp=4], device h100
// REPORT-NEXT: arg0 tensor<2x4096xf32> [R]  given, input
// REPORT-NEXT: arg1 tensor<4096x16384xf32> [S(1)]  chosen, tp: Rowwise
// REPORT-NEXT: arg2 tensor<16384xf32> [S(0)]  chosen, input
// REPORT-NEXT: arg3 tensor<16384x4096xf32> [S(0)]  chosen, input

// With a collective costing a second (collective-latency, in us, in place
// of the profile's 10 us), no plan that communicates pays: all replicated.
// SLOW: spmd-auto-shard plan for @mlp on mesh @mesh [tp=4], device h100 (1000000.00 us per collective)
// SLOW-NEXT: arg0 tensor<2x4096xf32> [R]  given, input
// SLOW-NEXT: arg1 tensor<4096x16384xf32> [R]  chosen, tp: Replicate
// SLOW-NEXT: arg2 tensor<16384xf32> [R]  chosen, input
// SLOW-NEXT: arg3 tensor<16384x4096xf32> [R]  chosen, input
// SLOW-NEXT: communication 0.000 ms (0 B per rank)

// PART-COUNT-1: spmd.all_reduce
// PART-NOT: spmd.all_reduce
// PART-NOT: spmd.all_gather
func.func @mlp(%x: tensor<2x4096xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
               %w1: tensor<4096x16384xf32>, %b1: tensor<16384xf32>,
               %w2: tensor<16384x4096xf32>)
    -> (tensor<2x4096xf32>, tensor<4096x16384xf32> {spmd.updates = 1 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x16384xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x16384xf32>) -> tensor<2x16384xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<2x4096xf32>, tensor<4096x16384xf32>)
                     outs(%f1 : tensor<2x16384xf32>) -> tensor<2x16384xf32>
  %eb = tensor.empty() : tensor<2x16384xf32>
  %hb = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h, %b1 : tensor<2x16384xf32>, tensor<16384xf32>)
      outs(%eb : tensor<2x16384xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x16384xf32>
  %e2 = tensor.empty() : tensor<2x4096xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4096xf32>) -> tensor<2x4096xf32>
  %y = linalg.matmul ins(%hb, %w2 : tensor<2x16384xf32>, tensor<16384x4096xf32>)
                     outs(%f2 : tensor<2x4096xf32>) -> tensor<2x4096xf32>
  %c = arith.constant dense<0.5> : tensor<4096x16384xf32>
  %w1n = arith.mulf %w1, %c : tensor<4096x16384xf32>
  return %y, %w1n : tensor<2x4096xf32>, tensor<4096x16384xf32>
}
