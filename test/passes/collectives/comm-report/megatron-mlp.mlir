// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | FileCheck %s
// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | %python -c "import json, sys; json.load(sys.stdin)"

// Local Megatron MLP forward on a 1-D mesh of 4: W1 column-split (local
// 16x64 of 16x256), W2 row-split (local 64x16 of 256x16); the partial output
// is reduced once: 2(k-1)/k * 8*16*4 bytes = 1.5 * 512 = 768.
spmd.mesh @tp4 ["tp"=4]

func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x64xf32>, %w2: tensor<64x16xf32>)
    -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %p = linalg.matmul ins(%h, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = spmd.all_reduce %p on @tp4 ["tp"] sum : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// CHECK:      "functions": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "name": "mlp",
// CHECK-NEXT:     "collectives": [
// CHECK-NEXT:       {"op":"all_reduce","mesh":"tp4","axes":["tp"],"group_size":4,"reduction":"sum","element_type":"f32","input_shape":[8,16],"result_shape":[8,16],"dynamic":false,"bytes":768}
// CHECK-NEXT:     ],
// CHECK-NEXT:     "totals": {
// CHECK-NEXT:       "count": 1,
// CHECK-NEXT:       "bytes": 768,
// CHECK-NEXT:       "by_kind": {
// CHECK-NEXT:         "all_reduce": {"count":1,"bytes":768}
// CHECK-NEXT:       },
// CHECK-NEXT:       "by_axes": {
// CHECK-NEXT:         "tp4": {
// CHECK-NEXT:           "tp": {"count":1,"bytes":768}
// CHECK-NEXT:         }
// CHECK-NEXT:       },
// CHECK-NEXT:       "by_axis": {
// CHECK-NEXT:         "tp4": {
// CHECK-NEXT:           "tp": {"count":1,"bytes":768}
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: ]
