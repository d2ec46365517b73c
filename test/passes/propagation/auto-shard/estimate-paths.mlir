// RUN: spmd-opt %s --spmd-auto-shard=report=%t.report -o %t.mlir
// RUN: FileCheck %s < %t.report
// RUN: spmd-opt %t.mlir --spmd-partition-pipeline | spmd-opt --spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=COMM

// The estimate's communication is what partitioning makes of the plan, not
// the sum of each axis's changes. [S(0), S(0)] nests tp inside dp on dim
// 0, so [R, S(0)] takes the redistribute planner's path: one all_gather
// over both axes (6 KiB per rank), then a local slice on tp. The [R, R]
// result is gathered from that copy on tp (4 KiB), as spmd-propagate picks
// it: 10 KiB in all, where the per-axis sums count 4 KiB (one 2 KiB gather
// on dp for both results, one on tp). Every layout is given: nothing to
// solve (this used to fail as "no layout fits the memory budget").

// CHECK: communication {{.*}} ms (10.0 KiB per rank)
// CHECK: solved in {{.*}} at most 0 variables and 0 rows per axis
// COMM: "op":"all_gather","mesh":"mesh","axes":["dp","tp"]{{.*}}"bytes":6144
// COMM: "op":"all_gather","mesh":"mesh","axes":["tp"]{{.*}}"bytes":4096
// COMM: "totals": {
// COMM-NEXT: "count": 3,
// COMM-NEXT: "bytes": 10240,

spmd.mesh @mesh ["dp"=2, "tp"=2]

func.func @step(%a: tensor<64x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>})
    -> (tensor<64x32xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(0)]>},
        tensor<64x32xf32> {spmd.layout = #spmd.layout<@mesh, [R, R]>}) {
  return %a, %a : tensor<64x32xf32>, tensor<64x32xf32>
}
