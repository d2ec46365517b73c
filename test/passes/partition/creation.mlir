// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// Values created in a layout: shards are computed locally, a replicated
// value already is a valid P(avg|max|min) term, and P(sum) needs
// spmd.partial_from_replicated unless the value is 0.

spmd.mesh @m ["a"=2, "b"=2]

// CHECK-LABEL: func.func @fills
func.func @fills() -> (tensor<8x6xf32> {spmd.layout = #spmd.layout<@m, [P(sum), S(1)]>},
                       tensor<8x6xf32> {spmd.layout = #spmd.layout<@m, [P(max), S(0)]>},
                       tensor<8x6xf32> {spmd.layout = #spmd.layout<@m, [P(sum), P(sum)]>}) {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  // CHECK: %[[E1:.*]] = tensor.empty() : tensor<8x3xf32>
  // CHECK-NEXT: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<8x3xf32>) -> tensor<8x3xf32>
  // CHECK-NEXT: %[[P1:.*]] = spmd.partial_from_replicated %[[F1]] on @m ["a"] sum : tensor<8x3xf32>
  %e1 = tensor.empty() {spmd.layout = #spmd.layout<@m, [P(sum), S(1)]>} : tensor<8x6xf32>
  %f1 = linalg.fill {spmd.layout = #spmd.layout<@m, [P(sum), S(1)]>} ins(%one : f32) outs(%e1 : tensor<8x6xf32>) -> tensor<8x6xf32>
  // CHECK-NEXT: %[[E2:.*]] = tensor.empty() : tensor<4x6xf32>
  // CHECK-NEXT: %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<4x6xf32>) -> tensor<4x6xf32>
  %e2 = tensor.empty() {spmd.layout = #spmd.layout<@m, [P(max), S(0)]>} : tensor<8x6xf32>
  %f2 = linalg.fill {spmd.layout = #spmd.layout<@m, [P(max), S(0)]>} ins(%one : f32) outs(%e2 : tensor<8x6xf32>) -> tensor<8x6xf32>
  // A zero fill is a valid P(sum) on every rank as it is.
  // CHECK-NEXT: %[[E3:.*]] = tensor.empty() : tensor<8x6xf32>
  // CHECK-NEXT: %[[F3:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E3]] : tensor<8x6xf32>) -> tensor<8x6xf32>
  // CHECK-NEXT: return %[[P1]], %[[F2]], %[[F3]]
  %e3 = tensor.empty() {spmd.layout = #spmd.layout<@m, [P(sum), P(sum)]>} : tensor<8x6xf32>
  %f3 = linalg.fill {spmd.layout = #spmd.layout<@m, [P(sum), P(sum)]>} ins(%zero : f32) outs(%e3 : tensor<8x6xf32>) -> tensor<8x6xf32>
  return %f1, %f2, %f3 : tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<8x6xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>},
                           tensor<4xf32> {spmd.layout = #spmd.layout<@m, [P(sum), R]>},
                           tensor<4xf32> {spmd.layout = #spmd.layout<@m, [R, R]>}) {
  // CHECK: %[[C1:.*]] = arith.constant dense<2.000000e+00> : tensor<4x3xf32>
  %c1 = arith.constant {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} dense<2.0> : tensor<8x6xf32>
  // CHECK: %[[C2:.*]] = arith.constant dense<3.000000e+00> : tensor<4xf32>
  // CHECK-NEXT: %[[P2:.*]] = spmd.partial_from_replicated %[[C2]] on @m ["a"] sum : tensor<4xf32>
  %c2 = arith.constant {spmd.layout = #spmd.layout<@m, [P(sum), R]>} dense<3.0> : tensor<4xf32>
  // CHECK: %[[C3:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
  %c3 = arith.constant {spmd.layout = #spmd.layout<@m, [R, R]>} dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  // CHECK: return %[[C1]], %[[P2]], %[[C3]]
  return %c1, %c2, %c3 : tensor<8x6xf32>, tensor<4xf32>, tensor<4xf32>
}

// R -> P(max) needs no op at all.
// CHECK-LABEL: func.func @to_max
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32>
// CHECK-NEXT: return %[[X]]
func.func @to_max(%x: tensor<4xf32> {spmd.layout = #spmd.layout<@m, [R, R]>})
    -> (tensor<4xf32> {spmd.layout = #spmd.layout<@m, [P(max), P(max)]>}) {
  %c = spmd.constrain %x to #spmd.layout<@m, [P(max), P(max)]> : tensor<4xf32>
  return %c : tensor<4xf32>
}

// Functions that name no layout are left alone.
// CHECK-LABEL: func.func @plain
// CHECK-NEXT: return %{{.*}} : tensor<4xf32>
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
