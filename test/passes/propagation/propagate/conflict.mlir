// RUN: spmd-opt %s --split-input-file --spmd-propagate=explain -verify-diagnostics | FileCheck %s

// Conflicts are resolved by the communication cost, not by operand order.
// A big operand and a small one disagree on the same mesh axis: the small one
// is resharded, whichever comes first.

spmd.mesh @tp ["tp"=4]

// a (4096x4096) is S(1) = split contraction dim; b (4096x8) is S(1) = split
// output column. Splitting the contraction needs b S(1) -> S(0) (all_to_all
// of 128 KiB); splitting the columns needs a gathered (64 MiB).
// CHECK-LABEL: func.func @big_first
// With explain, the reason is also kept on the constrain for spmd-partition.
// CHECK: %[[B:.*]] = spmd.constrain %arg1 to #spmd.layout<@tp, [S(0)]> : tensor<4096x8xf32> {reason = "reshard from #spmd.layout<@tp, [S(1)]> to #spmd.layout<@tp, [S(0)]> for operand 1 of 'linalg.matmul'"}
// CHECK-NOT: spmd.constrain
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>} ins(%arg0, %[[B]] :
func.func @big_first(%a: tensor<4096x4096xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                     %b: tensor<4096x8xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> tensor<4096x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4096x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4096x8xf32>) -> tensor<4096x8xf32>
  // expected-remark @below {{reshard from #spmd.layout<@tp, [S(1)]> to #spmd.layout<@tp, [S(0)]> for operand 1 of 'linalg.matmul'}}
  %c = linalg.matmul ins(%a, %b : tensor<4096x4096xf32>, tensor<4096x8xf32>)
                     outs(%f : tensor<4096x8xf32>) -> tensor<4096x8xf32>
  return %c : tensor<4096x8xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// The same with the small operand first: its own layout (S(0): split rows of
// the result) would need the big operand gathered; the cost model instead
// moves the small one to S(1) and splits the contraction.
// CHECK-LABEL: func.func @small_first
// CHECK: %[[S:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [S(1)]> : tensor<8x4096xf32>
// CHECK-NOT: spmd.constrain
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>} ins(%[[S]], %arg1 :
func.func @small_first(%s: tensor<8x4096xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                       %a: tensor<4096x4096xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> tensor<8x4096xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4096xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4096xf32>) -> tensor<8x4096xf32>
  // expected-remark @below {{reshard from #spmd.layout<@tp, [S(0)]> to #spmd.layout<@tp, [S(1)]> for operand 0 of 'linalg.matmul'}}
  %c = linalg.matmul ins(%s, %a : tensor<8x4096xf32>, tensor<4096x4096xf32>)
                     outs(%f : tensor<8x4096xf32>) -> tensor<8x4096xf32>
  return %c : tensor<8x4096xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// Elementwise add of S(0) and S(1): one all_to_all of one operand, not two
// all_gathers.
// CHECK-LABEL: func.func @add_s0_s1
// CHECK: %[[B:.*]] = spmd.constrain %arg1 to #spmd.layout<@tp, [S(0)]>
// CHECK-NOT: spmd.constrain
// CHECK: arith.addf %arg0, %[[B]] {spmd.layout = #spmd.layout<@tp, [S(0)]>}
func.func @add_s0_s1(%a: tensor<64x64xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                     %b: tensor<64x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> tensor<64x64xf32> {
  // expected-remark @below {{reshard from #spmd.layout<@tp, [S(1)]> to #spmd.layout<@tp, [S(0)]> for operand 1 of 'arith.addf'}}
  %c = arith.addf %a, %b : tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// A value that a later consumer wants elsewhere: the declared result S(1) of
// a small tensor does not pull the big computation off S(0); the result is
// resharded at the return.
// CHECK-LABEL: func.func @result_disagrees
// CHECK: %[[E:.*]] = math.exp %arg0 {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// CHECK: %[[C:.*]] = spmd.constrain %[[E]] to #spmd.layout<@tp, [S(1)]>
// CHECK: return %[[C]]
func.func @result_disagrees(%a: tensor<64x64xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<64x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}) {
  %e = math.exp %a : tensor<64x64xf32>
  // expected-remark @below {{reshard from #spmd.layout<@tp, [S(0)]> to #spmd.layout<@tp, [S(1)]> for result 0 of the function}}
  return %e : tensor<64x64xf32>
}
