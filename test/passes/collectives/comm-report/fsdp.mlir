// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | FileCheck %s
// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | %python -c "import json, sys; json.load(sys.stdin)"

// FSDP-style step on 4 ranks: each rank stores a quarter of every weight
// (S(0) on "dp"), gathers it before use and reduce-scatters its gradient.
//   all_gather of 4x16 f32 (256 B):        (k-1) * 256     = 768
//   reduce_scatter of 16x16 f32 (1024 B):  (k-1)/k * 1024  = 768
//   all_gather of 8x8 bf16 (128 B):        3 * 128         = 384
//   reduce_scatter of 32x8 bf16 (512 B):   3/4 * 512       = 384
spmd.mesh @dp4 ["dp"=4]

// CHECK-LABEL: "name": "fsdp_step",
// CHECK-NEXT:  "collectives": [
// CHECK-NEXT:    {"op":"all_gather","mesh":"dp4","axes":["dp"],"group_size":4,"dim":0,"element_type":"f32","input_shape":[4,16],"result_shape":[16,16],"dynamic":false,"bytes":768},
// CHECK-NEXT:    {"op":"all_gather","mesh":"dp4","axes":["dp"],"group_size":4,"dim":0,"element_type":"bf16","input_shape":[8,8],"result_shape":[32,8],"dynamic":false,"bytes":384},
// CHECK-NEXT:    {"op":"reduce_scatter","mesh":"dp4","axes":["dp"],"group_size":4,"reduction":"sum","dim":0,"element_type":"bf16","input_shape":[32,8],"result_shape":[8,8],"dynamic":false,"bytes":384},
// CHECK-NEXT:    {"op":"reduce_scatter","mesh":"dp4","axes":["dp"],"group_size":4,"reduction":"sum","dim":0,"element_type":"f32","input_shape":[16,16],"result_shape":[4,16],"dynamic":false,"bytes":768}
// CHECK-NEXT:  ],
// CHECK-NEXT:  "totals": {
// CHECK-NEXT:    "count": 4,
// CHECK-NEXT:    "bytes": 2304,
// CHECK-NEXT:    "by_kind": {
// CHECK-NEXT:      "all_gather": {"count":2,"bytes":1152},
// CHECK-NEXT:      "reduce_scatter": {"count":2,"bytes":1152}
// CHECK-NEXT:    },
// CHECK-NEXT:    "by_axes": {
// CHECK-NEXT:      "dp4": {
// CHECK-NEXT:        "dp": {"count":4,"bytes":2304}
// CHECK-NEXT:      }
// CHECK-NEXT:    },
func.func @fsdp_step(%w1: tensor<4x16xf32>, %w2: tensor<8x8xbf16>,
                     %g1: tensor<16x16xf32>, %g2: tensor<32x8xbf16>)
    -> (tensor<16x16xf32>, tensor<32x8xbf16>, tensor<4x16xf32>, tensor<8x8xbf16>) {
  // Forward: gather each weight right before its use.
  %fw1 = spmd.all_gather %w1 on @dp4 ["dp"] dim 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %fw2 = spmd.all_gather %w2 on @dp4 ["dp"] dim 0 : tensor<8x8xbf16> -> tensor<32x8xbf16>
  // Backward: gradients in reverse order, each rank keeps its quarter.
  %s2 = spmd.reduce_scatter %g2 on @dp4 ["dp"] dim 0 sum : tensor<32x8xbf16> -> tensor<8x8xbf16>
  %s1 = spmd.reduce_scatter %g1 on @dp4 ["dp"] dim 0 sum : tensor<16x16xf32> -> tensor<4x16xf32>
  return %fw1, %fw2, %s1, %s2 : tensor<16x16xf32>, tensor<32x8xbf16>, tensor<4x16xf32>, tensor<8x8xbf16>
}
