// RUN: spmd-opt %s -spmd-bucket-collectives | FileCheck %s
// RUN: spmd-opt %s -spmd-bucket-collectives=cap-bytes=0 | FileCheck %s
// RUN: spmd-opt %s -spmd-bucket-collectives=cap-bytes=128 | FileCheck %s --check-prefix=CAP128
// RUN: spmd-opt %s -spmd-bucket-collectives=cap-bytes=192 | FileCheck %s --check-prefix=CAP192
// RUN: spmd-opt %s -spmd-bucket-collectives=cap-bytes=8 | FileCheck %s --check-prefix=CAP8
// A second run finds nothing more to do.
// RUN: spmd-opt %s -spmd-bucket-collectives | spmd-opt -spmd-bucket-collectives | FileCheck %s
// The report sees one collective instead of five, with the same bytes:
// 2(k-1)/k * 320 = 480.
// RUN: spmd-opt %s -spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=BEFORE
// RUN: spmd-opt %s -spmd-bucket-collectives -spmd-comm-report -o /dev/null | FileCheck %s --check-prefix=AFTER
// The first bucket of a kind is small (DDP: 1 MiB) so it starts early:
// with first-cap-bytes=64 it holds the first gradient alone, the other four
// share one bucket; first-cap-bytes=0 means cap-bytes.
// RUN: spmd-opt %s -spmd-bucket-collectives=first-cap-bytes=64 | FileCheck %s --check-prefix=FIRST
// RUN: spmd-opt %s -spmd-bucket-collectives=first-cap-bytes=0 | FileCheck %s
// FIRST: spmd.all_reduce %{{.*}} on @dp4 ["dp"] avg : tensor<4x4xf32>
// FIRST: spmd.all_reduce %{{.*}} on @dp4 ["dp"] avg : tensor<64xf32>
// FIRST-NOT: spmd.all_reduce
// BEFORE: "count": 5,
// BEFORE-NEXT: "bytes": 480,
// AFTER: {"op":"all_reduce","mesh":"dp4","axes":["dp"],"group_size":4,"reduction":"avg","element_type":"f32","input_shape":[80],"result_shape":[80],"dynamic":false,"bytes":480}
// AFTER: "count": 1,
// AFTER-NEXT: "bytes": 480,

// A data-parallel backward: five gradients of 64 bytes each, computed one
// after the other, each averaged over "dp", and used by the optimizer at the
// end. One bucket holds all 320 bytes; with a cap, ceil(320/cap) buckets.
spmd.mesh @dp4 ["dp"=4]

// CHECK-LABEL: func.func @backward
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x4xf32>, %[[Y:[^:]*]]: tensor<16xf32>, %[[Z:[^:]*]]: tensor<2x2x4xf32>,
// CHECK-SAME: %[[V:[^:]*]]: tensor<16x1xf32>, %[[W:[^:]*]]: tensor<16xf32>)
// CHECK-NEXT: %[[G1:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[G2:.*]] = arith.mulf %[[Y]], %[[Y]]
// CHECK-NEXT: %[[G3:.*]] = arith.mulf %[[Z]], %[[Z]]
// CHECK-NEXT: %[[G4:.*]] = arith.mulf %[[V]], %[[V]]
// CHECK-NEXT: %[[G5:.*]] = arith.mulf %[[W]], %[[W]]
// The fused all_reduce comes right after the last gradient, members in
// program order.
// CHECK-NEXT: %[[F1:.*]] = tensor.collapse_shape %[[G1]] {{\[}}[0, 1]] : tensor<4x4xf32> into tensor<16xf32>
// CHECK-NEXT: %[[F3:.*]] = tensor.collapse_shape %[[G3]] {{\[}}[0, 1, 2]] : tensor<2x2x4xf32> into tensor<16xf32>
// CHECK-NEXT: %[[F4:.*]] = tensor.collapse_shape %[[G4]] {{\[}}[0, 1]] : tensor<16x1xf32> into tensor<16xf32>
// CHECK-NEXT: %[[C:.*]] = tensor.concat dim(0) %[[F1]], %[[G2]], %[[F3]], %[[F4]], %[[G5]] : {{.*}} -> tensor<80xf32>
// CHECK-NEXT: %[[R:.*]] = spmd.all_reduce %[[C]] on @dp4 ["dp"] avg : tensor<80xf32>
// CHECK-NEXT: %[[S1:.*]] = tensor.extract_slice %[[R]][0] [16] [1] : tensor<80xf32> to tensor<16xf32>
// CHECK-NEXT: %[[R1:.*]] = tensor.expand_shape %[[S1]] {{\[}}[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
// CHECK-NEXT: %[[R2:.*]] = tensor.extract_slice %[[R]][16] [16] [1] : tensor<80xf32> to tensor<16xf32>
// CHECK-NEXT: %[[S3:.*]] = tensor.extract_slice %[[R]][32] [16] [1] : tensor<80xf32> to tensor<16xf32>
// CHECK-NEXT: %[[R3:.*]] = tensor.expand_shape %[[S3]] {{\[}}[0, 1, 2]] output_shape [2, 2, 4] : tensor<16xf32> into tensor<2x2x4xf32>
// CHECK-NEXT: %[[S4:.*]] = tensor.extract_slice %[[R]][48] [16] [1] : tensor<80xf32> to tensor<16xf32>
// CHECK-NEXT: %[[R4:.*]] = tensor.expand_shape %[[S4]] {{\[}}[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
// CHECK-NEXT: %[[R5:.*]] = tensor.extract_slice %[[R]][64] [16] [1] : tensor<80xf32> to tensor<16xf32>
// CHECK-NEXT: %[[U1:.*]] = arith.subf %[[X]], %[[R1]]
// CHECK-NEXT: %[[U2:.*]] = arith.subf %[[Y]], %[[R2]]
// CHECK-NEXT: %[[U3:.*]] = arith.subf %[[Z]], %[[R3]]
// CHECK-NEXT: arith.subf %[[V]], %[[R4]]
// CHECK-NEXT: arith.subf %[[W]], %[[R5]]
// CHECK-NOT: spmd.all_reduce

