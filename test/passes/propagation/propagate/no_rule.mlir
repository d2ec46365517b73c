// RUN: spmd-opt %s --split-input-file --allow-unregistered-dialect --spmd-propagate -verify-diagnostics | FileCheck %s

// An op without a sharding rule is computed replicated: its tensor operands
// are constrained to R, its results are R, and a remark names it.

spmd.mesh @tp ["tp"=4]

func.func private @external(tensor<8x16xf32>) -> tensor<8x16xf32>

// CHECK-LABEL: func.func @call_and_unknown
// CHECK: %[[E:.*]] = math.exp %arg0 {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// CHECK: %[[R:.*]] = spmd.constrain %[[E]] to #spmd.layout<@tp, [R]>
// CHECK: %[[C:.*]] = call @external(%[[R]]) {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK: %[[F:.*]] = "foo.bar"(%[[C]], %[[R]]) {spmd.layout = #spmd.layout<@tp, [R]>}
// The result of a no-rule op is R; the consumer shards it locally again.
// CHECK: %[[S:.*]] = spmd.constrain %[[F]] to #spmd.layout<@tp, [S(0)]>
// CHECK: math.tanh %[[S]] {spmd.layout = #spmd.layout<@tp, [S(0)]>}
func.func @call_and_unknown(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %e = math.exp %a : tensor<8x16xf32>
  // expected-remark @below {{spmd-propagate: no sharding rule for 'func.call'; computing it replicated}}
  %c = func.call @external(%e) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // expected-remark @below {{spmd-propagate: no sharding rule for 'foo.bar'; computing it replicated}}
  %f = "foo.bar"(%c, %e) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %t = math.tanh %f : tensor<8x16xf32>
  return %t : tensor<8x16xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// Ops that touch no tensor need no rule and get no remark; a function with no
// annotation at all is left alone.
// CHECK-LABEL: func.func @scalars
// CHECK-NOT: spmd.layout
// CHECK: return
func.func @scalars(%a: f32, %b: tensor<4xf32>) -> f32 {
  %c = arith.addf %a, %a : f32
  %d = "foo.baz"(%b) : (tensor<4xf32>) -> tensor<4xf32>
  return %c : f32
}
