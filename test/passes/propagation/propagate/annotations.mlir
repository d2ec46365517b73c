// RUN: spmd-opt %s --split-input-file --spmd-propagate -verify-diagnostics | FileCheck %s

// User annotations are never overridden; propagation fills in the rest,
// backward as well as forward.

spmd.mesh @tp ["tp"=4]

// Only the result is annotated: the layout flows backward to the arguments
// through the elementwise ops and the matmul (its column split).
// CHECK-LABEL: func.func @backward_only
// CHECK-SAME: %arg0: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK-SAME: %arg1: tensor<16x32xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK-SAME: %arg2: tensor<8x32xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK-NOT: spmd.constrain
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK: arith.addf {{.*}} {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK: math.tanh {{.*}} {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK-NOT: spmd.constrain
func.func @backward_only(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<8x32xf32>)
    -> (tensor<8x32xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %s = arith.addf %h, %b : tensor<8x32xf32>
  %t = math.tanh %s : tensor<8x32xf32>
  return %t : tensor<8x32xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// A layout the user wrote on an op is kept: the operand is moved to it.
// CHECK-LABEL: func.func @op_annotation
// CHECK: %[[A:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [S(1)]>
// CHECK: %[[E:.*]] = math.exp %[[A]] {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK: math.tanh %[[E]] {spmd.layout = #spmd.layout<@tp, [S(1)]>}
func.func @op_annotation(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> tensor<8x16xf32> {
  %e = math.exp %a {spmd.layout = #spmd.layout<@tp, [S(1)]>} : tensor<8x16xf32>
  %t = math.tanh %e : tensor<8x16xf32>
  return %t : tensor<8x16xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// A layout on an op that its rule cannot make (a constant is R): the op
// computes R and a constrain right after it gives every use the user's
// layout.
// CHECK-LABEL: func.func @op_annotation_impossible
// CHECK: %[[C:.*]] = arith.constant {spmd.layout = #spmd.layout<@tp, [R]>} dense<1.000000e+00>
// CHECK-NEXT: %[[S:.*]] = spmd.constrain %[[C]] to #spmd.layout<@tp, [S(0)]>
// CHECK-NEXT: arith.addf %[[S]], %arg0 {spmd.layout = #spmd.layout<@tp, [S(0)]>}
func.func @op_annotation_impossible(%a: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> tensor<8xf32> {
  %c = arith.constant {spmd.layout = #spmd.layout<@tp, [S(0)]>} dense<1.0> : tensor<8xf32>
  %s = arith.addf %c, %a : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// A user constrain is a reshard point: it may disagree with the argument's
// layout, and propagation continues from the constrained layout.
// CHECK-LABEL: func.func @user_constrain
// CHECK: %[[C:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [S(1)]>
// CHECK-NOT: spmd.constrain
// CHECK: math.exp %[[C]] {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK-NOT: spmd.constrain
func.func @user_constrain(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> tensor<8x16xf32> {
  %c = spmd.constrain %a to #spmd.layout<@tp, [S(1)]> : tensor<8x16xf32>
  %e = math.exp %c : tensor<8x16xf32>
  return %e : tensor<8x16xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// Backward through a user constrain: the unknown producer makes the
// constrained layout directly.
// CHECK-LABEL: func.func @constrain_backward
// CHECK-SAME: %arg0: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// CHECK: %[[E:.*]] = math.exp %arg0 {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// CHECK: spmd.constrain %[[E]] to #spmd.layout<@tp, [S(0)]>
func.func @constrain_backward(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = math.exp %a : tensor<8x16xf32>
  %c = spmd.constrain %e to #spmd.layout<@tp, [S(0)]> : tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}
