// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// Reshapes keep a sharding on the outermost dim of a group when the chunk
// boundaries agree on every rank; slices take sharded dims whole and keep
// their offsets and sizes elsewhere. Local shapes are rewritten per shard.

spmd.mesh @tp ["tp"=4]

// 8x4 with rows on 4 (2 each) collapses to 32 elements (8 each) and expands
// back: the chunk boundaries agree.
// CHECK-LABEL: func.func @reshapes
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x4xf32>
// CHECK-NEXT: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1]] : tensor<2x4xf32> into tensor<8xf32>
// CHECK-NEXT: %[[E:.*]] = tensor.expand_shape %[[C]] {{\[\[}}0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
// CHECK-NEXT: return %[[C]], %[[E]] : tensor<8xf32>, tensor<2x4xf32>
func.func @reshapes(%x: tensor<8x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<32xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
        tensor<8x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %c = tensor.collapse_shape %x [[0, 1]] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8x4xf32> into tensor<32xf32>
  %e = tensor.expand_shape %c [[0, 1]] output_shape [8, 4] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<32xf32> into tensor<8x4xf32>
  return %c, %e : tensor<32xf32>, tensor<8x4xf32>
}

// 13 rows on 4 (4, 4, 4, 1): the sharded dim is alone in its group, the
// other dim is reshaped; the dynamic local size comes from spmd.local_size.
// CHECK-LABEL: func.func @uneven_reshapes
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x4xf32>
// CHECK-NEXT: %[[N:.*]] = spmd.local_size @tp ["tp"] of 13 : index
// CHECK-NEXT: %[[E:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1, 2]] output_shape [%[[N]], 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
// CHECK-NEXT: %[[C:.*]] = tensor.collapse_shape %[[E]] {{\[\[}}0], [1, 2]] : tensor<?x2x2xf32> into tensor<?x4xf32>
// CHECK-NEXT: return %[[E]], %[[C]] : tensor<?x2x2xf32>, tensor<?x4xf32>
func.func @uneven_reshapes(%x: tensor<13x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<13x2x2xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
        tensor<13x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [13, 2, 2] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<13x4xf32> into tensor<13x2x2xf32>
  %c = tensor.collapse_shape %e [[0], [1, 2]] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<13x2x2xf32> into tensor<13x4xf32>
  return %e, %c : tensor<13x2x2xf32>, tensor<13x4xf32>
}

// A reshape of a partial value stays partial (no communication).
// CHECK-LABEL: func.func @partial_reshape
// CHECK-NEXT: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK-NEXT: return
func.func @partial_reshape(%x: tensor<2x3xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>})
    -> (tensor<6xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>}) {
  %c = tensor.collapse_shape %x [[0, 1]] {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<2x3xf32> into tensor<6xf32>
  return %c : tensor<6xf32>
}

// Rows sharded, columns sliced: the row size becomes the local one.
// CHECK-LABEL: func.func @slices
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x8xf32> {{[^}]*}}}, %[[Y:[^:]*]]: tensor<?x2xf32>
// CHECK: %[[D:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x8xf32>
// CHECK-NEXT: %[[S:.*]] = tensor.extract_slice %[[X]][0, 2] [%[[D]], 4] [1, 1] : tensor<?x8xf32> to tensor<?x4xf32>
// CHECK: %[[D2:.*]] = tensor.dim %[[Y]], %{{.*}} : tensor<?x2xf32>
// CHECK-NEXT: %[[I:.*]] = tensor.insert_slice %[[Y]] into %[[X]][0, 6] [%[[D2]], 2] [1, 1] : tensor<?x2xf32> into tensor<?x8xf32>
// CHECK-NEXT: return %[[S]], %[[I]]
func.func @slices(%x: tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                  %y: tensor<13x2xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<13x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
        tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %s = tensor.extract_slice %x[0, 2] [13, 4] [1, 1] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<13x8xf32> to tensor<13x4xf32>
  %i = tensor.insert_slice %y into %x[0, 6] [13, 2] [1, 1] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<13x2xf32> into tensor<13x8xf32>
  return %s, %i : tensor<13x4xf32>, tensor<13x8xf32>
}

// Evenly sharded rows keep static local sizes.
// CHECK-LABEL: func.func @even_slice
// CHECK-NEXT: tensor.extract_slice %{{.*}}[0, 1] [2, 3] [1, 1] : tensor<2x8xf32> to tensor<2x3xf32>
func.func @even_slice(%x: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x3xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %s = tensor.extract_slice %x[0, 1] [8, 3] [1, 1] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8x8xf32> to tensor<8x3xf32>
  return %s : tensor<8x3xf32>
}

// concat and pad along replicated dims keep the sharding of the others.
// CHECK-LABEL: func.func @concat_pad
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x4xf32>
// CHECK-NEXT: %[[C:.*]] = tensor.concat dim(1) %[[X]], %[[X]] : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
// CHECK: %[[P:.*]] = tensor.pad %[[C]] low[0, 1] high[0, 2]
// CHECK: } : tensor<?x8xf32> to tensor<?x11xf32>
// CHECK-NEXT: return %[[C]], %[[P]]
func.func @concat_pad(%x: tensor<13x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<13x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
        tensor<13x11xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %c = tensor.concat dim(1) %x, %x {spmd.layout = #spmd.layout<@tp, [S(0)]>} : (tensor<13x4xf32>, tensor<13x4xf32>) -> tensor<13x8xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %c low[0, 1] high[0, 2] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : f32
  } {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<13x8xf32> to tensor<13x11xf32>
  return %c, %p : tensor<13x8xf32>, tensor<13x11xf32>
}

// tensor.dim of an unsharded dim and tensor.cast in the same layout.
// CHECK-LABEL: func.func @dim_cast
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x4xf32>
// CHECK: %[[D:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x4xf32>
// CHECK-NEXT: %[[C:.*]] = tensor.cast %[[X]] : tensor<?x4xf32> to tensor<?x4xf32>
// CHECK-NEXT: return %[[D]], %[[C]] : index, tensor<?x4xf32>
func.func @dim_cast(%x: tensor<13x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (index, tensor<13x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %one = arith.constant 1 : index
  %d = tensor.dim %x, %one : tensor<13x4xf32>
  %c = tensor.cast %x {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<13x4xf32> to tensor<13x4xf32>
  return %d, %c : index, tensor<13x4xf32>
}
