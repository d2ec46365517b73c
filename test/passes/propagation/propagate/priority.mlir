// RUN: spmd-opt %s --spmd-propagate | FileCheck %s

// Choices that need no communication are made first; a conflict is decided
// once the layouts around it are known, cheapest first. Here the matmul
// could keep w's column split (gathering x, the smaller operand), but the
// declared result is split on the batch: deciding the matmul first (program
// order) would gather x and then all_to_all the result; with free
// propagation first the batch split reaches the matmul's result through the
// relu, and the matmul gathers w only.
spmd.mesh @tp ["tp"=4]
// CHECK-LABEL: func.func @conflict
// CHECK: %[[W:.*]] = spmd.constrain %arg1 to #spmd.layout<@tp, [R]>
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@tp, [S(0)]>} ins(%arg0, %[[W]] :
// CHECK-NOT: spmd.constrain
// CHECK: return
func.func @conflict(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                    %w: tensor<16x32xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> (tensor<8x32xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = arith.maximumf %m, %f : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
