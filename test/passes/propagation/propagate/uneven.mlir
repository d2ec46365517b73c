// RUN: spmd-opt %s --split-input-file --spmd-propagate -verify-diagnostics | FileCheck %s

// Uneven sizes propagate like even ones: 13 rows on 4 (4, 4, 4, 1).

spmd.mesh @dp ["dp"=4]

// CHECK-LABEL: func.func @rows_13_on_4
// CHECK-NOT: spmd.constrain
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@dp, [S(0)]>} {{.*}} -> tensor<13x32xf32>
// CHECK: math.tanh {{.*}} {spmd.layout = #spmd.layout<@dp, [S(0)]>} : tensor<13x32xf32>
// CHECK: %[[S:.*]] = linalg.reduce {{.*}} {spmd.layout = #spmd.layout<@dp, [S(0)]>}
// CHECK-NOT: spmd.constrain
// CHECK: return %[[S]]
func.func @rows_13_on_4(%x: tensor<13x16xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                        %w: tensor<16x32xf32> {spmd.layout = #spmd.layout<@dp, [R]>})
    -> (tensor<13xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<13x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<13x32xf32>) -> tensor<13x32xf32>
  %h = linalg.matmul ins(%x, %w : tensor<13x16xf32>, tensor<16x32xf32>)
                     outs(%f : tensor<13x32xf32>) -> tensor<13x32xf32>
  %t = math.tanh %h : tensor<13x32xf32>
  %e2 = tensor.empty() : tensor<13xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<13xf32>) -> tensor<13xf32>
  %s = linalg.reduce ins(%t : tensor<13x32xf32>) outs(%f2 : tensor<13xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  return %s : tensor<13xf32>
}

// -----

// 5 rows nested over a 2x2 mesh ([S(0), S(0)]: 2, 1, 1, 1), and 3 rows on 4
// (an empty shard): the same layouts flow through.

spmd.mesh @mesh ["a"=2, "b"=2]

// CHECK-LABEL: func.func @rows_5_on_2x2
// CHECK-SAME: -> (tensor<5x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>})
// CHECK-NOT: spmd.constrain
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>}
// CHECK: %[[R:.*]] = arith.addf {{.*}} {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>} : tensor<5x8xf32>
// CHECK-NOT: spmd.constrain
// CHECK: return %[[R]]
func.func @rows_5_on_2x2(%x: tensor<5x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>},
                         %w: tensor<8x8xf32> {spmd.layout = #spmd.layout<@mesh, [R, R]>})
    -> tensor<5x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x8xf32>) -> tensor<5x8xf32>
  %h = linalg.matmul ins(%x, %w : tensor<5x8xf32>, tensor<8x8xf32>)
                     outs(%f : tensor<5x8xf32>) -> tensor<5x8xf32>
  %r = arith.addf %h, %x : tensor<5x8xf32>
  return %r : tensor<5x8xf32>
}

// -----

spmd.mesh @dp ["dp"=4]

// The unannotated operand takes the layout of the annotated one.
// CHECK-LABEL: func.func @rows_3_on_4
// CHECK-SAME: %arg1: tensor<3x8xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>}
// CHECK-NOT: spmd.constrain
// CHECK: %[[R:.*]] = arith.mulf {{.*}} {spmd.layout = #spmd.layout<@dp, [S(0)]>} : tensor<3x8xf32>
// CHECK-NOT: spmd.constrain
// CHECK: return %[[R]]
func.func @rows_3_on_4(%x: tensor<3x8xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                       %y: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %r = arith.mulf %x, %y : tensor<3x8xf32>
  return %r : tensor<3x8xf32>
}
