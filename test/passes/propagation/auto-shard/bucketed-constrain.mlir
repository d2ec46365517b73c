// RUN: spmd-opt %s --spmd-auto-shard="device=h100 report=%t.report" -o %t.mlir
// RUN: FileCheck %s < %t.report
// RUN: spmd-opt %t.mlir --spmd-partition-pipeline | spmd-opt --spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=COMM

// Two gradients, each constrained to R (as spmd-propagate writes a hand
// plan) before its update: their all_reduces are the optimizer's, and
// bucketing makes them one, so the estimate charges one latency (10 us
// under h100), not one per gradient (it charged 0.020 ms when a value read
// only by a constrain did not count as the optimizer's).

// CHECK: communication 0.010 ms (768 B per rank)
// COMM: "totals": {
// COMM-NEXT: "count": 1,
// COMM-NEXT: "bytes": 768,

spmd.mesh @mesh ["x"=4]

func.func @step(%x: tensor<16x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                %w1: tensor<8x8xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
                %w2: tensor<8x8xf32> {spmd.layout = #spmd.layout<@mesh, [R]>})
    -> (tensor<8x8xf32> {spmd.updates = 1 : i64},
        tensor<8x8xf32> {spmd.updates = 2 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %xt = linalg.transpose ins(%x : tensor<16x8xf32>) outs(%e : tensor<8x16xf32>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %g1 = linalg.matmul {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} ins(%xt, %x : tensor<8x16xf32>, tensor<16x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %g2 = linalg.matmul {spmd.layout = #spmd.layout<@mesh, [P(sum)]>} ins(%xt, %x : tensor<8x16xf32>, tensor<16x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %c1 = spmd.constrain %g1 to #spmd.layout<@mesh, [R]> : tensor<8x8xf32>
  %c2 = spmd.constrain %g2 to #spmd.layout<@mesh, [R]> : tensor<8x8xf32>
  %n1 = arith.subf %w1, %c1 : tensor<8x8xf32>
  %n2 = arith.subf %w2, %c2 : tensor<8x8xf32>
  return %n1, %n2 : tensor<8x8xf32>, tensor<8x8xf32>
}
