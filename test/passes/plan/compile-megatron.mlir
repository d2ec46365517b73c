// RUN: spmd-opt %S/../../e2e/Inputs/megatron_train.mlir --spmd-compile | FileCheck %s

// The Megatron local training step: the all_reduce of the partial output
// becomes one plan collective, in place (the partial sum is dead after it);
// layouts stay on the schedule's buffers for spmd-run.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %arg0: memref<16x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}
// CHECK-SAME: -> (memref<16x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>}
// CHECK-SAME: spmd.plan_arena_bytes = 896
// CHECK: spmd.plan_gemm
// CHECK: %[[Y:.*]] = spmd.plan_buffer offset 128 bytes 128 : memref<4x8xf32>
// CHECK-NEXT: spmd.plan_gemm %{{.*}}, %arg1, %[[Y]] beta 0
// CHECK-NEXT: spmd.plan_all_reduce %[[Y]], %[[Y]] on @mesh ["tp"] sum : memref<4x8xf32>, memref<4x8xf32>
// CHECK-NEXT: spmd.plan_kernel @train_step_kernel_1(%[[Y]], %arg3)
// CHECK-NOT: spmd.plan_all_reduce
// CHECK-COUNT-3: spmd.plan_gemm
// CHECK: return
