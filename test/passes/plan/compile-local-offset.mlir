// RUN: spmd-opt %S/../../e2e/Inputs/onehot_embedding.mlir --spmd-compile | FileCheck %s

// A kernel whose partitioned body reads this rank's chunk offset
// (spmd.local_offset) takes it as a trailing index argument: the schedule
// keeps the offset op (the runtime evaluates it per rank) and passes it after
// the buffers; the kernel adds it to its linalg.index. Here the kernel is the
// embedding's one-hot operand, over the rank's vocabulary rows
// (spmd-one-hot-matmul), and the lookup a GEMM.

// CHECK-LABEL: func.func @embed(
// CHECK: %[[OFF:.*]] = spmd.local_offset @mesh ["dp", "tp"] of 13 : index
// CHECK: spmd.plan_kernel @[[K:embed_kernel_[0-9]+]](%arg0, %[[OH:.*]], %[[OFF]]) : memref<3xi64>, memref<3x?xf32>, index
// CHECK: spmd.plan_gemm %[[OH]], %arg1, %{{.*}} beta 0 : memref<3x?xf32>, memref<?x8xf32>, memref<3x8xf32>
// CHECK: spmd.plan_all_reduce
// CHECK: func.func @[[K]](%{{.*}}: memref<3xi64>, %{{.*}}: memref<3x?xf32>, %[[A:.*]]: index) attributes {spmd.plan_kernel}
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: arith.addi %[[I]], %[[A]] : index
