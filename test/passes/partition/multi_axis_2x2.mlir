// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// DTensor's 2x2 cases: (S0,S1)->(S0,S0) and (S1,S1)->(S1,S2) take one
// all_to_all; (S0,S0)->(S1,S1) one all_to_all over both axes when the flat
// split of 4 equals the nested 2x2 split (8 columns), else two steps.

spmd.mesh @m ["a"=2, "b"=2]

// CHECK-LABEL: func.func @s0s1_to_s0s0
// CHECK-SAME: (%[[X:.*]]: tensor<4x4x8xf32>
// CHECK-NEXT: %[[R:.*]] = spmd.all_to_all %[[X]] on @m ["b"] split 0 concat 1 : tensor<4x4x8xf32> -> tensor<2x8x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @s0s1_to_s0s0(%x: tensor<8x8x8xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>})
    -> (tensor<8x8x8xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(0)]>}) {
  %r = spmd.constrain %x to #spmd.layout<@m, [S(0), S(0)]> : tensor<8x8x8xf32>
  return %r : tensor<8x8x8xf32>
}

// CHECK-LABEL: func.func @s0s0_to_s1s1
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x8xf32>
// CHECK-NEXT: %[[R:.*]] = spmd.all_to_all %[[X]] on @m ["a", "b"] split 1 concat 0 : tensor<2x8x8xf32> -> tensor<8x2x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @s0s0_to_s1s1(%x: tensor<8x8x8xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(0)]>})
    -> (tensor<8x8x8xf32> {spmd.layout = #spmd.layout<@m, [S(1), S(1)]>}) {
  %r = spmd.constrain %x to #spmd.layout<@m, [S(1), S(1)]> : tensor<8x8x8xf32>
  return %r : tensor<8x8x8xf32>
}

// 6 columns: flat 2,2,2,0 but nested 2,1,2,1, so no single all_to_all;
// one all_gather and two local slices (still one collective).
// CHECK-LABEL: func.func @s0s0_to_s1s1_uneven
// CHECK-SAME: (%[[X:.*]]: tensor<2x6x8xf32>
// CHECK-NEXT: %[[A:.*]] = spmd.all_gather %[[X]] on @m ["a", "b"] dim 0 : tensor<2x6x8xf32> -> tensor<8x6x8xf32>
// CHECK-NEXT: %[[B:.*]] = spmd.shard %[[A]] on @m ["a"] dim 1 : tensor<8x6x8xf32> -> tensor<8x3x8xf32>
// CHECK-NEXT: %[[C:.*]] = spmd.shard %[[B]] on @m ["b"] dim 1 : tensor<8x3x8xf32> -> tensor<8x?x8xf32>
// CHECK-NEXT: return %[[C]]
func.func @s0s0_to_s1s1_uneven(%x: tensor<8x6x8xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(0)]>})
    -> (tensor<8x6x8xf32> {spmd.layout = #spmd.layout<@m, [S(1), S(1)]>}) {
  %r = spmd.constrain %x to #spmd.layout<@m, [S(1), S(1)]> : tensor<8x6x8xf32>
  return %r : tensor<8x6x8xf32>
}

// CHECK-LABEL: func.func @s1s1_to_s1s2
// CHECK-SAME: (%[[X:.*]]: tensor<8x2x8xf32>
// CHECK-NEXT: %[[R:.*]] = spmd.all_to_all %[[X]] on @m ["b"] split 2 concat 1 : tensor<8x2x8xf32> -> tensor<8x4x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @s1s1_to_s1s2(%x: tensor<8x8x8xf32> {spmd.layout = #spmd.layout<@m, [S(1), S(1)]>})
    -> (tensor<8x8x8xf32> {spmd.layout = #spmd.layout<@m, [S(1), S(2)]>}) {
  %r = spmd.constrain %x to #spmd.layout<@m, [S(1), S(2)]> : tensor<8x8x8xf32>
  return %r : tensor<8x8x8xf32>
}

// Uneven 5x7x3: still one all_to_all each.
// CHECK-LABEL: func.func @uneven
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x3xf32>
// CHECK-NEXT: %[[A:.*]] = spmd.all_to_all %[[X]] on @m ["b"] split 0 concat 1 {spmd.result_global_type = tensor<5x7x3xf32>, spmd.result_layout = #spmd.layout<@m, [S(0), S(0)]>} : tensor<?x?x3xf32> -> tensor<?x7x3xf32>
// CHECK-NEXT: %[[B:.*]] = spmd.all_to_all %{{.*}} on @m ["b"] split 2 concat 1 {spmd.result_global_type = tensor<5x7x3xf32>, spmd.result_layout = #spmd.layout<@m, [S(1), S(2)]>} : tensor<5x?x3xf32> -> tensor<5x?x?xf32>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @uneven(%x: tensor<5x7x3xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>},
                  %y: tensor<5x7x3xf32> {spmd.layout = #spmd.layout<@m, [S(1), S(1)]>})
    -> (tensor<5x7x3xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(0)]>},
        tensor<5x7x3xf32> {spmd.layout = #spmd.layout<@m, [S(1), S(2)]>}) {
  %r = spmd.constrain %x to #spmd.layout<@m, [S(0), S(0)]> : tensor<5x7x3xf32>
  %s = spmd.constrain %y to #spmd.layout<@m, [S(1), S(2)]> : tensor<5x7x3xf32>
  return %r, %s : tensor<5x7x3xf32>, tensor<5x7x3xf32>
}
