// RUN: spmd-opt %s --split-input-file --spmd-propagate -verify-diagnostics | FileCheck %s

// A sliced, padded or concatenated dim does not keep its sharding; a dim
// taken whole does.

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @extract_slice
// Columns 0..4 of every row: the sharded rows are whole, kept.
// CHECK: tensor.extract_slice %arg0[0, 0] [8, 4] [1, 1] {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// Rows 2..6: gathered first.
// CHECK: %[[G:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: tensor.extract_slice %[[G]][2, 0] [4, 16] [1, 1] {spmd.layout = #spmd.layout<@tp, [R]>}
// A rank-reducing slice (row 0, as select writes it) keeps the sharding of
// the dim it takes whole: columns S(1) become the result's S(0), no
// communication.
// CHECK-NOT: spmd.constrain %arg1
// CHECK: tensor.extract_slice %arg1[0, 0] [1, 16] [1, 1] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8x16xf32> to tensor<16xf32>
func.func @extract_slice(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                         %b: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> (tensor<8x4xf32>, tensor<4x16xf32>, tensor<16xf32>) {
  %x = tensor.extract_slice %a[0, 0] [8, 4] [1, 1] : tensor<8x16xf32> to tensor<8x4xf32>
  %y = tensor.extract_slice %a[2, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
  %z = tensor.extract_slice %b[0, 0] [1, 16] [1, 1] : tensor<8x16xf32> to tensor<16xf32>
  return %x, %y, %z : tensor<8x4xf32>, tensor<4x16xf32>, tensor<16xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @insert_slice
// The source covers all rows: the row split is kept for source, dest and
// result.
// CHECK: tensor.insert_slice %arg0 into %arg1[0, 4] [8, 4] [1, 1] {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// Rows 2..6: dest and source are gathered.
// CHECK: %[[S:.*]] = spmd.constrain %arg2 to #spmd.layout<@tp, [R]>
// CHECK: %[[D:.*]] = spmd.constrain %arg1 to #spmd.layout<@tp, [R]>
// CHECK: tensor.insert_slice %[[S]] into %[[D]][2, 0] [4, 16] [1, 1] {spmd.layout = #spmd.layout<@tp, [R]>}
func.func @insert_slice(%s: tensor<8x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                        %d: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                        %t: tensor<4x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %x = tensor.insert_slice %s into %d[0, 4] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x16xf32>
  %y = tensor.insert_slice %t into %d[2, 0] [4, 16] [1, 1] : tensor<4x16xf32> into tensor<8x16xf32>
  return %x, %y : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @concat
// Concatenating columns of row-split tensors keeps the row split.
// CHECK: tensor.concat dim(1) %arg0, %arg1 {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// Concatenating rows needs the row-split operands gathered.
// CHECK: %[[A:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: %[[B:.*]] = spmd.constrain %arg1 to #spmd.layout<@tp, [R]>
// CHECK: tensor.concat dim(0) %[[A]], %[[B]] {spmd.layout = #spmd.layout<@tp, [R]>}
func.func @concat(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                  %b: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x32xf32>, tensor<16x16xf32>) {
  %x = tensor.concat dim(1) %a, %b : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x32xf32>
  %y = tensor.concat dim(0) %a, %b : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  return %x, %y : tensor<8x32xf32>, tensor<16x16xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @pad
// Padding columns keeps the row split; padding rows does not.
// CHECK: tensor.pad %arg0 low[0, 1] high[0, 1]
// CHECK: } {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8x16xf32> to tensor<8x18xf32>
// CHECK: %[[G:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: tensor.pad %[[G]] low[1, 0] high[1, 0]
// CHECK: } {spmd.layout = #spmd.layout<@tp, [R]>} : tensor<8x16xf32> to tensor<10x16xf32>
func.func @pad(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8x18xf32>, tensor<10x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %x = tensor.pad %a low[0, 1] high[0, 1] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : f32
  } : tensor<8x16xf32> to tensor<8x18xf32>
  %y = tensor.pad %a low[1, 0] high[1, 0] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : f32
  } : tensor<8x16xf32> to tensor<10x16xf32>
  return %x, %y : tensor<8x18xf32>, tensor<10x16xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// tensor.cast keeps the layout (partial included); a constant and
// from_elements are R and are sharded for their consumer by a (local)
// constrain.
// CHECK-LABEL: func.func @cast_and_constants
// CHECK: tensor.cast %arg0 {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<8x4xf32> to tensor<?x4xf32>
// CHECK: %[[C:.*]] = arith.constant {spmd.layout = #spmd.layout<@tp, [R]>} dense<2.000000e+00> : tensor<8xf32>
// CHECK: %[[CS:.*]] = spmd.constrain %[[C]] to #spmd.layout<@tp, [S(0)]>
// CHECK: arith.mulf %arg1, %[[CS]] {spmd.layout = #spmd.layout<@tp, [S(0)]>}
// CHECK: tensor.from_elements {{.*}} {spmd.layout = #spmd.layout<@tp, [R]>} : tensor<2xf32>
func.func @cast_and_constants(%a: tensor<8x4xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>},
                              %b: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                              %s: f32)
    -> (tensor<?x4xf32>, tensor<8xf32>, tensor<2xf32>) {
  %c = tensor.cast %a : tensor<8x4xf32> to tensor<?x4xf32>
  %two = arith.constant dense<2.0> : tensor<8xf32>
  %m = arith.mulf %b, %two : tensor<8xf32>
  %f = tensor.from_elements %s, %s : tensor<2xf32>
  return %c, %m, %f : tensor<?x4xf32>, tensor<8xf32>, tensor<2xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// tensor.dim reads the shape only: a split of another dim (or a partial) is
// fine, a split of the queried dim is gathered first.
// CHECK-LABEL: func.func @dims
// CHECK: tensor.dim %arg0, %c1
// CHECK: tensor.dim %arg1, %c0
// CHECK: %[[G:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: tensor.dim %[[G]], %c0
func.func @dims(%a: tensor<?x?xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                %p: tensor<?x4xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>})
    -> (index, index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d1 = tensor.dim %a, %c1 : tensor<?x?xf32>
  %dp = tensor.dim %p, %c0 : tensor<?x4xf32>
  %d0 = tensor.dim %a, %c0 : tensor<?x?xf32>
  return %d1, %dp, %d0 : index, index, index
}
