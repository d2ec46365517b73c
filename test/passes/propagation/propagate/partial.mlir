// RUN: spmd-opt %s --split-input-file --spmd-propagate -verify-diagnostics | FileCheck %s

// Partial flows through linear ops and is reduced only where a nonlinear
// consumer needs it.

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @linear_chain
// CHECK-NOT: spmd.constrain
// CHECK: %[[S:.*]] = arith.addf %arg0, %arg1 {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK: %[[N:.*]] = arith.negf %[[S]] {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK: %[[M:.*]] = arith.mulf %[[N]], %arg2 {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK: %[[D:.*]] = arith.divf %[[M]], %arg2 {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[D]] {{.*}} {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK: %[[MM:.*]] = linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>} ins(%[[T]], %arg2
// Only the nonlinear exp needs the sum.
// CHECK: %[[R:.*]] = spmd.constrain %[[MM]] to #spmd.layout<@tp, [R]>
// CHECK: math.exp %[[R]] {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK-NOT: spmd.constrain
func.func @linear_chain(%a: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>},
                        %b: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>},
                        %w: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>})
    -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %s = arith.addf %a, %b : tensor<8x8xf32>
  %n = arith.negf %s : tensor<8x8xf32>
  %m = arith.mulf %n, %w : tensor<8x8xf32>
  %d = arith.divf %m, %w : tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %t = linalg.transpose ins(%d : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<8x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %mm = linalg.matmul ins(%t, %w : tensor<8x8xf32>, tensor<8x8xf32>)
                      outs(%f2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %x = math.exp %mm : tensor<8x8xf32>
  return %x : tensor<8x8xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// Products and quotients of partials are not linear: one side is reduced.
// Each of p and q has several users, one of which needs it reduced anyway
// (max, div): it is reduced once, before all its users, and every result is
// computed replicated: 2 reductions (keeping p * q and p + r partial would
// reduce those results again at the return: 4).
// CHECK-LABEL: func.func @nonlinear
// CHECK: %[[RP:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: %[[RQ:.*]] = spmd.constrain %arg1 to #spmd.layout<@tp, [R]>
// CHECK-NOT: spmd.constrain
// CHECK: arith.mulf %[[RP]], %[[RQ]] {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK: arith.divf %arg2, %[[RQ]] {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK: arith.maximumf %[[RP]], %arg2 {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK: arith.addf %[[RP]], %arg2 {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK-NOT: spmd.constrain
// CHECK: return
func.func @nonlinear(%p: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>},
                     %q: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>},
                     %r: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>})
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %pq = arith.mulf %p, %q : tensor<8x8xf32>
  %rq = arith.divf %r, %q : tensor<8x8xf32>
  %mx = arith.maximumf %p, %r : tensor<8x8xf32>
  %s = arith.addf %p, %r : tensor<8x8xf32>
  return %pq, %rq, %mx, %s : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// Reductions over a split dim give the partial of their combiner; an
// unknown combiner (mulf) cannot be split, so its input is gathered.
// CHECK-LABEL: func.func @reductions
// CHECK: linalg.fill {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK: linalg.reduce {{.*}} {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// -inf is the identity of max: the init is made P(max) directly. The shared
// tensor.empty is not resharded: each use gets its own.
// CHECK-NOT: spmd.constrain
// CHECK: %[[E1:.*]] = tensor.empty() {spmd.layout = #spmd.layout<@tp, [P(max)]>}
// CHECK: linalg.fill {spmd.layout = #spmd.layout<@tp, [P(max)]>} ins(%{{.*}} : f32) outs(%[[E1]] :
// CHECK: linalg.reduce {{.*}} {spmd.layout = #spmd.layout<@tp, [P(max)]>}
// CHECK-NOT: spmd.constrain
// CHECK: %[[E2:.*]] = tensor.empty() {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK: linalg.fill {spmd.layout = #spmd.layout<@tp, [R]>} ins(%{{.*}} : f32) outs(%[[E2]] :
// CHECK: %[[G:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: linalg.reduce ins(%[[G]] {{.*}} {spmd.layout = #spmd.layout<@tp, [R]>}
// A reduction over the unsplit dim keeps the split of the other.
// CHECK: linalg.reduce ins(%arg1 {{.*}} {spmd.layout = #spmd.layout<@tp, [S(0)]>}
func.func @reductions(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                      %b: tensor<16x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.reduce ins(%a : tensor<8x16xf32>) outs(%f0 : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %f1 = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %max = linalg.reduce ins(%a : tensor<8x16xf32>) outs(%f1 : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.maximumf %in, %acc : f32
      linalg.yield %s : f32
    }
  %f2 = linalg.fill ins(%one : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %prod = linalg.reduce ins(%a : tensor<8x16xf32>) outs(%f2 : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.mulf %in, %acc : f32
      linalg.yield %s : f32
    }
  %e16 = tensor.empty() : tensor<16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e16 : tensor<16xf32>) -> tensor<16xf32>
  %rows = linalg.reduce ins(%b : tensor<16x8xf32>) outs(%f3 : tensor<16xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %sum, %max, %prod, %rows : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// An init that is not the identity of the reduction (here 1.0 for a sum)
// cannot be produced partial by the fill: it is made R and then P(sum).
// CHECK-LABEL: func.func @non_identity_init
// CHECK: %[[F:.*]] = linalg.fill {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK: %[[P:.*]] = spmd.constrain %[[F]] to #spmd.layout<@tp, [P(sum)]>
// CHECK: linalg.reduce ins(%arg0 {{.*}} outs(%[[P]] {{.*}} {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
func.func @non_identity_init(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> tensor<8xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.reduce ins(%a : tensor<8x16xf32>) outs(%f : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %sum : tensor<8xf32>
}
