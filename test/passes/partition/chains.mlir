// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// Rewritten values feed later rewrites: a constrain of a constrain, a slice
// and a reshape of a reshard, a reshard of a fresh tensor.empty.

spmd.mesh @m ["a"=2, "b"=2]

// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x6xf32>
func.func @chain(%x: tensor<5x6xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(0)]>})
    -> (tensor<3x6xf32> {spmd.layout = #spmd.layout<@m, [S(1), R]>},
        tensor<5x2x3xf32> {spmd.layout = #spmd.layout<@m, [R, S(0)]>},
        tensor<4x4xf32> {spmd.layout = #spmd.layout<@m, [S(1), S(0)]>}) {
  // CHECK: %[[G:.*]] = spmd.all_gather %[[X]] on @m ["b"] dim 0 {spmd.result_global_type = tensor<5x6xf32>, spmd.result_layout = #spmd.layout<@m, [S(0), R]>} : tensor<?x6xf32> -> tensor<?x6xf32>
  // CHECK-NEXT: %[[A:.*]] = spmd.all_to_all %[[G]] on @m ["a"] split 1 concat 0 : tensor<?x6xf32> -> tensor<5x3xf32>
  %c1 = spmd.constrain %x to #spmd.layout<@m, [S(0), R]> : tensor<5x6xf32>
  %c2 = spmd.constrain %c1 to #spmd.layout<@m, [S(1), R]> : tensor<5x6xf32>
  // CHECK-NEXT: %[[S:.*]] = tensor.extract_slice %[[A]][1, 0] [3, 3] [1, 1] : tensor<5x3xf32> to tensor<3x3xf32>
  %s = tensor.extract_slice %c2[1, 0] [3, 6] [1, 1] {spmd.layout = #spmd.layout<@m, [S(1), R]>} : tensor<5x6xf32> to tensor<3x6xf32>
  // [S(1), R] -> [R, S(0)]: slice on b, then gather on a (one collective).
  // CHECK-NEXT: %[[L:.*]] = spmd.shard %[[A]] on @m ["b"] dim 0 : tensor<5x3xf32> -> tensor<?x3xf32>
  // CHECK-NEXT: %[[R:.*]] = spmd.all_gather %[[L]] on @m ["a"] dim 1 {spmd.result_global_type = tensor<5x6xf32>, spmd.result_layout = #spmd.layout<@m, [R, S(0)]>} : tensor<?x3xf32> -> tensor<?x6xf32>
  // CHECK-NEXT: %[[N:.*]] = spmd.local_size @m ["b"] of 5 : index
  // CHECK-NEXT: %[[E:.*]] = tensor.expand_shape %[[R]] {{\[\[}}0], [1, 2]] output_shape [%[[N]], 2, 3] : tensor<?x6xf32> into tensor<?x2x3xf32>
  %c3 = spmd.constrain %c2 to #spmd.layout<@m, [R, S(0)]> : tensor<5x6xf32>
  %e = tensor.expand_shape %c3 [[0], [1, 2]] output_shape [5, 2, 3] {spmd.layout = #spmd.layout<@m, [R, S(0)]>} : tensor<5x6xf32> into tensor<5x2x3xf32>
  // CHECK-NEXT: %[[T:.*]] = tensor.empty() : tensor<4x4xf32>
  // CHECK-NEXT: %[[T1:.*]] = spmd.shard %[[T]] on @m ["b"] dim 0 : tensor<4x4xf32> -> tensor<2x4xf32>
  // CHECK-NEXT: %[[T2:.*]] = spmd.shard %[[T1]] on @m ["a"] dim 1 : tensor<2x4xf32> -> tensor<2x2xf32>
  // CHECK-NEXT: return %[[S]], %[[E]], %[[T2]]
  %t = tensor.empty() {spmd.layout = #spmd.layout<@m, [R, R]>} : tensor<4x4xf32>
  %tc = spmd.constrain %t to #spmd.layout<@m, [S(1), S(0)]> : tensor<4x4xf32>
  return %s, %e, %tc : tensor<3x6xf32>, tensor<5x2x3xf32>, tensor<4x4xf32>
}
