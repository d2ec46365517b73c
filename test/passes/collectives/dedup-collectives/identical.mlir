// RUN: spmd-opt %s -split-input-file -spmd-dedup-collectives -allow-unregistered-dialect | FileCheck %s

// Data-parallel gradient used twice: one all_reduce, both uses read it.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @same_value
// CHECK-SAME: (%[[G:.*]]: tensor<16x32xf32>
// CHECK: %[[R:.*]] = spmd.all_reduce %[[G]] on @mesh ["dp"] sum : tensor<16x32xf32>
// CHECK-NOT: spmd.all_reduce
// CHECK: %[[A:.*]] = arith.addf %[[R]], %[[R]]
// CHECK: return %[[A]], %[[R]]
func.func @same_value(%g: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>) {
  %r1 = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<16x32xf32>
  %r2 = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<16x32xf32>
  %a = arith.addf %r1, %r2 : tensor<16x32xf32>
  %r3 = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<16x32xf32>
  return %a, %r3 : tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// Identical collectives far apart in the block, with other ops between them,
// and of every kind.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @every_kind
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>
// CHECK-COUNT-1: spmd.all_gather
// CHECK-COUNT-1: spmd.reduce_scatter
// CHECK-COUNT-1: spmd.all_to_all
// CHECK-COUNT-1: spmd.shard
// The dead addf is left alone: the pass touches collectives only.
// CHECK-NEXT: arith.addf %[[X]], %[[X]]
// CHECK-NOT: spmd.
// CHECK: return
func.func @every_kind(%x: tensor<4x16xf32>) -> (tensor<16x16xf32>, tensor<1x16xf32>,
    tensor<16x4xf32>, tensor<1x16xf32>) {
  %g1 = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %s1 = spmd.reduce_scatter %x on @mesh ["tp"] dim 0 sum : tensor<4x16xf32> -> tensor<1x16xf32>
  %a1 = spmd.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<4x16xf32> -> tensor<16x4xf32>
  %l1 = spmd.shard %x on @mesh ["tp"] dim 0 : tensor<4x16xf32> -> tensor<1x16xf32>
  %e = arith.addf %x, %x : tensor<4x16xf32>
  %g2 = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %s2 = spmd.reduce_scatter %x on @mesh ["tp"] dim 0 sum : tensor<4x16xf32> -> tensor<1x16xf32>
  %a2 = spmd.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<4x16xf32> -> tensor<16x4xf32>
  %l2 = spmd.shard %x on @mesh ["tp"] dim 0 : tensor<4x16xf32> -> tensor<1x16xf32>
  %gs = arith.addf %g1, %g2 : tensor<16x16xf32>
  %ss = arith.addf %s1, %s2 : tensor<1x16xf32>
  %as = arith.addf %a1, %a2 : tensor<16x4xf32>
  %ls = arith.addf %l1, %l2 : tensor<1x16xf32>
  return %gs, %ss, %as, %ls : tensor<16x16xf32>, tensor<1x16xf32>, tensor<16x4xf32>, tensor<1x16xf32>
}

// -----

// Deduplicating the first level makes the second level identical too.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @chain
// CHECK: spmd.all_gather
// CHECK-NEXT: spmd.all_reduce
// CHECK-NEXT: return %[[R:.*]], %[[R]]
func.func @chain(%x: tensor<4x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %g1 = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %g2 = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %r1 = spmd.all_reduce %g1 on @mesh ["dp"] sum : tensor<16x16xf32>
  %r2 = spmd.all_reduce %g2 on @mesh ["dp"] sum : tensor<16x16xf32>
  return %r1, %r2 : tensor<16x16xf32>, tensor<16x16xf32>
}

// -----

// The first one dominates a later one in a nested region: replaced.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @nested_dominated
// CHECK: %[[R:.*]] = spmd.all_reduce
// CHECK: scf.if
// CHECK-NOT: spmd.all_reduce
// CHECK: scf.yield %[[R]]
func.func @nested_dominated(%g: tensor<8xf32>, %c: i1) -> tensor<8xf32> {
  %r1 = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<8xf32>
  %y = scf.if %c -> tensor<8xf32> {
    %r2 = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<8xf32>
    scf.yield %r2 : tensor<8xf32>
  } else {
    scf.yield %r1 : tensor<8xf32>
  }
  return %y : tensor<8xf32>
}
