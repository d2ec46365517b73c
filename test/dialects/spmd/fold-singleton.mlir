// RUN: spmd-opt %s --canonicalize | FileCheck %s

// A collective over mesh axes of size 1 moves nothing: it folds to its
// input (a one-GPU run of a program exported for a mesh "dp"=1 kept 97
// all_reduces per step, each staged through the host).
spmd.mesh @mesh ["dp"=1, "tp"=2]

// CHECK-LABEL: func.func @singleton(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>
// CHECK-NOT: spmd.
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @singleton(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %r = spmd.all_reduce %x on @mesh ["dp"] sum : tensor<4x8xf32>
  %g = spmd.all_gather %x on @mesh ["dp"] dim 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = spmd.reduce_scatter %x on @mesh ["dp"] dim 1 avg : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = spmd.all_to_all %x on @mesh ["dp"] split 1 concat 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %l = spmd.shard %x on @mesh ["dp"] dim 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %p = spmd.partial_from_replicated %x on @mesh ["dp"] sum : tensor<4x8xf32>
  return %r, %g, %s, %a, %l, %p : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// Kept: a group of two, and a gather whose result type differs from its
// input's (a dynamic local dim).
// CHECK-LABEL: func.func @kept(
// CHECK: spmd.all_reduce %{{.*}} on @mesh ["dp", "tp"] sum
// CHECK: spmd.all_gather %{{.*}} on @mesh ["dp"] dim 0 : tensor<?x8xf32> -> tensor<4x8xf32>
func.func @kept(%x: tensor<4x8xf32>, %y: tensor<?x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %r = spmd.all_reduce %x on @mesh ["dp", "tp"] sum : tensor<4x8xf32>
  %g = spmd.all_gather %y on @mesh ["dp"] dim 0 : tensor<?x8xf32> -> tensor<4x8xf32>
  return %r, %g : tensor<4x8xf32>, tensor<4x8xf32>
}
