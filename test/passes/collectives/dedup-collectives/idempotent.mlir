// Running the pass twice gives what running it once gives.
// RUN: spmd-opt %s -spmd-dedup-collectives > %t.once.mlir
// RUN: spmd-opt %t.once.mlir -spmd-dedup-collectives > %t.twice.mlir
// RUN: %python -c "import sys; sys.exit(open(sys.argv[1]).read() != open(sys.argv[2]).read())" %t.once.mlir %t.twice.mlir
// RUN: FileCheck %s < %t.once.mlir
// RUN: FileCheck %s < %t.twice.mlir

// A data-parallel step whose gradient is reduced for two uses, a round trip
// and a fusable slice, all at once.
spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[G:.*]]: tensor<16x8xf32>, %[[W:.*]]: tensor<16x8xf32>, %[[H:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[R:.*]] = spmd.all_reduce %[[G]] on @mesh ["dp"] avg
// CHECK-NEXT: %[[N:.*]] = arith.mulf %[[R]], %[[R]]
// CHECK-NEXT: %[[U:.*]] = arith.subf %[[W]], %[[R]]
// CHECK-NEXT: %[[S:.*]] = spmd.reduce_scatter %[[N]] on @mesh ["tp"] dim 0 sum
// CHECK-NEXT: return %[[U]], %[[S]], %[[H]]
func.func @step(%g: tensor<16x8xf32>, %w: tensor<16x8xf32>, %h: tensor<4x8xf32>)
    -> (tensor<16x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %r1 = spmd.all_reduce %g on @mesh ["dp"] avg : tensor<16x8xf32>
  %n = arith.mulf %r1, %r1 : tensor<16x8xf32>
  %r2 = spmd.all_reduce %g on @mesh ["dp"] avg : tensor<16x8xf32>
  %u = arith.subf %w, %r2 : tensor<16x8xf32>
  %t = spmd.all_reduce %n on @mesh ["tp"] sum : tensor<16x8xf32>
  %s = spmd.shard %t on @mesh ["tp"] dim 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  %hg = spmd.all_gather %h on @mesh ["tp"] dim 0 : tensor<4x8xf32> -> tensor<16x8xf32>
  %hs = spmd.shard %hg on @mesh ["tp"] dim 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %u, %s, %hs : tensor<16x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
