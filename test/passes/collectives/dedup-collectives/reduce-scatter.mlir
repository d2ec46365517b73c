// RUN: spmd-opt %s -split-input-file -spmd-dedup-collectives -allow-unregistered-dialect | FileCheck %s

// all_reduce then this rank's slice is a reduce_scatter, in the all_reduce's
// place, with the shard's result type and the all_reduce's kind.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @fuse
// CHECK-SAME: (%[[X:.*]]: tensor<16x8xf32>, %[[Y:.*]]: tensor<13x8xf32>)
// CHECK: %[[A:.*]] = spmd.reduce_scatter %[[X]] on @mesh ["tp"] dim 0 sum : tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[B:.*]] = spmd.reduce_scatter %[[Y]] on @mesh ["dp", "tp"] dim 0 avg : tensor<13x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[C:.*]] = spmd.reduce_scatter %[[X]] on @mesh ["dp"] dim 1 max : tensor<16x8xf32> -> tensor<16x4xf32>
// CHECK-NEXT: "test.use"() : () -> ()
// CHECK-NEXT: "test.use"(%[[A]], %[[B]], %[[C]])
// CHECK-NEXT: return
func.func @fuse(%x: tensor<16x8xf32>, %y: tensor<13x8xf32>) {
  %r0 = spmd.all_reduce %x on @mesh ["tp"] sum : tensor<16x8xf32>
  %r1 = spmd.all_reduce %y on @mesh ["dp", "tp"] avg : tensor<13x8xf32>
  %r2 = spmd.all_reduce %x on @mesh ["dp"] max : tensor<16x8xf32>
  "test.use"() : () -> ()
  %s0 = spmd.shard %r0 on @mesh ["tp"] dim 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  %s1 = spmd.shard %r1 on @mesh ["dp", "tp"] dim 0 : tensor<13x8xf32> -> tensor<?x8xf32>
  %s2 = spmd.shard %r2 on @mesh ["dp"] dim 1 : tensor<16x8xf32> -> tensor<16x4xf32>
  "test.use"(%s0, %s1, %s2) : (tensor<4x8xf32>, tensor<?x8xf32>, tensor<16x4xf32>) -> ()
  return
}

// -----

// The full reduction is used elsewhere too: nothing changes (a
// reduce_scatter beside the all_reduce would only add communication).
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @other_use
// CHECK: %[[R:.*]] = spmd.all_reduce
// CHECK-NEXT: %[[S:.*]] = spmd.shard %[[R]]
// CHECK-NOT: spmd.reduce_scatter
// CHECK: return %[[S]], %[[R]]
func.func @other_use(%x: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>) {
  %r = spmd.all_reduce %x on @mesh ["tp"] sum : tensor<16x8xf32>
  %s = spmd.shard %r on @mesh ["tp"] dim 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s, %r : tensor<4x8xf32>, tensor<16x8xf32>
}

// -----

// Two identical shards of one all_reduce: deduplicated first, then fused.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @two_shards
// CHECK-SAME: (%[[X:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: %[[S:.*]] = spmd.reduce_scatter %[[X]] on @mesh ["tp"] dim 0 sum
// CHECK-NEXT: return %[[S]], %[[S]]
func.func @two_shards(%x: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %r = spmd.all_reduce %x on @mesh ["tp"] sum : tensor<16x8xf32>
  %s = spmd.shard %r on @mesh ["tp"] dim 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  %t = spmd.shard %r on @mesh ["tp"] dim 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s, %t : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The slice is over other axes, another axis order or another mesh: kept.
spmd.mesh @mesh ["dp"=2, "tp"=2]
spmd.mesh @other ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @kept
// CHECK-NOT: spmd.reduce_scatter
// CHECK-COUNT-3: spmd.all_reduce
// CHECK-NOT: spmd.reduce_scatter
func.func @kept(%x: tensor<16x8xf32>) {
  %r0 = spmd.all_reduce %x on @mesh ["tp"] sum : tensor<16x8xf32>
  %s0 = spmd.shard %r0 on @mesh ["dp"] dim 0 : tensor<16x8xf32> -> tensor<8x8xf32>
  %r1 = spmd.all_reduce %x on @mesh ["dp", "tp"] sum : tensor<16x8xf32>
  %s1 = spmd.shard %r1 on @mesh ["tp", "dp"] dim 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  %r2 = spmd.all_reduce %x on @mesh ["tp"] min : tensor<16x8xf32>
  %s2 = spmd.shard %r2 on @other ["tp"] dim 0 : tensor<16x8xf32> -> tensor<8x8xf32>
  "test.use"(%s0, %s1, %s2) : (tensor<8x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) -> ()
  return
}
