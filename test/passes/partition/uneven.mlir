// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// Uneven shards: local dims that differ between ranks are dynamic, and
// tensor.empty gets its size from spmd.local_size.

spmd.mesh @tp ["tp"=4]
spmd.mesh @m ["a"=2, "b"=2]

// 13 rows on 4: 4, 4, 4, 1.
// CHECK-LABEL: func.func @rows13
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xf32> {spmd.global_type = tensor<13x16xf32>, spmd.layout = #spmd.layout<@tp, [S(0)]>}
// CHECK-SAME: %[[W:.*]]: tensor<16x8xf32> {spmd.global_type = tensor<16x8xf32>, spmd.layout = #spmd.layout<@tp, [R]>})
// CHECK-SAME: -> (tensor<13x8xf32> {spmd.global_type = tensor<13x8xf32>, spmd.layout = #spmd.layout<@tp, [R]>})
func.func @rows13(%x: tensor<13x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                  %w: tensor<16x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>})
    -> (tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  // CHECK: %[[N:.*]] = spmd.local_size @tp ["tp"] of 13 : index
  // CHECK-NEXT: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x8xf32>
  // CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK-NEXT: %[[Y:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<?x16xf32>, tensor<16x8xf32>) outs(%[[F]] : tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK-NEXT: %[[Z:.*]] = arith.addf %[[Y]], %[[Y]] : tensor<?x8xf32>
  // CHECK-NEXT: %[[G:.*]] = spmd.all_gather %[[Z]] on @tp ["tp"] dim 0 : tensor<?x8xf32> -> tensor<13x8xf32>
  // CHECK-NEXT: return %[[G]]
  %e = tensor.empty() {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<13x8xf32>
  %f = linalg.fill {spmd.layout = #spmd.layout<@tp, [S(0)]>} ins(%zero : f32) outs(%e : tensor<13x8xf32>) -> tensor<13x8xf32>
  %y = linalg.matmul {spmd.layout = #spmd.layout<@tp, [S(0)]>}
      ins(%x, %w : tensor<13x16xf32>, tensor<16x8xf32>)
      outs(%f : tensor<13x8xf32>) -> tensor<13x8xf32>
  %z = arith.addf %y, %y {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<13x8xf32>
  %r = spmd.constrain %z to #spmd.layout<@tp, [R]> : tensor<13x8xf32>
  return %r : tensor<13x8xf32>
}

// 3 rows on 4: 1, 1, 1, 0 (the last rank holds an empty shard). A row sum
// over the sharded dim is a local partial; the empty shard contributes 0.
// CHECK-LABEL: func.func @rows3
// CHECK-SAME: (%[[X:.*]]: tensor<?x5xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<5xf32>
// CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<5xf32>) -> tensor<5xf32>
// CHECK-NEXT: %[[S:.*]] = linalg.generic
// CHECK-SAME: ins(%[[X]] : tensor<?x5xf32>) outs(%[[F]] : tensor<5xf32>)
// CHECK: } -> tensor<5xf32>
// CHECK-NEXT: %[[R:.*]] = spmd.all_reduce %[[S]] on @tp ["tp"] sum : tensor<5xf32>
// CHECK-NEXT: return %[[R]], %[[X]] : tensor<5xf32>, tensor<?x5xf32>
func.func @rows3(%x: tensor<3x5xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<5xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
        tensor<3x5xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<5xf32>
  %f = linalg.fill {spmd.layout = #spmd.layout<@tp, [P(sum)]>} ins(%zero : f32) outs(%e : tensor<5xf32>) -> tensor<5xf32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<3x5xf32>) outs(%f : tensor<5xf32>)
      attrs = {spmd.layout = #spmd.layout<@tp, [P(sum)]>} {
    ^bb0(%in: f32, %out: f32):
      %a = arith.addf %out, %in : f32
      linalg.yield %a : f32
  } -> tensor<5xf32>
  %r = spmd.constrain %s to #spmd.layout<@tp, [R]> : tensor<5xf32>
  return %r, %x : tensor<5xf32>, tensor<3x5xf32>
}

// 5 rows on 2x2, nested: a splits 3, 2; b splits those into 2, 1 and 1, 1.
// CHECK-LABEL: func.func @nested5
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32> {spmd.global_type = tensor<5x4xf32>, spmd.layout = #spmd.layout<@m, [S(0), S(0)]>})
// CHECK-SAME: -> (tensor<?x4xf32> {spmd.global_type = tensor<5x4xf32>, spmd.layout = #spmd.layout<@m, [S(0), R]>}
// CHECK-SAME:     tensor<5x4xf32> {spmd.global_type = tensor<5x4xf32>, spmd.layout = #spmd.layout<@m, [R, R]>})
// CHECK: %[[N:.*]] = spmd.local_size @m ["a", "b"] of 5 : index
// CHECK-NEXT: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x4xf32>
// CHECK-NEXT: %[[G:.*]] = linalg.generic
// CHECK-SAME: ins(%[[X]] : tensor<?x4xf32>) outs(%[[E]] : tensor<?x4xf32>)
// CHECK: math.exp
// CHECK: } -> tensor<?x4xf32>
// Only the inner axis b may be gathered alone.
// CHECK-NEXT: %[[I:.*]] = spmd.all_gather %[[G]] on @m ["b"] dim 0 {spmd.result_global_type = tensor<5x4xf32>, spmd.result_layout = #spmd.layout<@m, [S(0), R]>} : tensor<?x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT: %[[O:.*]] = spmd.all_gather %[[G]] on @m ["a", "b"] dim 0 : tensor<?x4xf32> -> tensor<5x4xf32>
// CHECK-NEXT: return %[[I]], %[[O]]
func.func @nested5(%x: tensor<5x4xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(0)]>})
    -> (tensor<5x4xf32> {spmd.layout = #spmd.layout<@m, [S(0), R]>},
        tensor<5x4xf32> {spmd.layout = #spmd.layout<@m, [R, R]>}) {
  %e = tensor.empty() {spmd.layout = #spmd.layout<@m, [S(0), S(0)]>} : tensor<5x4xf32>
  %g = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<5x4xf32>) outs(%e : tensor<5x4xf32>)
      attrs = {spmd.layout = #spmd.layout<@m, [S(0), S(0)]>} {
    ^bb0(%in: f32, %out: f32):
      %a = math.exp %in : f32
      linalg.yield %a : f32
  } -> tensor<5x4xf32>
  %i = spmd.constrain %g to #spmd.layout<@m, [S(0), R]> : tensor<5x4xf32>
  %o = spmd.constrain %g to #spmd.layout<@m, [R, R]> : tensor<5x4xf32>
  return %i, %o : tensor<5x4xf32>, tensor<5x4xf32>
}