// 5 x 64 bytes under a cap of 128: 2 + 2 + 1.
// CAP128-LABEL: func.func @backward
// CAP128: spmd.all_reduce %{{.*}} : tensor<32xf32>
// CAP128: spmd.all_reduce %{{.*}} : tensor<32xf32>
// CAP128: spmd.all_reduce %{{.*}} : tensor<16xf32>
// CAP128-NOT: spmd.all_reduce

// Under 192: 3 + 2.
// CAP192-LABEL: func.func @backward
// CAP192: spmd.all_reduce %{{.*}} : tensor<48xf32>
// CAP192: spmd.all_reduce %{{.*}} : tensor<32xf32>
// CAP192-NOT: spmd.all_reduce

// A cap below one gradient leaves every all_reduce alone.
// CAP8-LABEL: func.func @backward
// CAP8-NOT: tensor.concat
// CAP8: spmd.all_reduce %{{.*}} : tensor<4x4xf32>
// CAP8: spmd.all_reduce %{{.*}} : tensor<16xf32>
// CAP8: spmd.all_reduce %{{.*}} : tensor<2x2x4xf32>
// CAP8: spmd.all_reduce %{{.*}} : tensor<16x1xf32>
// CAP8: spmd.all_reduce %{{.*}} : tensor<16xf32>
// CAP8-NOT: tensor.concat
func.func @backward(%x: tensor<4x4xf32>, %y: tensor<16xf32>, %z: tensor<2x2x4xf32>,
                    %v: tensor<16x1xf32>, %w: tensor<16xf32>)
    -> (tensor<4x4xf32>, tensor<16xf32>, tensor<2x2x4xf32>, tensor<16x1xf32>, tensor<16xf32>) {
  %g1 = arith.mulf %x, %x : tensor<4x4xf32>
  %r1 = spmd.all_reduce %g1 on @dp4 ["dp"] avg : tensor<4x4xf32>
  %g2 = arith.mulf %y, %y : tensor<16xf32>
  %r2 = spmd.all_reduce %g2 on @dp4 ["dp"] avg : tensor<16xf32>
  %g3 = arith.mulf %z, %z : tensor<2x2x4xf32>
  %r3 = spmd.all_reduce %g3 on @dp4 ["dp"] avg : tensor<2x2x4xf32>
  %g4 = arith.mulf %v, %v : tensor<16x1xf32>
  %r4 = spmd.all_reduce %g4 on @dp4 ["dp"] avg : tensor<16x1xf32>
  %g5 = arith.mulf %w, %w : tensor<16xf32>
  %r5 = spmd.all_reduce %g5 on @dp4 ["dp"] avg : tensor<16xf32>
  %u1 = arith.subf %x, %r1 : tensor<4x4xf32>
  %u2 = arith.subf %y, %r2 : tensor<16xf32>
  %u3 = arith.subf %z, %r3 : tensor<2x2x4xf32>
  %u4 = arith.subf %v, %r4 : tensor<16x1xf32>
  %u5 = arith.subf %w, %r5 : tensor<16xf32>
  return %u1, %u2, %u3, %u4, %u5
      : tensor<4x4xf32>, tensor<16xf32>, tensor<2x2x4xf32>, tensor<16x1xf32>, tensor<16xf32>
}
