// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | FileCheck %s
// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | %python -c "import json, sys; json.load(sys.stdin)"

// 13 rows on 4 ranks: torch.chunk gives 4,4,4,1, so the local row count is
// dynamic. Per-rank bytes are then unknown at compile time; an upper bound
// comes from the static size on the other side of the collective.
//   all_gather ?x16 -> 13x16: rows <= ceil(13/4) = 4: 3 * 4*16*4 = 768 bound
//   reduce_scatter 13x16 -> ?x16: input static: 3/4 * 832 = 624 exact
//   shard: 0 exact
//   all_to_all ?x8 -> 13x2: rows <= 4: 3/4 * 4*8*4 = 96 bound
//   all_reduce ?x16: nothing bounds it: null
//   all_gather 2x? -> 2x?: nothing bounds it: null
spmd.mesh @tp4 ["tp"=4]

// CHECK-LABEL: "name": "bounded",
// CHECK-NEXT:  "collectives": [
// CHECK-NEXT:    {"op":"all_gather","mesh":"tp4","axes":["tp"],"group_size":4,"dim":0,"element_type":"f32","input_shape":[null,16],"result_shape":[13,16],"dynamic":true,"bytes":null,"bytes_upper_bound":768},
// CHECK-NEXT:    {"op":"reduce_scatter","mesh":"tp4","axes":["tp"],"group_size":4,"reduction":"sum","dim":0,"element_type":"f32","input_shape":[13,16],"result_shape":[null,16],"dynamic":true,"bytes":624},
// CHECK-NEXT:    {"op":"shard","mesh":"tp4","axes":["tp"],"group_size":4,"dim":0,"element_type":"f32","input_shape":[13,16],"result_shape":[null,16],"dynamic":true,"bytes":0},
// CHECK-NEXT:    {"op":"all_to_all","mesh":"tp4","axes":["tp"],"group_size":4,"split_dim":1,"concat_dim":0,"element_type":"f32","input_shape":[null,8],"result_shape":[13,2],"dynamic":true,"bytes":null,"bytes_upper_bound":96}
// CHECK-NEXT:  ],
// CHECK-NEXT:  "totals": {
// CHECK-NEXT:    "count": 4,
// CHECK-NEXT:    "bytes": null,
// CHECK-NEXT:    "bytes_upper_bound": 1488,
// CHECK-NEXT:    "by_kind": {
// CHECK-NEXT:      "all_gather": {"count":1,"bytes":null,"bytes_upper_bound":768},
// CHECK-NEXT:      "all_to_all": {"count":1,"bytes":null,"bytes_upper_bound":96},
// CHECK-NEXT:      "reduce_scatter": {"count":1,"bytes":624},
// CHECK-NEXT:      "shard": {"count":1,"bytes":0}
// CHECK-NEXT:    },
// CHECK-NEXT:    "by_axes": {
// CHECK-NEXT:      "tp4": {
// CHECK-NEXT:        "tp": {"count":4,"bytes":null,"bytes_upper_bound":1488}
func.func @bounded(%x: tensor<?x16xf32>, %y: tensor<13x16xf32>, %z: tensor<?x8xf32>) {
  %g = spmd.all_gather %x on @tp4 ["tp"] dim 0 : tensor<?x16xf32> -> tensor<13x16xf32>
  %s = spmd.reduce_scatter %y on @tp4 ["tp"] dim 0 sum : tensor<13x16xf32> -> tensor<?x16xf32>
  %l = spmd.shard %y on @tp4 ["tp"] dim 0 : tensor<13x16xf32> -> tensor<?x16xf32>
  %a = spmd.all_to_all %z on @tp4 ["tp"] split 1 concat 0 : tensor<?x8xf32> -> tensor<13x2xf32>
  return
}

// CHECK-LABEL: "name": "unbounded",
// CHECK-NEXT:  "collectives": [
// CHECK-NEXT:    {"op":"all_reduce","mesh":"tp4","axes":["tp"],"group_size":4,"reduction":"sum","element_type":"f32","input_shape":[null,16],"result_shape":[null,16],"dynamic":true,"bytes":null,"bytes_upper_bound":null},
// CHECK-NEXT:    {"op":"all_gather","mesh":"tp4","axes":["tp"],"group_size":4,"dim":1,"element_type":"f32","input_shape":[2,null],"result_shape":[2,null],"dynamic":true,"bytes":null,"bytes_upper_bound":null},
// CHECK-NEXT:    {"op":"all_reduce","mesh":"tp4","axes":["tp"],"group_size":4,"reduction":"sum","element_type":"f32","input_shape":[4],"result_shape":[4],"dynamic":false,"bytes":24}
// CHECK-NEXT:  ],
// CHECK-NEXT:  "totals": {
// CHECK-NEXT:    "count": 3,
// CHECK-NEXT:    "bytes": null,
// CHECK-NEXT:    "bytes_upper_bound": null,
// CHECK-NEXT:    "by_kind": {
// CHECK-NEXT:      "all_gather": {"count":1,"bytes":null,"bytes_upper_bound":null},
// CHECK-NEXT:      "all_reduce": {"count":2,"bytes":null,"bytes_upper_bound":null}
// CHECK-NEXT:    },
func.func @unbounded(%x: tensor<?x16xf32>, %w: tensor<2x?xf32>, %v: tensor<4xf32>) {
  %r = spmd.all_reduce %x on @tp4 ["tp"] sum : tensor<?x16xf32>
  %g = spmd.all_gather %w on @tp4 ["tp"] dim 1 : tensor<2x?xf32> -> tensor<2x?xf32>
  %s = spmd.all_reduce %v on @tp4 ["tp"] sum : tensor<4xf32>
  return
}
