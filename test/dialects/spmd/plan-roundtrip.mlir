// RUN: spmd-opt %s | FileCheck %s
// RUN: spmd-opt %s | spmd-opt | FileCheck %s
// RUN: spmd-opt %s --mlir-print-op-generic | spmd-opt | FileCheck %s
// RUN: spmd-opt %s --emit-bytecode | spmd-opt | FileCheck %s

// CHECK: module attributes {spmd.plan_version = 1 : i64}
module attributes {spmd.plan_version = 1 : i64} {
  spmd.mesh @mesh ["dp"=2, "tp"=4]

  // CHECK-LABEL: func.func @step
  // CHECK-SAME: spmd.plan_arena_bytes = 4096
  func.func @step(%a: memref<8x4xf32>, %b: memref<16x4xf32>, %n: index)
      -> memref<8x16xf32> attributes {spmd.plan_arena_bytes = 4096 : i64} {
    // CHECK: %[[C:.*]] = spmd.plan_buffer offset 0 bytes 512 : memref<8x16xf32>
    %c = spmd.plan_buffer offset 0 bytes 512 : memref<8x16xf32>
    // CHECK: spmd.plan_buffer[%{{.*}}] offset 512 bytes 256 : memref<?x16xf32>
    %d = spmd.plan_buffer [%n] offset 512 bytes 256 : memref<?x16xf32>
    // CHECK: spmd.plan_gemm %{{.*}}, %{{.*}}, %[[C]] transpose_b beta 0 : memref<8x4xf32>, memref<16x4xf32>, memref<8x16xf32>
    spmd.plan_gemm %a, %b, %c transpose_b beta 0 : memref<8x4xf32>, memref<16x4xf32>, memref<8x16xf32>
    // CHECK: spmd.plan_kernel @relu(%[[C]]) : memref<8x16xf32>
    spmd.plan_kernel @relu(%c) : memref<8x16xf32>
    // CHECK: spmd.plan_all_reduce %[[C]], %[[C]] on @mesh ["tp"] sum : memref<8x16xf32>, memref<8x16xf32>
    spmd.plan_all_reduce %c, %c on @mesh ["tp"] sum : memref<8x16xf32>, memref<8x16xf32>
    %g = spmd.plan_buffer offset 1024 bytes 2048 : memref<32x16xf32>
    // CHECK: spmd.plan_all_gather %[[C]], %{{.*}} on @mesh ["tp"] dim 0
    spmd.plan_all_gather %c, %g on @mesh ["tp"] dim 0 : memref<8x16xf32>, memref<32x16xf32>
    %s = spmd.plan_buffer offset 3072 bytes 128 : memref<2x16xf32>
    // CHECK: spmd.plan_reduce_scatter %[[C]], %{{.*}} on @mesh ["tp"] dim 0 max
    spmd.plan_reduce_scatter %c, %s on @mesh ["tp"] dim 0 max : memref<8x16xf32>, memref<2x16xf32>
    %t = spmd.plan_buffer offset 3200 bytes 512 : memref<32x4xf32>
    // CHECK: spmd.plan_all_to_all %[[C]], %{{.*}} on @mesh ["tp"] split 1 concat 0
    spmd.plan_all_to_all %c, %t on @mesh ["tp"] split 1 concat 0 : memref<8x16xf32>, memref<32x4xf32>
    // CHECK: spmd.plan_shard %[[C]], %{{.*}} on @mesh ["dp", "tp"] dim 0
    spmd.plan_shard %c, %s on @mesh ["dp", "tp"] dim 0 : memref<8x16xf32>, memref<2x16xf32>
    // CHECK: spmd.plan_partial_from_replicated %[[C]], %[[C]] on @mesh ["tp"] sum
    spmd.plan_partial_from_replicated %c, %c on @mesh ["tp"] sum : memref<8x16xf32>, memref<8x16xf32>
    // CHECK: spmd.plan_chunk_size @mesh ["dp", "tp"] of 13 : index
    %k = spmd.plan_chunk_size @mesh ["dp", "tp"] of 13 : index
    // CHECK: spmd.plan_copy %[[C]], %[[C]]
    spmd.plan_copy %c, %c : memref<8x16xf32>, memref<8x16xf32>
    return %c : memref<8x16xf32>
  }

  // CHECK-LABEL: func.func @relu
  // CHECK-SAME: spmd.plan_kernel
  func.func @relu(%x: memref<8x16xf32>) attributes {spmd.plan_kernel} {
    return
  }
}
