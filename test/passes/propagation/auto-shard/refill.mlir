// RUN: spmd-opt %s --spmd-auto-shard="device=cpu report=%t.own" -o %t.mlir
// RUN: spmd-opt %t.mlir --pass-pipeline="builtin.module(spmd-propagate, spmd-auto-shard{device=cpu report=%t.again})" -o /dev/null
// RUN: cat %t.own %t.again | FileCheck %s

// One zero fill is the accumulator of two matmuls that need it as S(0) and
// as S(1). spmd-propagate does not reshard it (an all_to_all of 768 KiB
// per rank, which the estimate charged): it fills another empty tensor in
// S(1). The estimate counts that fill, so the chosen plan's estimate is
// the estimate of the program as propagated.

// CHECK: estimated compute [[T:[0-9.]+]] ms ({{.*}} memory-bound), communication 0.000 ms (0 B per rank)
// CHECK: estimated compute [[T]] ms ({{.*}} memory-bound), communication 0.000 ms (0 B per rank)

spmd.mesh @mesh ["x"=4]

func.func @step(%a: tensor<1024x256xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                %b: tensor<256x1024xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
                %c: tensor<1024x256xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
                %d: tensor<256x1024xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>})
    -> (tensor<1024x1024xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
        tensor<1024x1024xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x1024xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<1024x256xf32>, tensor<256x1024xf32>) outs(%z : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %m2 = linalg.matmul ins(%c, %d : tensor<1024x256xf32>, tensor<256x1024xf32>) outs(%z : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %m1, %m2 : tensor<1024x1024xf32>, tensor<1024x1024xf32>
}
