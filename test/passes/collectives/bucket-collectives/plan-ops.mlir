// RUN: spmd-opt %s -spmd-bucket-collectives | FileCheck %s
// RUN: spmd-opt %s --spmd-partition-pipeline -o /dev/null

// A plan's collectives (spmd.plan_*, on memrefs, no results) implement the
// collective interface too; bucketing read their operand as a tensor and
// segfaulted (found by bench/fuzz/mutate.py on plan-roundtrip.mlir). They
// are left alone.

spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @step
// CHECK: spmd.plan_all_reduce %[[C:.*]], %[[C]] on @mesh ["tp"] sum
// CHECK: spmd.plan_all_reduce %[[C]], %[[C]] on @mesh ["tp"] sum
func.func @step(%a: memref<8x16xf32>) -> memref<8x16xf32> attributes {spmd.plan_arena_bytes = 1024 : i64} {
  %c = spmd.plan_buffer offset 0 bytes 512 : memref<8x16xf32>
  spmd.plan_copy %a, %c : memref<8x16xf32>, memref<8x16xf32>
  spmd.plan_all_reduce %c, %c on @mesh ["tp"] sum : memref<8x16xf32>, memref<8x16xf32>
  spmd.plan_all_reduce %c, %c on @mesh ["tp"] sum : memref<8x16xf32>, memref<8x16xf32>
  return %c : memref<8x16xf32>
}
