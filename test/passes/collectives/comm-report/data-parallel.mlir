// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | FileCheck %s
// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | %python -c "import json, sys; json.load(sys.stdin)"

// Data-parallel step on 4 ranks: the weights are replicated, every gradient
// is averaged over "dp" with one all_reduce (2(k-1)/k = 1.5 times its bytes).
spmd.mesh @dp4 ["dp"=4]

// CHECK-LABEL: "name": "forward",
// CHECK-NEXT:  "collectives": [],
// CHECK-NEXT:  "totals": {
// CHECK-NEXT:    "count": 0,
// CHECK-NEXT:    "bytes": 0,
// CHECK-NEXT:    "by_kind": {},
// CHECK-NEXT:    "by_axes": {},
// CHECK-NEXT:    "by_axis": {}
func.func @forward(%x: tensor<2x16xf32>, %w: tensor<16x64xf32>) -> tensor<2x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x64xf32>) -> tensor<2x64xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x16xf32>, tensor<16x64xf32>)
                     outs(%f : tensor<2x64xf32>) -> tensor<2x64xf32>
  return %y : tensor<2x64xf32>
}

// CHECK-LABEL: "name": "gradient_step",
// CHECK-NEXT:  "collectives": [
// CHECK-NEXT:    {"op":"all_reduce","mesh":"dp4","axes":["dp"],"group_size":4,"reduction":"avg","element_type":"f32","input_shape":[16,64],"result_shape":[16,64],"dynamic":false,"bytes":6144},
// CHECK-NEXT:    {"op":"all_reduce","mesh":"dp4","axes":["dp"],"group_size":4,"reduction":"avg","element_type":"f32","input_shape":[64],"result_shape":[64],"dynamic":false,"bytes":384},
// CHECK-NEXT:    {"op":"all_reduce","mesh":"dp4","axes":["dp"],"group_size":4,"reduction":"avg","element_type":"f32","input_shape":[64,16],"result_shape":[64,16],"dynamic":false,"bytes":6144},
// CHECK-NEXT:    {"op":"all_reduce","mesh":"dp4","axes":["dp"],"group_size":4,"reduction":"avg","element_type":"f32","input_shape":[16],"result_shape":[16],"dynamic":false,"bytes":96}
// CHECK-NEXT:  ],
// CHECK-NEXT:  "totals": {
// CHECK-NEXT:    "count": 4,
// CHECK-NEXT:    "bytes": 12768,
// CHECK-NEXT:    "by_kind": {
// CHECK-NEXT:      "all_reduce": {"count":4,"bytes":12768}
// CHECK-NEXT:    },
// CHECK-NEXT:    "by_axes": {
// CHECK-NEXT:      "dp4": {
// CHECK-NEXT:        "dp": {"count":4,"bytes":12768}
// CHECK-NEXT:      }
// CHECK-NEXT:    },
// CHECK-NEXT:    "by_axis": {
// CHECK-NEXT:      "dp4": {
// CHECK-NEXT:        "dp": {"count":4,"bytes":12768}
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @gradient_step(%w1: tensor<16x64xf32>, %b1: tensor<64xf32>,
                         %w2: tensor<64x16xf32>, %b2: tensor<16xf32>,
                         %gw1: tensor<16x64xf32>, %gb1: tensor<64xf32>,
                         %gw2: tensor<64x16xf32>, %gb2: tensor<16xf32>)
    -> (tensor<16x64xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<16xf32>) {
  %rw1 = spmd.all_reduce %gw1 on @dp4 ["dp"] avg : tensor<16x64xf32>
  %nw1 = arith.subf %w1, %rw1 : tensor<16x64xf32>
  %rb1 = spmd.all_reduce %gb1 on @dp4 ["dp"] avg : tensor<64xf32>
  %nb1 = arith.subf %b1, %rb1 : tensor<64xf32>
  %rw2 = spmd.all_reduce %gw2 on @dp4 ["dp"] avg : tensor<64x16xf32>
  %nw2 = arith.subf %w2, %rw2 : tensor<64x16xf32>
  %rb2 = spmd.all_reduce %gb2 on @dp4 ["dp"] avg : tensor<16xf32>
  %nb2 = arith.subf %b2, %rb2 : tensor<16xf32>
  return %nw1, %nb1, %nw2, %nb2 : tensor<16x64xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<16xf32>
}

// Declarations have no body and are not listed.
// CHECK-NOT: "name": "external"
func.func private @external(tensor<4xf32>)
