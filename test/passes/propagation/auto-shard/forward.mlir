// RUN: spmd-opt %s --spmd-auto-shard=report=%t.report | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report
// RUN: spmd-opt %s --spmd-auto-shard --spmd-partition-pipeline | FileCheck %s --check-prefix=PART

// An MLP forward on a replicated batch of 1024 rows, output replicated:
// splitting the rows (slicing the batch is free) and gathering the output
// (3 MiB per rank) beats Megatron's column/row split, whose all_reduce
// moves 6 MiB; the weights stay replicated (megatron.mlir: once the first
// weight is updated, keeping it whole costs more and Megatron wins).

spmd.mesh @mesh ["tp"=4]

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %arg0: tensor<1024x1024xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}
// CHECK-SAME: %arg1: tensor<1024x4096xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}
// CHECK-SAME: %arg2: tensor<4096xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}
// CHECK-SAME: %arg3: tensor<4096x1024xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}
// CHECK-SAME: -> (tensor<1024x1024xf32> {spmd.layout = #spmd.layout<@mesh, [R]>})
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@mesh, [S(0)]>}
// CHECK: linalg.generic
// CHECK-SAME: spmd.layout = #spmd.layout<@mesh, [S(0)]>
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@mesh, [S(0)]>}

// REPORT: spmd-auto-shard plan for @mlp on mesh @mesh [tp=4], device h100
// REPORT-NEXT: arg0 tensor<1024x1024xf32> [R]  given, input
// REPORT-NEXT: arg1 tensor<1024x4096xf32> [R]  chosen, input
// REPORT-NEXT: arg2 tensor<4096xf32> [R]  chosen, input
// REPORT-NEXT: arg3 tensor<4096x1024xf32> [R]  chosen, input
// REPORT-NEXT: estimated compute {{.*}} ms ({{.*}} ms memory-bound), communication {{.*}} ms (3.00 MiB per rank), peak memory {{.*}} per device
// REPORT-NEXT: solved in

// PART-COUNT-1: spmd.all_gather
// PART-NOT: spmd.all_reduce
// PART-NOT: spmd.all_gather
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
