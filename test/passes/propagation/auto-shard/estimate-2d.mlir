// RUN: spmd-opt %s --spmd-auto-shard=report=%t.report -o %t.mlir
// RUN: FileCheck %s < %t.report
// RUN: spmd-opt %t.mlir --spmd-partition-pipeline | spmd-opt --spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=COMM

// On a 2-D mesh a reshard on the first axis moves the value as the second
// axis splits it: the product, [S(0), S(1)] (4 KiB per rank), gathered on
// dp for the [R, S(1)] result sends 4 KiB per rank, not the 8 KiB of the
// value split on dp alone (what the first axis's solve sees, before tp is
// decided). The report's estimate is the plan's, every axis at the sizes
// the others leave, and what partitioning then moves.

// CHECK: communication {{.*}} ms (4.0 KiB per rank)
// COMM: "op":"all_gather","mesh":"mesh","axes":["dp"]{{.*}}"bytes":4096
// COMM: "totals": {
// COMM-NEXT: "count": 1,

spmd.mesh @mesh ["dp"=2, "tp"=2]

func.func @step(%x: tensor<64x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>},
                %w: tensor<32x64xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>})
    -> (tensor<64x64xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %y = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x64xf32>)
                     outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %c = spmd.constrain %y to #spmd.layout<@mesh, [S(0), S(1)]> : tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}
