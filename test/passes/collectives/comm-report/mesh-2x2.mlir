// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | FileCheck %s
// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | %python -c "import json, sys; json.load(sys.stdin)"

// A dp x tp = 2x2 step: Megatron all_reduce on "tp", gradient all_reduce on
// "dp", and collectives over both axes that count once under "dp,tp" (in
// mesh order, also when listed as "tp", "dp") and not in the per-axis
// breakdown. A second mesh keeps its own totals.
//   all_reduce tp   8x16 f32 (512 B):   2*1/2 * 512  = 512
//   all_to_all tp   4x8 f16 (64 B):     1/2 * 64     = 32
//   all_reduce dp   16x32 f32 (2048 B): 2*1/2 * 2048 = 2048
//   all_reduce dp,tp 1 f32 (4 B):       2*3/4 * 4    = 6
//   all_gather tp,dp 2x8 f32 (64 B):    3 * 64       = 192
//   shard dp,tp:                                        0
//   all_reduce x3 on @ring, 5 f32 (20 B): 2*2/3 * 20 = 26.67 (not integral)
spmd.mesh @mesh ["dp"=2, "tp"=2]
spmd.mesh @ring ["x"=3]

// CHECK-LABEL: "name": "step_2d",
// CHECK-NEXT:  "collectives": [
// CHECK-NEXT:    {"op":"all_reduce","mesh":"mesh","axes":["tp"],"group_size":2,"reduction":"sum","element_type":"f32","input_shape":[8,16],"result_shape":[8,16],"dynamic":false,"bytes":512},
// CHECK-NEXT:    {"op":"all_to_all","mesh":"mesh","axes":["tp"],"group_size":2,"split_dim":1,"concat_dim":0,"element_type":"f16","input_shape":[4,8],"result_shape":[8,4],"dynamic":false,"bytes":32},
// CHECK-NEXT:    {"op":"all_reduce","mesh":"mesh","axes":["dp"],"group_size":2,"reduction":"avg","element_type":"f32","input_shape":[16,32],"result_shape":[16,32],"dynamic":false,"bytes":2048},
// CHECK-NEXT:    {"op":"all_reduce","mesh":"mesh","axes":["dp","tp"],"group_size":4,"reduction":"max","element_type":"f32","input_shape":[1],"result_shape":[1],"dynamic":false,"bytes":6},
// CHECK-NEXT:    {"op":"all_gather","mesh":"mesh","axes":["tp","dp"],"group_size":4,"dim":1,"element_type":"f32","input_shape":[2,8],"result_shape":[2,32],"dynamic":false,"bytes":192},
// CHECK-NEXT:    {"op":"shard","mesh":"mesh","axes":["dp","tp"],"group_size":4,"dim":0,"element_type":"f32","input_shape":[16,32],"result_shape":[4,32],"dynamic":false,"bytes":0},
// CHECK-NEXT:    {"op":"all_reduce","mesh":"ring","axes":["x"],"group_size":3,"reduction":"sum","element_type":"f32","input_shape":[5],"result_shape":[5],"dynamic":false,"bytes":26.66666666666666{{[0-9]+}}}
// CHECK-NEXT:  ],
// CHECK-NEXT:  "totals": {
// CHECK-NEXT:    "count": 7,
// CHECK-NEXT:    "bytes": 2816.66666666666{{[0-9]+}},
// CHECK-NEXT:    "by_kind": {
// CHECK-NEXT:      "all_gather": {"count":1,"bytes":192},
// CHECK-NEXT:      "all_reduce": {"count":4,"bytes":2592.66666666666{{[0-9]+}}},
// CHECK-NEXT:      "all_to_all": {"count":1,"bytes":32},
// CHECK-NEXT:      "shard": {"count":1,"bytes":0}
// CHECK-NEXT:    },
// CHECK-NEXT:    "by_axes": {
// CHECK-NEXT:      "mesh": {
// CHECK-NEXT:        "dp": {"count":1,"bytes":2048},
// CHECK-NEXT:        "dp,tp": {"count":3,"bytes":198},
// CHECK-NEXT:        "tp": {"count":2,"bytes":544}
// CHECK-NEXT:      },
// CHECK-NEXT:      "ring": {
// CHECK-NEXT:        "x": {"count":1,"bytes":26.66666666666666{{[0-9]+}}}
// CHECK-NEXT:      }
// CHECK-NEXT:    },
// CHECK-NEXT:    "by_axis": {
// CHECK-NEXT:      "mesh": {
// CHECK-NEXT:        "dp": {"count":1,"bytes":2048},
// CHECK-NEXT:        "tp": {"count":2,"bytes":544}
// CHECK-NEXT:      },
// CHECK-NEXT:      "ring": {
// CHECK-NEXT:        "x": {"count":1,"bytes":26.66666666666666{{[0-9]+}}}
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @step_2d(%p: tensor<8x16xf32>, %a: tensor<4x8xf16>, %g: tensor<16x32xf32>,
                   %l: tensor<1xf32>, %w: tensor<2x8xf32>, %v: tensor<5xf32>) {
  %r0 = spmd.all_reduce %p on @mesh ["tp"] sum : tensor<8x16xf32>
  %a0 = spmd.all_to_all %a on @mesh ["tp"] split 1 concat 0 : tensor<4x8xf16> -> tensor<8x4xf16>
  %r1 = spmd.all_reduce %g on @mesh ["dp"] avg : tensor<16x32xf32>
  %r2 = spmd.all_reduce %l on @mesh ["dp", "tp"] max : tensor<1xf32>
  %g0 = spmd.all_gather %w on @mesh ["tp", "dp"] dim 1 : tensor<2x8xf32> -> tensor<2x32xf32>
  %s0 = spmd.shard %r1 on @mesh ["dp", "tp"] dim 0 : tensor<16x32xf32> -> tensor<4x32xf32>
  %r3 = spmd.all_reduce %v on @ring ["x"] sum : tensor<5xf32>
  return
}
