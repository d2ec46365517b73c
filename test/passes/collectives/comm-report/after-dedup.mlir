// The report shows what spmd-dedup-collectives saves: a gradient reduced
// once per use (2 x 6144 bytes) becomes one all_reduce, and an all_reduce
// whose result is only sliced becomes a reduce_scatter (768 -> 384 bytes).
// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=BEFORE
// RUN: spmd-opt %s -spmd-dedup-collectives -spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=AFTER

spmd.mesh @mesh ["dp"=4, "tp"=4]

// BEFORE:      "totals": {
// BEFORE-NEXT:   "count": 4,
// BEFORE-NEXT:   "bytes": 13056,
// BEFORE-NEXT:   "by_kind": {
// BEFORE-NEXT:     "all_reduce": {"count":3,"bytes":13056},
// BEFORE-NEXT:     "shard": {"count":1,"bytes":0}
// BEFORE-NEXT:   },

// AFTER:      {"op":"all_reduce","mesh":"mesh","axes":["dp"],"group_size":4,"reduction":"avg","element_type":"f32","input_shape":[16,64],"result_shape":[16,64],"dynamic":false,"bytes":6144},
// AFTER-NEXT: {"op":"reduce_scatter","mesh":"mesh","axes":["tp"],"group_size":4,"reduction":"sum","dim":0,"element_type":"f32","input_shape":[8,16],"result_shape":[2,16],"dynamic":false,"bytes":384}
// AFTER:      "totals": {
// AFTER-NEXT:   "count": 2,
// AFTER-NEXT:   "bytes": 6528,
// AFTER-NEXT:   "by_kind": {
// AFTER-NEXT:     "all_reduce": {"count":1,"bytes":6144},
// AFTER-NEXT:     "reduce_scatter": {"count":1,"bytes":384}
// AFTER-NEXT:   },
func.func @step(%w: tensor<16x64xf32>, %g: tensor<16x64xf32>, %p: tensor<8x16xf32>)
    -> (tensor<16x64xf32>, tensor<16x64xf32>, tensor<2x16xf32>) {
  %r1 = spmd.all_reduce %g on @mesh ["dp"] avg : tensor<16x64xf32>
  %u = arith.subf %w, %r1 : tensor<16x64xf32>
  %r2 = spmd.all_reduce %g on @mesh ["dp"] avg : tensor<16x64xf32>
  %n = arith.mulf %r2, %r2 : tensor<16x64xf32>
  %y = spmd.all_reduce %p on @mesh ["tp"] sum : tensor<8x16xf32>
  %s = spmd.shard %y on @mesh ["tp"] dim 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  return %u, %n, %s : tensor<16x64xf32>, tensor<16x64xf32>, tensor<2x16xf32>
}
