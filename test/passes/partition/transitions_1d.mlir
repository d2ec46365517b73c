// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// Every 1-D transition between R, S(0), S(1) and P(sum) of a 13x8 tensor
// on tp=4 (rows 4, 4, 4, 1): one step each, S/P -> P(sum) two.

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @from_R
// CHECK-SAME: (%[[X:.*]]: tensor<13x8xf32>
func.func @from_R(%x: tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>})
    -> (tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>}) {
  // CHECK: %[[R_S0:.*]] = spmd.shard %[[X]] on @tp ["tp"] dim 0 : tensor<13x8xf32> -> tensor<?x8xf32>
  %S0 = spmd.constrain %x to #spmd.layout<@tp, [S(0)]> : tensor<13x8xf32>
  // CHECK: %[[R_S1:.*]] = spmd.shard %[[X]] on @tp ["tp"] dim 1 : tensor<13x8xf32> -> tensor<13x2xf32>
  %S1 = spmd.constrain %x to #spmd.layout<@tp, [S(1)]> : tensor<13x8xf32>
  // CHECK: %[[R_P:.*]] = spmd.partial_from_replicated %[[X]] on @tp ["tp"] sum : tensor<13x8xf32>
  %P = spmd.constrain %x to #spmd.layout<@tp, [P(sum)]> : tensor<13x8xf32>
  // CHECK-NEXT: return %[[X]], %[[R_S0]], %[[R_S1]], %[[R_P]]
  return %x, %S0, %S1, %P : tensor<13x8xf32>, tensor<13x8xf32>, tensor<13x8xf32>, tensor<13x8xf32>
}

// CHECK-LABEL: func.func @from_S0
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>
func.func @from_S0(%x: tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>}) {
  // CHECK: %[[S0_R:.*]] = spmd.all_gather %[[X]] on @tp ["tp"] dim 0 : tensor<?x8xf32> -> tensor<13x8xf32>
  %R = spmd.constrain %x to #spmd.layout<@tp, [R]> : tensor<13x8xf32>
  // CHECK: %[[S0_S1:.*]] = spmd.all_to_all %[[X]] on @tp ["tp"] split 1 concat 0 : tensor<?x8xf32> -> tensor<13x2xf32>
  %S1 = spmd.constrain %x to #spmd.layout<@tp, [S(1)]> : tensor<13x8xf32>
  // CHECK: %[[G:.*]] = spmd.all_gather %[[X]] on @tp ["tp"] dim 0 : tensor<?x8xf32> -> tensor<13x8xf32>
  // CHECK-NEXT: %[[S0_P:.*]] = spmd.partial_from_replicated %[[G]] on @tp ["tp"] sum : tensor<13x8xf32>
  %P = spmd.constrain %x to #spmd.layout<@tp, [P(sum)]> : tensor<13x8xf32>
  // CHECK-NEXT: return %[[S0_R]], %[[X]], %[[S0_S1]], %[[S0_P]]
  return %R, %x, %S1, %P : tensor<13x8xf32>, tensor<13x8xf32>, tensor<13x8xf32>, tensor<13x8xf32>
}

// CHECK-LABEL: func.func @from_S1
// CHECK-SAME: (%[[X:.*]]: tensor<13x2xf32>
func.func @from_S1(%x: tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> (tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>}) {
  // CHECK: %[[S1_R:.*]] = spmd.all_gather %[[X]] on @tp ["tp"] dim 1 : tensor<13x2xf32> -> tensor<13x8xf32>
  %R = spmd.constrain %x to #spmd.layout<@tp, [R]> : tensor<13x8xf32>
  // CHECK: %[[S1_S0:.*]] = spmd.all_to_all %[[X]] on @tp ["tp"] split 0 concat 1 : tensor<13x2xf32> -> tensor<?x8xf32>
  %S0 = spmd.constrain %x to #spmd.layout<@tp, [S(0)]> : tensor<13x8xf32>
  // CHECK: %[[G:.*]] = spmd.all_gather %[[X]] on @tp ["tp"] dim 1 : tensor<13x2xf32> -> tensor<13x8xf32>
  // CHECK-NEXT: %[[S1_P:.*]] = spmd.partial_from_replicated %[[G]] on @tp ["tp"] sum : tensor<13x8xf32>
  %P = spmd.constrain %x to #spmd.layout<@tp, [P(sum)]> : tensor<13x8xf32>
  // CHECK-NEXT: return %[[S1_R]], %[[S1_S0]], %[[X]], %[[S1_P]]
  return %R, %S0, %x, %P : tensor<13x8xf32>, tensor<13x8xf32>, tensor<13x8xf32>, tensor<13x8xf32>
}

// CHECK-LABEL: func.func @from_P
// CHECK-SAME: (%[[X:.*]]: tensor<13x8xf32>
func.func @from_P(%x: tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>})
    -> (tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}, tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>}) {
  // CHECK: %[[P_R:.*]] = spmd.all_reduce %[[X]] on @tp ["tp"] sum : tensor<13x8xf32>
  %R = spmd.constrain %x to #spmd.layout<@tp, [R]> : tensor<13x8xf32>
  // CHECK: %[[P_S0:.*]] = spmd.reduce_scatter %[[X]] on @tp ["tp"] dim 0 sum : tensor<13x8xf32> -> tensor<?x8xf32>
  %S0 = spmd.constrain %x to #spmd.layout<@tp, [S(0)]> : tensor<13x8xf32>
  // CHECK: %[[P_S1:.*]] = spmd.reduce_scatter %[[X]] on @tp ["tp"] dim 1 sum : tensor<13x8xf32> -> tensor<13x2xf32>
  %S1 = spmd.constrain %x to #spmd.layout<@tp, [S(1)]> : tensor<13x8xf32>
  // CHECK-NEXT: return %[[P_R]], %[[P_S0]], %[[P_S1]], %[[X]]
  return %R, %S0, %S1, %x : tensor<13x8xf32>, tensor<13x8xf32>, tensor<13x8xf32>, tensor<13x8xf32>
}
