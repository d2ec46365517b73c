// RUN: spmd-opt %s --spmd-auto-shard=report=%t.report -o %t.mlir
// RUN: FileCheck %s < %t.report
// RUN: spmd-opt %t.mlir --spmd-partition-pipeline | FileCheck %s --check-prefix=PART
// RUN: spmd-opt %s --spmd-auto-shard="comm-slack=0 report=%t.solves" -o /dev/null
// RUN: FileCheck %s --check-prefix=SOLVES < %t.solves

// FSDP storage: two weights stored S(0), each read by its matmul (which
// needs it whole) and by its update (which takes it as stored). The model
// charges each gather in full, once (a value pays a reshard once per needed
// placement, however many users read it; charging each user 1/n of it
// estimated half of these bytes), and the two gathers of arguments share one
// latency, as spmd-bucket-collectives makes them one all_gather: the
// estimate is what partitioning then moves, 2 x 3 x 1 KiB in one collective.

// CHECK: arg1 tensor<32x32xf32> [S(0)]  given, dp: FSDP Shard(0)
// CHECK: arg2 tensor<32x32xf32> [S(0)]  given, dp: FSDP Shard(0)
// CHECK: communication 0.010 ms (6.0 KiB per rank)

// The gathers' latency (10 us) is most of this step's estimate, so the
// model is solved twice: bucketed reshards free of latency, then each
// paying its own (the estimate keeps the better).
// SOLVES: MILPs solved: 2

// PART-COUNT-1: spmd.all_gather {{.*}} : tensor<1x512xf32> -> tensor<4x512xf32>
// PART-NOT: spmd.all_

spmd.mesh @mesh ["dp"=4]

func.func @step(%x: tensor<64x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                %w1: tensor<32x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                %w2: tensor<32x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<64x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
        tensor<32x32xf32> {spmd.updates = 1 : i64},
        tensor<32x32xf32> {spmd.updates = 2 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<64x32xf32>, tensor<32x32xf32>)
                     outs(%f1 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<64x32xf32>, tensor<32x32xf32>)
                     outs(%f1 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %c = arith.constant dense<0.5> : tensor<32x32xf32>
  %w1n = arith.mulf %w1, %c : tensor<32x32xf32>
  %w2n = arith.mulf %w2, %c : tensor<32x32xf32>
  return %y, %w1n, %w2n : tensor<64x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>
}
