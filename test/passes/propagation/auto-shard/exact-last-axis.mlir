// RUN: spmd-opt %s --spmd-auto-shard=report=%t.report -o /dev/null
// RUN: FileCheck %s < %t.report
// RUN: spmd-opt %s --spmd-auto-shard="report=%t.peraxis exact-last-axis=false" -o /dev/null
// RUN: FileCheck %s --check-prefix=PERAXIS < %t.peraxis

// Coordinate descent solves dp again with tp kept. Priced in full (the
// default), each reshard is the whole layout change along the planner's
// path on the real mesh, as the estimate prices it, so the plan before the
// step is in the model at its estimate and the step cannot come out worse.
// Priced per axis (the dp change at the sizes tp leaves, tp's changes a
// constant), the step's model prefers a plan the estimate puts higher.

// CHECK: plan for @mlp on mesh @mesh [dp=2, tp=4]
// CHECK: axis dp solved again, the other axes kept: estimated [[EST:[0-9.]+]] ms, not kept (the plan before it [[EST]] ms;
// PERAXIS: axis dp solved again, the other axes kept: estimated 0.020 ms, not kept (the plan before it 0.017 ms;

spmd.mesh @mesh ["dp"=2, "tp"=4]

func.func @mlp(%x: tensor<64x1024xf32>, %w1: tensor<1024x4096xf32>,
               %w2: tensor<4096x1024xf32>)
    -> (tensor<64x1024xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>}, tensor<1024x4096xf32> {spmd.updates = 1 : i64},
        tensor<4096x1024xf32> {spmd.updates = 2 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64x4096xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x4096xf32>) -> tensor<64x4096xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<64x1024xf32>, tensor<1024x4096xf32>)
                     outs(%f1 : tensor<64x4096xf32>) -> tensor<64x4096xf32>
  %e2 = tensor.empty() : tensor<64x1024xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<64x4096xf32>, tensor<4096x1024xf32>)
                     outs(%f2 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %c = arith.constant dense<0.5> : tensor<1024x4096xf32>
  %w1n = arith.mulf %w1, %c : tensor<1024x4096xf32>
  %c2 = arith.constant dense<0.5> : tensor<4096x1024xf32>
  %w2n = arith.mulf %w2, %c2 : tensor<4096x1024xf32>
  return %y, %w1n, %w2n : tensor<64x1024xf32>, tensor<1024x4096xf32>, tensor<4096x1024xf32>
}
