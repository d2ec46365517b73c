// RUN: spmd-opt %s --split-input-file --spmd-propagate -verify-diagnostics | FileCheck %s

// A sharding survives a reshape only when it splits the outermost dim of its
// group and the torch.chunk boundaries stay the same; otherwise the operand
// is gathered first (constrain to R) and the result is R.

spmd.mesh @tp ["tp"=4]

// 8x16 [S(0)] -> 128: rows 2 per rank = 32 elements per rank. Kept.
// CHECK-LABEL: func.func @collapse_kept
// CHECK-NOT: spmd.constrain
// CHECK: tensor.collapse_shape %arg0 {{.*}} {spmd.layout = #spmd.layout<@tp, [S(0)]>}
func.func @collapse_kept(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> tensor<128xf32> {
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<8x16xf32> into tensor<128xf32>
  return %c : tensor<128xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// 6x4 [S(0)] -> 24: rows 2,2,2,0 give 8,8,8,0 elements, but 24 on 4 is
// 6,6,6,6. Dropped.
// CHECK-LABEL: func.func @collapse_dropped_uneven
// CHECK: %[[G:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: tensor.collapse_shape %[[G]] {{.*}} {spmd.layout = #spmd.layout<@tp, [R]>}
func.func @collapse_dropped_uneven(%a: tensor<6x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> tensor<24xf32> {
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<6x4xf32> into tensor<24xf32>
  return %c : tensor<24xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// The inner dim of a group cannot carry a sharding. Dropped.
// CHECK-LABEL: func.func @collapse_dropped_inner
// CHECK: %[[G:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: tensor.collapse_shape %[[G]] {{.*}} {spmd.layout = #spmd.layout<@tp, [R]>}
func.func @collapse_dropped_inner(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> tensor<128xf32> {
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<8x16xf32> into tensor<128xf32>
  return %c : tensor<128xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// The same with the result declared S(0): moving the operand to S(0)
// (all_to_all) is cheaper than gathering it, and the collapse keeps S(0).
// CHECK-LABEL: func.func @collapse_inner_to_declared
// CHECK: %[[A:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [S(0)]>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[A]] {{.*}} {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// CHECK-NOT: spmd.constrain
// CHECK: return %[[C]]
func.func @collapse_inner_to_declared(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> (tensor<128xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<8x16xf32> into tensor<128xf32>
  return %c : tensor<128xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// Expanding keeps a split on the outermost dim of a group; a dim outside
// any multi-dim group keeps its sharding as is. A group whose other dims
// are 1s is its one other dim: 1x8 from 8 [S(0)] is S(1), not gathered.
// CHECK-LABEL: func.func @expand_kept
// CHECK-NOT: spmd.constrain
// CHECK: tensor.expand_shape %arg0 {{.*}} {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<128xf32> into tensor<8x16xf32>
// CHECK: tensor.expand_shape %arg2 {{.*}} {spmd.layout = #spmd.layout<@tp, [S(2)]>} : tensor<6x8xf32> into tensor<2x3x8xf32>
// CHECK: tensor.expand_shape %arg1 {{.*}} {spmd.layout = #spmd.layout<@tp, [S(1)]>} : tensor<8xf32> into tensor<1x8xf32>
func.func @expand_kept(%a: tensor<128xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                       %b: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                       %c: tensor<6x8xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> (tensor<8x16xf32>, tensor<2x3x8xf32>, tensor<1x8xf32>) {
  %x = tensor.expand_shape %a [[0, 1]] output_shape [8, 16] : tensor<128xf32> into tensor<8x16xf32>
  %z = tensor.expand_shape %c [[0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xf32> into tensor<2x3x8xf32>
  %y = tensor.expand_shape %b [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  return %x, %z, %y : tensor<8x16xf32>, tensor<2x3x8xf32>, tensor<1x8xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// 24 [S(0)] -> 6x4: 6 elements per rank, but 6 rows on 4 are 2,2,2,0. Dropped.
// CHECK-LABEL: func.func @expand_dropped
// CHECK: %[[G:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: tensor.expand_shape %[[G]] {{.*}} {spmd.layout = #spmd.layout<@tp, [R]>}
func.func @expand_dropped(%a: tensor<24xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> tensor<6x4xf32> {
  %x = tensor.expand_shape %a [[0, 1]] output_shape [6, 4] : tensor<24xf32> into tensor<6x4xf32>
  return %x : tensor<6x4xf32>
}

// -----

spmd.mesh @mesh ["a"=2, "b"=2]

// Nested splits: 4x3 [S(0), S(0)] -> 12 is rows 1,1,1,1 = 3,3,3,3 elements,
// and 12 nested on 2x2 is 6 -> 3,3: kept on both axes; 12x3 -> 36 likewise.
// 6x2: the first axis gives rows 3,3 = 6,6 elements = 12 on 2 (kept), the
// second rows 2,1 = 4,2 elements but 6 on 2 is 3,3: dropped on that axis.
// 5x2: rows 3,2 = 6,4 elements but 10 on 2 is 5,5: dropped on both.
// CHECK-LABEL: func.func @collapse_nested
// CHECK-NOT: spmd.constrain
// CHECK: tensor.collapse_shape %arg0 {{.*}} {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>}
// CHECK: tensor.collapse_shape %arg1 {{.*}} {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>}
// CHECK: %[[G:.*]] = spmd.constrain %arg2 to #spmd.layout<@mesh, [S(0), R]>
// CHECK: tensor.collapse_shape %[[G]] {{.*}} {spmd.layout = #spmd.layout<@mesh, [S(0), R]>}
// CHECK: %[[H:.*]] = spmd.constrain %arg3 to #spmd.layout<@mesh, [R, R]>
// CHECK: tensor.collapse_shape %[[H]] {{.*}} {spmd.layout = #spmd.layout<@mesh, [R, R]>}
func.func @collapse_nested(%a: tensor<4x3xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>},
                           %b: tensor<12x3xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>},
                           %c: tensor<6x2xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>},
                           %d: tensor<5x2xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>})
    -> (tensor<12xf32>, tensor<36xf32>, tensor<12xf32>, tensor<10xf32>) {
  %x = tensor.collapse_shape %a [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %y = tensor.collapse_shape %b [[0, 1]] : tensor<12x3xf32> into tensor<36xf32>
  %z = tensor.collapse_shape %c [[0, 1]] : tensor<6x2xf32> into tensor<12xf32>
  %w = tensor.collapse_shape %d [[0, 1]] : tensor<5x2xf32> into tensor<10xf32>
  return %x, %y, %z, %w : tensor<12xf32>, tensor<36xf32>, tensor<12xf32>, tensor<10xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// Backward through a reshape: the unannotated argument takes the split the
// declared result implies, and nothing is resharded.
// CHECK-LABEL: func.func @reshape_backward
// CHECK-SAME: %arg0: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// CHECK-NOT: spmd.constrain
// CHECK: tensor.collapse_shape %arg0 {{.*}} {spmd.layout = #spmd.layout<@tp, [S(0)]>}
func.func @reshape_backward(%a: tensor<8x16xf32>)
    -> (tensor<128xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<8x16xf32> into tensor<128xf32>
  return %c : tensor<128xf32>
}
