// RUN: spmd-opt %s -split-input-file -spmd-dedup-collectives -allow-unregistered-dialect | FileCheck %s

// shard(all_gather(x)) is x; the dead all_gather goes too.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @gather_shard
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[Y:.*]]: tensor<4x3xf32>, %[[Z:.*]]: tensor<?x16xf32>)
// CHECK-NOT: spmd.
// CHECK: return %[[X]], %[[Y]], %[[Z]]
func.func @gather_shard(%x: tensor<4x16xf32>, %y: tensor<4x3xf32>, %z: tensor<?x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x3xf32>, tensor<?x16xf32>) {
  %g = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %s = spmd.shard %g on @mesh ["tp"] dim 0 : tensor<16x16xf32> -> tensor<4x16xf32>
  // Over two axes in the same order.
  %g2 = spmd.all_gather %y on @mesh ["dp", "tp"] dim 1 : tensor<4x3xf32> -> tensor<4x24xf32>
  %s2 = spmd.shard %g2 on @mesh ["dp", "tp"] dim 1 : tensor<4x24xf32> -> tensor<4x3xf32>
  // Uneven pieces: dynamic in and out, the same type.
  %g3 = spmd.all_gather %z on @mesh ["tp"] dim 0 : tensor<?x16xf32> -> tensor<13x16xf32>
  %s3 = spmd.shard %g3 on @mesh ["tp"] dim 0 : tensor<13x16xf32> -> tensor<?x16xf32>
  return %s, %s2, %s3 : tensor<4x16xf32>, tensor<4x3xf32>, tensor<?x16xf32>
}

// -----

// The gathered value has another use: the all_gather stays for it, the
// shard still goes.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @gather_used_elsewhere
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>)
// CHECK: %[[G:.*]] = spmd.all_gather %[[X]]
// CHECK-NOT: spmd.
// CHECK: return %[[X]], %[[G]]
func.func @gather_used_elsewhere(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<16x16xf32>) {
  %g = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %s = spmd.shard %g on @mesh ["tp"] dim 0 : tensor<16x16xf32> -> tensor<4x16xf32>
  return %s, %g : tensor<4x16xf32>, tensor<16x16xf32>
}

// -----

// Not a round trip: other axes, other axis order, other mesh, other dim, a
// dynamic result where the input was static, a static result where the
// input was dynamic.
spmd.mesh @mesh ["dp"=2, "tp"=2]
spmd.mesh @other ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @gather_shard_kept
func.func @gather_shard_kept(%x: tensor<4x6xf32>, %z: tensor<?x6xf32>) {
  // CHECK: %[[G0:.*]] = spmd.all_gather %{{.*}} on @mesh ["tp"] dim 0
  // CHECK: spmd.shard %[[G0]] on @mesh ["dp"] dim 0
  %g0 = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<4x6xf32> -> tensor<8x6xf32>
  %s0 = spmd.shard %g0 on @mesh ["dp"] dim 0 : tensor<8x6xf32> -> tensor<4x6xf32>
  // CHECK: %[[G1:.*]] = spmd.all_gather %{{.*}} on @mesh ["dp", "tp"] dim 0
  // CHECK: spmd.shard %[[G1]] on @mesh ["tp", "dp"] dim 0
  %g1 = spmd.all_gather %x on @mesh ["dp", "tp"] dim 0 : tensor<4x6xf32> -> tensor<16x6xf32>
  %s1 = spmd.shard %g1 on @mesh ["tp", "dp"] dim 0 : tensor<16x6xf32> -> tensor<4x6xf32>
  // (The all_gather is %g0 again and is deduplicated into it.)
  // CHECK: spmd.shard %[[G0]] on @other ["tp"] dim 0
  %g2 = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<4x6xf32> -> tensor<8x6xf32>
  %s2 = spmd.shard %g2 on @other ["tp"] dim 0 : tensor<8x6xf32> -> tensor<4x6xf32>
  // CHECK: %[[G3:.*]] = spmd.all_gather %{{.*}} on @mesh ["tp"] dim 1
  // CHECK: spmd.shard %[[G3]] on @mesh ["tp"] dim 0
  %g3 = spmd.all_gather %x on @mesh ["tp"] dim 1 : tensor<4x6xf32> -> tensor<4x12xf32>
  %s3 = spmd.shard %g3 on @mesh ["tp"] dim 0 : tensor<4x12xf32> -> tensor<2x12xf32>
  // CHECK: %[[G4:.*]] = spmd.all_gather %{{.*}} on @mesh ["dp"] dim 0
  // CHECK: spmd.shard %[[G4]] {{.*}} : tensor<8x6xf32> -> tensor<?x6xf32>
  %g4 = spmd.all_gather %x on @mesh ["dp"] dim 0 : tensor<4x6xf32> -> tensor<8x6xf32>
  %s4 = spmd.shard %g4 on @mesh ["dp"] dim 0 : tensor<8x6xf32> -> tensor<?x6xf32>
  // CHECK: %[[G5:.*]] = spmd.all_gather %{{.*}} : tensor<?x6xf32> -> tensor<8x6xf32>
  // CHECK: spmd.shard %[[G5]] {{.*}} : tensor<8x6xf32> -> tensor<4x6xf32>
  %g5 = spmd.all_gather %z on @mesh ["dp"] dim 0 : tensor<?x6xf32> -> tensor<8x6xf32>
  %s5 = spmd.shard %g5 on @mesh ["dp"] dim 0 : tensor<8x6xf32> -> tensor<4x6xf32>
  // CHECK: %[[G6:.*]] = spmd.all_gather %{{.*}} : tensor<?x6xf32> -> tensor<?x6xf32>
  // CHECK: spmd.shard %[[G6]] {{.*}} : tensor<?x6xf32> -> tensor<?x?xf32>
  %g6 = spmd.all_gather %z on @mesh ["dp"] dim 0 : tensor<?x6xf32> -> tensor<?x6xf32>
  %s6 = spmd.shard %g6 on @mesh ["dp"] dim 0 : tensor<?x6xf32> -> tensor<?x?xf32>
  "test.use"(%s0, %s1, %s2, %s3, %s4, %s5, %s6) : (tensor<4x6xf32>, tensor<4x6xf32>,
      tensor<4x6xf32>, tensor<2x12xf32>, tensor<?x6xf32>, tensor<4x6xf32>, tensor<?x?xf32>) -> ()
  return
}

