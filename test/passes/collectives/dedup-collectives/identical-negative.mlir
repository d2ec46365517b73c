// RUN: spmd-opt %s -split-input-file -spmd-dedup-collectives -allow-unregistered-dialect | FileCheck %s

// Collectives that differ in anything that matters all stay.
spmd.mesh @mesh ["dp"=2, "tp"=4]
spmd.mesh @other ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @different
// CHECK: spmd.all_reduce %{{.*}} on @mesh ["dp"] sum
// CHECK: spmd.all_reduce %{{.*}} on @mesh ["tp"] sum
// CHECK: spmd.all_reduce %{{.*}} on @mesh ["dp", "tp"] sum
// CHECK: spmd.all_reduce %{{.*}} on @mesh ["tp", "dp"] sum
// CHECK: spmd.all_reduce %{{.*}} on @other ["dp"] sum
// CHECK: spmd.all_reduce %{{.*}} on @mesh ["dp"] max
// CHECK: spmd.all_reduce %{{.*}} on @mesh ["dp"] sum
// CHECK-NOT: spmd.all_reduce
func.func @different(%g: tensor<8xf32>, %h: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>,
    tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %r0 = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<8xf32>
  %r1 = spmd.all_reduce %g on @mesh ["tp"] sum : tensor<8xf32>
  %r2 = spmd.all_reduce %g on @mesh ["dp", "tp"] sum : tensor<8xf32>
  %r3 = spmd.all_reduce %g on @mesh ["tp", "dp"] sum : tensor<8xf32>
  %r4 = spmd.all_reduce %g on @other ["dp"] sum : tensor<8xf32>
  %r5 = spmd.all_reduce %g on @mesh ["dp"] max : tensor<8xf32>
  // Different operand.
  %r6 = spmd.all_reduce %h on @mesh ["dp"] sum : tensor<8xf32>
  return %r0, %r1, %r2, %r3, %r4, %r5, %r6 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
      tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Different dims, and the same input with different result types.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @different_dims
// CHECK: spmd.all_gather %{{.*}} dim 0
// CHECK: spmd.all_gather %{{.*}} dim 1
// CHECK: spmd.all_to_all %{{.*}} split 1 concat 0
// CHECK: spmd.all_to_all %{{.*}} split 0 concat 1
// CHECK: spmd.shard %{{.*}} dim 0 : tensor<5x8xf32> -> tensor<?x8xf32>
// CHECK: spmd.shard %{{.*}} dim 0 : tensor<5x8xf32> -> tensor<?x?xf32>
// CHECK: spmd.reduce_scatter %{{.*}} dim 1 sum
// CHECK: spmd.reduce_scatter %{{.*}} dim 1 avg
func.func @different_dims(%x: tensor<4x8xf32>, %y: tensor<5x8xf32>) {
  %g0 = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<4x8xf32> -> tensor<16x8xf32>
  %g1 = spmd.all_gather %x on @mesh ["tp"] dim 1 : tensor<4x8xf32> -> tensor<4x32xf32>
  %a0 = spmd.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<4x8xf32> -> tensor<16x2xf32>
  %a1 = spmd.all_to_all %x on @mesh ["tp"] split 0 concat 1 : tensor<4x8xf32> -> tensor<1x32xf32>
  %s0 = spmd.shard %y on @mesh ["tp"] dim 0 : tensor<5x8xf32> -> tensor<?x8xf32>
  %s1 = spmd.shard %y on @mesh ["tp"] dim 0 : tensor<5x8xf32> -> tensor<?x?xf32>
  %r0 = spmd.reduce_scatter %x on @mesh ["tp"] dim 1 sum : tensor<4x8xf32> -> tensor<4x2xf32>
  %r1 = spmd.reduce_scatter %x on @mesh ["tp"] dim 1 avg : tensor<4x8xf32> -> tensor<4x2xf32>
  "test.use"(%g0, %g1, %a0, %a1, %s0, %s1, %r0, %r1) : (tensor<16x8xf32>, tensor<4x32xf32>,
      tensor<16x2xf32>, tensor<1x32xf32>, tensor<?x8xf32>, tensor<?x?xf32>, tensor<4x2xf32>,
      tensor<4x2xf32>) -> ()
  return
}

// -----

// Neither of two collectives in sibling branches dominates the other, nor
// does one inside a branch dominate a later one outside.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @not_dominating
// CHECK: scf.if
// CHECK: spmd.all_reduce
// CHECK: else
// CHECK: spmd.all_reduce
// CHECK: }
// CHECK: spmd.all_reduce
// CHECK: return
func.func @not_dominating(%g: tensor<8xf32>, %c: i1) -> (tensor<8xf32>, tensor<8xf32>) {
  %y = scf.if %c -> tensor<8xf32> {
    %r1 = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<8xf32>
    scf.yield %r1 : tensor<8xf32>
  } else {
    %r2 = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<8xf32>
    scf.yield %r2 : tensor<8xf32>
  }
  %r3 = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<8xf32>
  return %y, %r3 : tensor<8xf32>, tensor<8xf32>
}
