// RUN: spmd-opt %s | FileCheck %s
// Printing and parsing again gives the same IR, generic form included.
// RUN: spmd-opt %s | spmd-opt | FileCheck %s
// RUN: spmd-opt %s --mlir-print-op-generic | spmd-opt | FileCheck %s
// RUN: spmd-opt %s --emit-bytecode | spmd-opt | FileCheck %s

// CHECK: spmd.mesh @mesh ["dp"=2, "tp"=4]
spmd.mesh @mesh ["dp"=2, "tp"=4]
// CHECK: spmd.mesh @line ["x"=3]
spmd.mesh @line ["x"=3]

// CHECK-LABEL: func.func @layouts
// CHECK-SAME: {spmd.layout = #spmd.layout<@mesh, [S(0), R]>}
// CHECK-SAME: {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>}
// CHECK-SAME: {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>}
// CHECK-SAME: -> (tensor<13x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), P(sum)]>}
// CHECK-SAME:     tensor<4xf32> {spmd.layout = #spmd.layout<@line, [P(max)]>})
func.func @layouts(%x: tensor<13x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>},
                   %w: tensor<16x32xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(1)]>},
                   %v: tensor<5xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>})
    -> (tensor<13x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), P(sum)]>},
        tensor<4xf32> {spmd.layout = #spmd.layout<@line, [P(max)]>}) {
  // CHECK: spmd.constrain %{{.*}} to #spmd.layout<@mesh, [R, S(0)]> : tensor<13x16xf32>
  %c = spmd.constrain %x to #spmd.layout<@mesh, [R, S(0)]> : tensor<13x16xf32>
  // CHECK: spmd.constrain %{{.*}} to #spmd.layout<@mesh, [P(avg), P(min)]> : tensor<13x16xf32> {note = 1 : i64}
  %d = spmd.constrain %c to #spmd.layout<@mesh, [P(avg), P(min)]> : tensor<13x16xf32> {note = 1}
  %e = tensor.empty() : tensor<13x32xf32>
  // CHECK: tensor.empty() {spmd.layout = #spmd.layout<@mesh, [S(0), S(1)]>}
  %t = tensor.empty() {spmd.layout = #spmd.layout<@mesh, [S(0), S(1)]>} : tensor<13x32xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<13x32xf32>) -> tensor<13x32xf32>
  %m = linalg.matmul ins(%d, %w : tensor<13x16xf32>, tensor<16x32xf32>)
                     outs(%f : tensor<13x32xf32>) -> tensor<13x32xf32>
  %o = tensor.empty() : tensor<4xf32>
  return %m, %o : tensor<13x32xf32>, tensor<4xf32>
}

// Declarations carry layouts too.
// CHECK-LABEL: func.func private @external
// CHECK-SAME: (tensor<8xf32> {spmd.layout = #spmd.layout<@line, [S(0)]>})
func.func private @external(tensor<8xf32> {spmd.layout = #spmd.layout<@line, [S(0)]>})

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<?x16xf32>, %y: tensor<16x32xf32>, %z: tensor<4x16xf32>)
    -> tensor<13x16xf32> {
  // CHECK: spmd.all_gather %{{.*}} on @mesh ["tp"] dim 0 : tensor<?x16xf32> -> tensor<13x16xf32>
  %g = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<?x16xf32> -> tensor<13x16xf32>
  // CHECK: spmd.all_gather %{{.*}} on @mesh ["dp", "tp"] dim 1 : tensor<4x16xf32> -> tensor<4x128xf32>
  %g2 = spmd.all_gather %z on @mesh ["dp", "tp"] dim 1 : tensor<4x16xf32> -> tensor<4x128xf32>
  // CHECK: spmd.all_reduce %{{.*}} on @mesh ["tp"] sum : tensor<16x32xf32>
  %r = spmd.all_reduce %y on @mesh ["tp"] sum : tensor<16x32xf32>
  // CHECK: spmd.all_reduce %{{.*}} on @mesh ["tp", "dp"] max : tensor<16x32xf32>
  %r2 = spmd.all_reduce %r on @mesh ["tp", "dp"] max : tensor<16x32xf32>
  // CHECK: spmd.reduce_scatter %{{.*}} on @mesh ["dp", "tp"] dim 0 avg : tensor<16x32xf32> -> tensor<2x32xf32>
  %s = spmd.reduce_scatter %r2 on @mesh ["dp", "tp"] dim 0 avg : tensor<16x32xf32> -> tensor<2x32xf32>
  // CHECK: spmd.reduce_scatter %{{.*}} on @mesh ["tp"] dim 1 min : tensor<16x30xf32> -> tensor<16x?xf32>
  %p = tensor.empty() : tensor<16x30xf32>
  %s2 = spmd.reduce_scatter %p on @mesh ["tp"] dim 1 min : tensor<16x30xf32> -> tensor<16x?xf32>
  // CHECK: spmd.all_to_all %{{.*}} on @mesh ["tp"] split 1 concat 0 : tensor<16x32xf32> -> tensor<64x8xf32>
  %a = spmd.all_to_all %y on @mesh ["tp"] split 1 concat 0 : tensor<16x32xf32> -> tensor<64x8xf32>
  // CHECK: spmd.shard %{{.*}} on @mesh ["tp"] dim 0 : tensor<13x16xf32> -> tensor<?x16xf32>
  %l = spmd.shard %g on @mesh ["tp"] dim 0 : tensor<13x16xf32> -> tensor<?x16xf32>
  // CHECK: spmd.shard %{{.*}} on @line ["x"] dim 1 : tensor<4x16xf32> -> tensor<4x?xf32>
  %l2 = spmd.shard %z on @line ["x"] dim 1 : tensor<4x16xf32> -> tensor<4x?xf32>
  // Zero-size dims are legal everywhere.
  // CHECK: spmd.all_gather %{{.*}} on @line ["x"] dim 0 : tensor<0x4xf32> -> tensor<0x4xf32>
  %zero = tensor.empty() : tensor<0x4xf32>
  %g3 = spmd.all_gather %zero on @line ["x"] dim 0 : tensor<0x4xf32> -> tensor<0x4xf32>
  // CHECK: spmd.all_reduce %{{.*}} on @line ["x"] sum : tensor<2xbf16>
  %h = tensor.empty() : tensor<2xbf16>
  %h2 = spmd.all_reduce %h on @line ["x"] sum : tensor<2xbf16>
  return %g : tensor<13x16xf32>
}
