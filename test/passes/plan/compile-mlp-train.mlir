// RUN: spmd-opt %S/../../e2e/Inputs/mlp_train.mlir --spmd-compile | FileCheck %s
// RUN: spmd-opt %S/../../e2e/Inputs/mlp_train.mlir --spmd-compile | spmd-opt | FileCheck %s

// Forward, backward and SGD of a 2-layer MLP: 5 GEMMs (transposes as BLAS
// flags, zero fills folded into beta 0), 5 fused kernels (relu, dy, relu',
// two SGD updates), and an arena of 3584 bytes where h's buffer (offset 0)
// is reused for dw1 once h is dead.

// CHECK: module attributes {spmd.plan_version = 1 : i64}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: spmd.plan_arena_bytes = 3584
// CHECK-NEXT: %[[R:.*]] = spmd.plan_buffer offset 3072 bytes 512 : memref<4x32xf32>
// CHECK-NEXT: %[[H:.*]] = spmd.plan_buffer offset 0 bytes 512 : memref<4x32xf32>
// CHECK-NEXT: spmd.plan_gemm %arg2, %arg0, %[[H]] beta 0
// CHECK-NEXT: spmd.plan_kernel @train_step_kernel_0(%[[H]], %[[R]])
// CHECK-NEXT: %[[Y:.*]] = spmd.plan_buffer offset 512 bytes 128 : memref<4x8xf32>
// CHECK-NEXT: spmd.plan_gemm %[[R]], %arg1, %[[Y]] beta 0
// CHECK-NEXT: spmd.plan_kernel @train_step_kernel_1(%[[Y]], %arg3)
// CHECK-NEXT: %[[DW2:.*]] = spmd.plan_buffer offset 2048 bytes 1024 : memref<32x8xf32>
// CHECK-NEXT: spmd.plan_gemm %[[R]], %[[Y]], %[[DW2]] transpose_a beta 0
// CHECK-NEXT: spmd.plan_gemm %[[Y]], %arg1, %[[R]] transpose_b beta 0
// CHECK-NEXT: spmd.plan_kernel @train_step_kernel_2(%[[R]], %[[H]])
// CHECK-NEXT: %[[DW1:.*]] = spmd.plan_buffer offset 0 bytes 2048 : memref<16x32xf32>
// CHECK-NEXT: spmd.plan_gemm %arg2, %[[R]], %[[DW1]] transpose_a beta 0
// CHECK-NEXT: spmd.plan_kernel @train_step_kernel_3(%arg0, %[[DW1]])
// CHECK-NEXT: spmd.plan_kernel @train_step_kernel_4(%arg1, %[[DW2]])
// CHECK-NEXT: return %[[DW1]], %[[DW2]]
// CHECK: func.func @train_step_kernel_0({{.*}}) attributes {spmd.plan_kernel}
// CHECK: arith.maximumf
// CHECK: func.func @train_step_kernel_1
// CHECK: arith.subf
// CHECK: func.func @train_step_kernel_2
// CHECK: arith.cmpf ogt
// CHECK-NEXT: arith.select
// CHECK: func.func @train_step_kernel_3
// CHECK: func.func @train_step_kernel_4
// CHECK-NOT: func.func
