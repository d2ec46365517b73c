// RUN: spmd-opt %s -split-input-file -spmd-bucket-collectives | FileCheck %s
// RUN: spmd-opt %s -split-input-file -spmd-bucket-collectives=gather-reduce-bytes=0 | FileCheck %s --check-prefix=OFF
// RUN: spmd-opt %s -split-input-file -spmd-bucket-collectives | spmd-opt -split-input-file -spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=REPORT

// A data-parallel step that gathers activations (a batch too small to pay
// for all-reducing the weight gradients) also sums a loss and a bias
// gradient. Those small all_reduces (one bucket: 5 floats) ride in the
// gather as one more [1, 5] row; each rank sums the 4 gathered rows.
spmd.mesh @dp4 ["dp"=4]

// CHECK-LABEL: func.func @dp_step
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x3xf32>, %[[L:[^:]*]]: tensor<f32>, %[[B:[^:]*]]: tensor<4xf32>)
// CHECK: %[[ROWR:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [1, 5]
// CHECK: %[[ROWX:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [1, 6]
// CHECK: %[[CAT:.*]] = tensor.concat dim(1) %[[ROWR]], %[[ROWX]] : (tensor<1x5xf32>, tensor<1x6xf32>) -> tensor<1x11xf32>
// CHECK: %[[AG:.*]] = spmd.all_gather %[[CAT]] on @dp4 ["dp"] dim 0 : tensor<1x11xf32> -> tensor<4x11xf32>
// CHECK: %[[RROWS:.*]] = tensor.extract_slice %[[AG]][0, 0] [4, 5] [1, 1]
// CHECK: tensor.extract_slice %[[AG]][0, 5] [4, 6] [1, 1]
// CHECK: %[[SUM:.*]] = linalg.reduce ins(%[[RROWS]] : tensor<4x5xf32>) outs(%{{.*}} : tensor<5xf32>) dimensions = [0]
// CHECK-NEXT: (%[[IN:.*]]: f32, %[[ACC:.*]]: f32) {
// CHECK-NEXT: %[[ADD:.*]] = arith.addf %[[IN]], %[[ACC]] : f32
// CHECK-NEXT: linalg.yield %[[ADD]] : f32
// CHECK: tensor.extract_slice %[[SUM]][0] [1] [1]
// CHECK: tensor.extract_slice %[[SUM]][1] [4] [1]
// CHECK-NOT: spmd.all_reduce
// CHECK-NOT: spmd.all_gather
// CHECK: return
// OFF-LABEL: func.func @dp_step
// OFF: spmd.all_reduce {{.*}} : tensor<5xf32>
// OFF: spmd.all_gather
// REPORT: "by_kind": {
// REPORT-NEXT: "all_gather": {"count":1,"bytes":132}
// REPORT-NEXT: },
func.func @dp_step(%x: tensor<2x3xf32>, %loss: tensor<f32>, %bias: tensor<4xf32>)
    -> (tensor<8x3xf32>, tensor<f32>, tensor<4xf32>) {
  %l = spmd.all_reduce %loss on @dp4 ["dp"] sum : tensor<f32>
  %b = spmd.all_reduce %bias on @dp4 ["dp"] sum : tensor<4xf32>
  %g = spmd.all_gather %x on @dp4 ["dp"] dim 0 : tensor<2x3xf32> -> tensor<8x3xf32>
  return %g, %l, %b : tensor<8x3xf32>, tensor<f32>, tensor<4xf32>
}

// -----

// Left alone: a max reduction, another axis, another element type, a
// reduction too large for the 64 KiB of extra bytes (8 ranks, 16 KiB:
// 7 * 6 / 8 * 16 KiB = 84 KiB more than a ring all_reduce).
spmd.mesh @m ["dp"=8, "tp"=2]

// CHECK-LABEL: func.func @apart
// CHECK: spmd.all_reduce %{{.*}} on @m ["dp"] max : tensor<4xf32>
// CHECK: spmd.all_reduce %{{.*}} on @m ["tp"] sum : tensor<4xf32>
// CHECK: spmd.all_reduce %{{.*}} on @m ["dp"] sum : tensor<4xi32>
// CHECK: spmd.all_reduce %{{.*}} on @m ["dp"] sum : tensor<4096xf32>
// CHECK: spmd.all_gather %{{.*}} on @m ["dp"] dim 0 : tensor<1x4xf32> -> tensor<8x4xf32>
// CHECK-NOT: linalg.reduce
// REPORT: "by_kind": {
// REPORT-NEXT: "all_gather": {"count":1,
// REPORT-NEXT: "all_reduce": {"count":4,
func.func @apart(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xi32>, %d: tensor<4096xf32>,
                 %e: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4096xf32>, tensor<8x4xf32>) {
  %ra = spmd.all_reduce %a on @m ["dp"] max : tensor<4xf32>
  %rb = spmd.all_reduce %b on @m ["tp"] sum : tensor<4xf32>
  %rc = spmd.all_reduce %c on @m ["dp"] sum : tensor<4xi32>
  %rd = spmd.all_reduce %d on @m ["dp"] sum : tensor<4096xf32>
  %x = tensor.expand_shape %e [[0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
  %g = spmd.all_gather %x on @m ["dp"] dim 0 : tensor<1x4xf32> -> tensor<8x4xf32>
  return %ra, %rb, %rc, %rd, %g : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4096xf32>, tensor<8x4xf32>
}

// -----

// A sum that feeds the gather's operand cannot ride in it: no position
// is after both operands and before both first uses.
spmd.mesh @dp4b ["dp"=4]

// CHECK-LABEL: func.func @feeds
// CHECK: %[[R:.*]] = spmd.all_reduce
// CHECK: %[[X:.*]] = tensor.expand_shape %[[R]]
// CHECK: spmd.all_gather %[[X]]
func.func @feeds(%a: tensor<4xf32>) -> tensor<4x4xf32> {
  %r = spmd.all_reduce %a on @dp4b ["dp"] sum : tensor<4xf32>
  %x = tensor.expand_shape %r [[0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
  %g = spmd.all_gather %x on @dp4b ["dp"] dim 0 : tensor<1x4xf32> -> tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}