// -----

// all_to_all followed by its inverse is the input.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @all_to_all_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[Y:.*]]: tensor<?x8xf32>)
// CHECK-NOT: spmd.
// CHECK: return %[[X]], %[[Y]]
func.func @all_to_all_inverse(%x: tensor<4x16xf32>, %y: tensor<?x8xf32>)
    -> (tensor<4x16xf32>, tensor<?x8xf32>) {
  %a = spmd.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<4x16xf32> -> tensor<16x4xf32>
  %b = spmd.all_to_all %a on @mesh ["tp"] split 0 concat 1 : tensor<16x4xf32> -> tensor<4x16xf32>
  %c = spmd.all_to_all %y on @mesh ["tp"] split 1 concat 0 : tensor<?x8xf32> -> tensor<13x2xf32>
  %d = spmd.all_to_all %c on @mesh ["tp"] split 0 concat 1 : tensor<13x2xf32> -> tensor<?x8xf32>
  return %b, %d : tensor<4x16xf32>, tensor<?x8xf32>
}

// -----

// all_to_all pairs that are not inverses stay.
spmd.mesh @mesh ["dp"=2, "tp"=2]
spmd.mesh @other ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @all_to_all_kept
// CHECK-SAME: (%[[X:.*]]: tensor<4x8x2xf32>)
// The first all_to_all of each pair but the fourth is the same op: one is kept.
// CHECK: %[[A:.*]] = spmd.all_to_all %[[X]] on @mesh ["tp"] split 1 concat 0
// CHECK: %[[B0:.*]] = spmd.all_to_all %[[A]] on @mesh ["tp"] split 1 concat 0
// CHECK: %[[B1:.*]] = spmd.all_to_all %[[A]] on @mesh ["dp"] split 0 concat 1
// CHECK: %[[B2:.*]] = spmd.all_to_all %[[A]] on @other ["tp"] split 0 concat 1
// CHECK: %[[A3:.*]] = spmd.all_to_all %[[X]] on @mesh ["dp", "tp"] split 1 concat 0
// CHECK: %[[B3:.*]] = spmd.all_to_all %[[A3]] on @mesh ["tp", "dp"] split 0 concat 1
// CHECK: %[[B4:.*]] = spmd.all_to_all %[[A]] on @mesh ["tp"] split 0 concat 2
// CHECK: "test.use"(%[[B0]], %[[B1]], %[[B2]], %[[B3]], %[[B4]])
func.func @all_to_all_kept(%x: tensor<4x8x2xf32>) {
  // Same direction twice.
  %a0 = spmd.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<4x8x2xf32> -> tensor<8x4x2xf32>
  %b0 = spmd.all_to_all %a0 on @mesh ["tp"] split 1 concat 0 : tensor<8x4x2xf32> -> tensor<16x2x2xf32>
  // Other axis.
  %a1 = spmd.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<4x8x2xf32> -> tensor<8x4x2xf32>
  %b1 = spmd.all_to_all %a1 on @mesh ["dp"] split 0 concat 1 : tensor<8x4x2xf32> -> tensor<4x8x2xf32>
  // Other mesh.
  %a2 = spmd.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<4x8x2xf32> -> tensor<8x4x2xf32>
  %b2 = spmd.all_to_all %a2 on @other ["tp"] split 0 concat 1 : tensor<8x4x2xf32> -> tensor<4x8x2xf32>
  // Other axis order.
  %a3 = spmd.all_to_all %x on @mesh ["dp", "tp"] split 1 concat 0 : tensor<4x8x2xf32> -> tensor<16x2x2xf32>
  %b3 = spmd.all_to_all %a3 on @mesh ["tp", "dp"] split 0 concat 1 : tensor<16x2x2xf32> -> tensor<4x8x2xf32>
  // Other dims.
  %a4 = spmd.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<4x8x2xf32> -> tensor<8x4x2xf32>
  %b4 = spmd.all_to_all %a4 on @mesh ["tp"] split 0 concat 2 : tensor<8x4x2xf32> -> tensor<4x4x4xf32>
  "test.use"(%b0, %b1, %b2, %b3, %b4) : (tensor<16x2x2xf32>, tensor<4x8x2xf32>, tensor<4x8x2xf32>,
      tensor<4x8x2xf32>, tensor<4x4x4xf32>) -> ()
  return
}
