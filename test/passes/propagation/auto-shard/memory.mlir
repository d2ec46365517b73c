// RUN: spmd-opt %s --spmd-auto-shard="memory-budget=30MiB report=%t.report" -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: FileCheck %s --check-prefix=REPORT < %t.report
// The memory planner agrees: the partitioned program's peak per rank
// (arena + arguments) is within the budget (31457280 bytes).
// RUN: spmd-run %t.mlir --print-plan --check --atol 1e-3 --rtol 1e-3 | FileCheck %s --check-prefix=PLAN
// RUN: spmd-opt %s --spmd-auto-shard=memory-budget=12MiB -verify-diagnostics -o /dev/null
// RUN: not spmd-opt %s --spmd-auto-shard=memory-budget=lots -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// forward.mlir's MLP: unconstrained, the weights stay replicated (44 MiB
// per device). Within 30 MiB no replicated choice fits, and the search
// shards both weights, Megatron's way. 12 MiB cannot be met: the error
// names the smallest peak found.

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %arg1: tensor<1024x4096xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}
// CHECK-SAME: %arg3: tensor<4096x1024xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}

// REPORT: peak memory 24.00 MiB per device (budget 30.00 MiB)

// PLAN: memory per rank: arena {{[0-9]+}} bytes + arguments {{[0-9]+}} bytes = peak {{[12][0-9][0-9][0-9][0-9][0-9][0-9][0-9]}} bytes
// PLAN: check passed (4 ranks, 1 step(s))

// BAD: spmd-auto-shard: memory-budget 'lots' is not a size (e.g. 4096, 64MiB, 1.5GB)

spmd.mesh @mesh ["tp"=4]

// expected-error @+1 {{no layout fits the memory budget of 12.00 MiB per device; the smallest peak found is 20.00 MiB}}
func.func @mlp(%x: tensor<1024x1024xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
               %w1: tensor<1024x4096xf32>, %b1: tensor<4096xf32>,
               %w2: tensor<4096x1024xf32>)
    -> tensor<1024x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1024x4096xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1024x4096xf32>) -> tensor<1024x4096xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<1024x1024xf32>, tensor<1024x4096xf32>)
                     outs(%f1 : tensor<1024x4096xf32>) -> tensor<1024x4096xf32>
  %eb = tensor.empty() : tensor<1024x4096xf32>
  %hb = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h, %b1 : tensor<1024x4096xf32>, tensor<4096xf32>)
      outs(%eb : tensor<1024x4096xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1024x4096xf32>
  %e2 = tensor.empty() : tensor<1024x1024xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %y = linalg.matmul ins(%hb, %w2 : tensor<1024x4096xf32>, tensor<4096x1024xf32>)
                     outs(%f2 : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %y : tensor<1024x1024xf32>
}
