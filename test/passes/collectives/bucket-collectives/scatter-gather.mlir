// RUN: spmd-opt %s -spmd-bucket-collectives | FileCheck %s
// RUN: spmd-opt %s -spmd-bucket-collectives | spmd-opt -spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=REPORT

// An FSDP step on dp=4: three parameter shards gathered, three gradients
// reduce-scattered. Each kind becomes one collective of a concatenation in
// which every rank's chunk is contiguous: the gathers as [1, n] rows
// gathered into [4, 16] (member i's columns are its result, row-major), the
// scatters as [4, n/4] rows scattered from [4, 32]. A gather or scatter
// along a dim with a larger dim before it (an FSDP shard of a weight's
// second dim: its chunks are strided) joins through a transpose of
// [A, k, c] to [k, A, c]: before the scatter, after the gather.
spmd.mesh @dp4 ["dp"=4]

// CHECK-LABEL: func.func @fsdp
// CHECK-SAME: (%[[W1:[^:]*]]: tensor<2x4xf32>, %[[W2:[^:]*]]: tensor<3xf32>, %[[W3:[^:]*]]: tensor<1x1x5xf32>, %[[X:[^:]*]]: tensor<8x4xf32>, %[[W4:[^:]*]]: tensor<8x1xf32>)
// CHECK: %[[C1:.*]] = tensor.collapse_shape %[[W1]] {{\[}}[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
// CHECK: %[[R1:.*]] = tensor.expand_shape %[[C1]] {{\[}}[0, 1]] output_shape [1, 8]
// CHECK: %[[R2:.*]] = tensor.expand_shape %[[W2]] {{\[}}[0, 1]] output_shape [1, 3]
// CHECK: %[[R3:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [1, 5]
// CHECK: %[[C4:.*]] = tensor.collapse_shape %[[W4]] {{\[}}[0, 1]] : tensor<8x1xf32> into tensor<8xf32>
// CHECK: %[[R4:.*]] = tensor.expand_shape %[[C4]] {{\[}}[0, 1]] output_shape [1, 8]
// CHECK: %[[CAT:.*]] = tensor.concat dim(1) %[[R1]], %[[R2]], %[[R3]], %[[R4]] : {{.*}} -> tensor<1x24xf32>
// CHECK: %[[AG:.*]] = spmd.all_gather %[[CAT]] on @dp4 ["dp"] dim 0 : tensor<1x24xf32> -> tensor<4x24xf32>
// CHECK: tensor.extract_slice %[[AG]][0, 0] [4, 8] [1, 1]
// CHECK: tensor.extract_slice %[[AG]][0, 8] [4, 3] [1, 1]
// CHECK: tensor.extract_slice %[[AG]][0, 11] [4, 5] [1, 1]
// CHECK: tensor.extract_slice %[[AG]][0, 16] [4, 8] [1, 1]
// CHECK: %[[T4:.*]] = linalg.transpose ins(%{{.*}} : tensor<4x8x1xf32>) outs(%{{.*}} : tensor<8x4x1xf32>) permutation = [1, 0, 2]
// CHECK: %[[G4F:.*]] = tensor.collapse_shape %[[T4]]
// CHECK: %[[G4:.*]] = tensor.expand_shape %[[G4F]] {{\[}}[0, 1]] output_shape [8, 4]
// CHECK-NOT: spmd.all_gather
// CHECK: %[[M4:.*]] = arith.mulf %[[G4]], %[[X]]
// CHECK: %[[T:.*]] = linalg.transpose ins(%{{.*}} : tensor<8x4x1xf32>) outs(%{{.*}} : tensor<4x8x1xf32>) permutation = [1, 0, 2]
// CHECK: %[[SCAT:.*]] = tensor.concat dim(1) {{.*}} : (tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x5xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x32xf32>
// CHECK: %[[RS:.*]] = spmd.reduce_scatter %[[SCAT]] on @dp4 ["dp"] dim 0 sum : tensor<4x32xf32> -> tensor<1x32xf32>
// CHECK: tensor.extract_slice %[[RS]][0, 0] [1, 8] [1, 1]
// CHECK: tensor.extract_slice %[[RS]][0, 8] [1, 3] [1, 1]
// CHECK: tensor.extract_slice %[[RS]][0, 11] [1, 5] [1, 1]
// CHECK: tensor.extract_slice %[[RS]][0, 16] [1, 8] [1, 1]
// CHECK: tensor.extract_slice %[[RS]][0, 24] [1, 8] [1, 1]
// CHECK-NOT: spmd.reduce_scatter
// CHECK: return

// Bytes are unchanged: (k-1) * 24 * 4 for the gather, (k-1)/k * 128 * 4
// for the scatter.
// REPORT: "by_kind": {
// REPORT-NEXT: "all_gather": {"count":1,"bytes":288}
// REPORT-NEXT: "reduce_scatter": {"count":1,"bytes":384}
func.func @fsdp(%w1: tensor<2x4xf32>, %w2: tensor<3xf32>, %w3: tensor<1x1x5xf32>, %x: tensor<8x4xf32>, %w4: tensor<8x1xf32>)
    -> (tensor<8x4xf32>, tensor<12xf32>, tensor<1x4x5xf32>, tensor<2x4xf32>, tensor<3xf32>, tensor<1x1x5xf32>, tensor<4x2xf32>, tensor<8x1xf32>, tensor<8x4xf32>) {
  %a1 = spmd.all_gather %w1 on @dp4 ["dp"] dim 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  %a2 = spmd.all_gather %w2 on @dp4 ["dp"] dim 0 : tensor<3xf32> -> tensor<12xf32>
  %a3 = spmd.all_gather %w3 on @dp4 ["dp"] dim 1 : tensor<1x1x5xf32> -> tensor<1x4x5xf32>
  %a4 = spmd.all_gather %w4 on @dp4 ["dp"] dim 1 : tensor<8x1xf32> -> tensor<8x4xf32>
  %m4 = arith.mulf %a4, %x : tensor<8x4xf32>
  %g1 = arith.mulf %a1, %x : tensor<8x4xf32>
  %g2 = arith.mulf %a2, %a2 : tensor<12xf32>
  %g3 = arith.mulf %a3, %a3 : tensor<1x4x5xf32>
  %r1 = spmd.reduce_scatter %g1 on @dp4 ["dp"] dim 0 sum : tensor<8x4xf32> -> tensor<2x4xf32>
  %r2 = spmd.reduce_scatter %g2 on @dp4 ["dp"] dim 0 sum : tensor<12xf32> -> tensor<3xf32>
  %r3 = spmd.reduce_scatter %g3 on @dp4 ["dp"] dim 1 sum : tensor<1x4x5xf32> -> tensor<1x1x5xf32>
  %r4 = spmd.reduce_scatter %g1 on @dp4 ["dp"] dim 1 sum : tensor<8x4xf32> -> tensor<8x1xf32>
  %r5 = spmd.reduce_scatter %x on @dp4 ["dp"] dim 0 sum : tensor<8x4xf32> -> tensor<2x4xf32>
  %t = tensor.collapse_shape %r5 [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
  %u = tensor.expand_shape %t [[0, 1]] output_shape [4, 2] : tensor<8xf32> into tensor<4x2xf32>
  return %g1, %g2, %g3, %r1, %r2, %r3, %u, %r4, %m4 : tensor<8x4xf32>, tensor<12xf32>, tensor<1x4x5xf32>, tensor<2x4xf32>, tensor<3xf32>, tensor<1x1x5xf32>, tensor<4x2xf32>, tensor<8x1xf32>, tensor<8x4xf32>
}

