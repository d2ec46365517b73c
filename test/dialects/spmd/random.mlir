// RUN: spmd-opt %s | spmd-opt | FileCheck %s

// CHECK-LABEL: func.func @draws
// CHECK: spmd.random "uniform"(0.000000e+00, 1.000000e+00) seed %arg0 step %arg1 : tensor<4x8xf32>
// CHECK: spmd.random "normal"(0.000000e+00, 2.000000e-02) seed %arg0 step %arg1 {offset = 32 : i64} : tensor<3x5xbf16>
// CHECK: spmd.random "bernoulli"(9.000000e-01, 0.000000e+00) seed %arg0 step %arg1 : tensor<7xi1>
func.func @draws(%seed: tensor<i64>, %step: tensor<i64>) -> (tensor<4x8xf32>, tensor<3x5xbf16>, tensor<7xi1>) {
  %u = spmd.random "uniform"(0.0, 1.0) seed %seed step %step : tensor<4x8xf32>
  %n = spmd.random "normal"(0.0, 0.02) seed %seed step %step {offset = 32 : i64} : tensor<3x5xbf16>
  %b = spmd.random "bernoulli"(0.9, 0.0) seed %seed step %step : tensor<7xi1>
  return %u, %n, %b : tensor<4x8xf32>, tensor<3x5xbf16>, tensor<7xi1>
}
