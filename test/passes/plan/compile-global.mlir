// spmd-compile partitions a GLOBAL annotated program first (partition=auto:
// layouts, no collectives, no spmd.global_type); partition=off compiles it
// unpartitioned (the --check reference); partition=on forces it.
// RUN: spmd-opt %s --spmd-compile | FileCheck %s --check-prefix=AUTO
// RUN: spmd-opt %s --spmd-compile=partition=on | FileCheck %s --check-prefix=AUTO
// RUN: spmd-opt %s --spmd-compile=partition=off | FileCheck %s --check-prefix=OFF
// RUN: not spmd-opt %s --spmd-compile=partition=sometimes 2>&1 | FileCheck %s --check-prefix=BAD

spmd.mesh @mesh ["tp"=4]

// AUTO-LABEL: func.func @mlp(
// AUTO-SAME: %{{.*}}: memref<8x16xf32> {spmd.global_type = tensor<8x16xf32>, spmd.layout = #spmd.layout<@mesh, [R]>}
// AUTO-SAME: %{{.*}}: memref<16x16xf32> {spmd.global_type = tensor<16x64xf32>, spmd.layout = #spmd.layout<@mesh, [S(1)]>}
// AUTO-SAME: %{{.*}}: memref<16x16xf32> {spmd.global_type = tensor<64x16xf32>, spmd.layout = #spmd.layout<@mesh, [S(0)]>}
// AUTO: spmd.plan_gemm
// AUTO: spmd.plan_gemm
// AUTO: spmd.plan_all_reduce {{.*}} on @mesh ["tp"] sum : memref<8x16xf32>
// AUTO-NOT: spmd.plan_all_reduce
// AUTO: return

// OFF-LABEL: func.func @mlp(
// OFF-SAME: memref<8x16xf32>
// OFF-SAME: memref<16x64xf32>
// OFF-SAME: memref<64x16xf32>
// OFF-NOT: spmd.plan_all
// OFF-NOT: spmd.constrain
// OFF: return

// BAD: Cannot find option named 'sometimes'
func.func @mlp(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
               %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>},
               %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %c = spmd.constrain %y to #spmd.layout<@mesh, [R]> : tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}
