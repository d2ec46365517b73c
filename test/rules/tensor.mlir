// RUN: spmd-opt %s --spmd-print-op-rules --verify-diagnostics -o /dev/null
// Rules of tensor ops (rules/TensorRules.cpp). Data movement commutes with
// every partial kind. A trailing `}` of each rule is left out of the
// expectations (`}}` would end them).
func.func @creation(%n: index, %f: f32) -> (tensor<4x?xf32>, tensor<4xf32>, tensor<2xf32>) {
  // expected-remark @below {{sharding rule: (_) -> ([i, j]) {i=4, j=?} partial={(): sum|avg|max|min}}
  %e = tensor.empty(%n) : tensor<4x?xf32>
  // expected-remark @below {{sharding rule: (_) -> ([-]) {}}
  %s = tensor.splat %f : tensor<4xf32>
  // expected-remark @below {{sharding rule: (_, _) -> ([-]) {}}
  %fe = tensor.from_elements %f, %f : tensor<2xf32>
  return %e, %s, %fe : tensor<4x?xf32>, tensor<4xf32>, tensor<2xf32>
}
func.func @shape(%x: tensor<8x6xf32>) -> (tensor<?x6xf32>, index) {
  %c0 = arith.constant 0 : index
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, j]) {i=8, j=6} partial={(0): sum|avg|max|min}}
  %cast = tensor.cast %x : tensor<8x6xf32> to tensor<?x6xf32>
  // expected-remark @below {{sharding rule: ([-, j], _) -> (_) {i=8, j=6} partial={(0): sum|avg|max|min}}
  %d = tensor.dim %x, %c0 : tensor<8x6xf32>
  // expected-remark @below {{no sharding rule}}
  %dd = tensor.dim %x, %d : tensor<8x6xf32>
  return %cast, %dd : tensor<?x6xf32>, index
}
func.func @reshapes(%x: tensor<24x5xf32>, %y: tensor<6x4x5xf32>, %z: tensor<6x7xf32>) -> (tensor<6x4x5xf32>, tensor<24x5xf32>, tensor<42xf32>) {
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, -, j]) {i=24, j=5} reshape={i: 24=6*4} partial={(0): sum|avg|max|min}}
  %e = tensor.expand_shape %x [[0, 1], [2]] output_shape [6, 4, 5] : tensor<24x5xf32> into tensor<6x4x5xf32>
  // expected-remark @below {{sharding rule: ([i, -, j]) -> ([i, j]) {i=24, j=5} reshape={i: 24=6*4} partial={(0): sum|avg|max|min}}
  %c = tensor.collapse_shape %y [[0, 1], [2]] : tensor<6x4x5xf32> into tensor<24x5xf32>
  // expected-remark @below {{sharding rule: ([i, -]) -> ([i]) {i=42} reshape={i: 42=6*7} partial={(0): sum|avg|max|min}}
  %c2 = tensor.collapse_shape %z [[0, 1]] : tensor<6x7xf32> into tensor<42xf32>
  return %e, %c, %c2 : tensor<6x4x5xf32>, tensor<24x5xf32>, tensor<42xf32>
}
// Dims of size 1 carry no split: a group with one other dim is that dim
// (a plain factor); otherwise its outermost other dim carries the split.
func.func @unit_dims(%x: tensor<10xf32>, %y: tensor<6x1xf32>, %z: tensor<12xf32>) -> (tensor<1x10xf32>, tensor<6xf32>, tensor<1x4x3xf32>) {
  // expected-remark @below {{sharding rule: ([i]) -> ([-, i]) {i=10} partial={(0): sum|avg|max|min}}
  %e = tensor.expand_shape %x [[0, 1]] output_shape [1, 10] : tensor<10xf32> into tensor<1x10xf32>
  // expected-remark @below {{sharding rule: ([i, -]) -> ([i]) {i=6} partial={(0): sum|avg|max|min}}
  %c = tensor.collapse_shape %y [[0, 1]] : tensor<6x1xf32> into tensor<6xf32>
  // expected-remark @below {{sharding rule: ([i]) -> ([-, i, -]) {i=12} reshape={i: 12=4*3} partial={(0): sum|avg|max|min}}
  %l = tensor.expand_shape %z [[0, 1, 2]] output_shape [1, 4, 3] : tensor<12xf32> into tensor<1x4x3xf32>
  return %e, %c, %l : tensor<1x10xf32>, tensor<6xf32>, tensor<1x4x3xf32>
}
func.func @dynamic_reshape(%x: tensor<?x4xf32>) -> tensor<?xf32> {
  // expected-remark @below {{sharding rule: ([i, -]) -> ([i]) {i=?} need_replication={i} reshape={i: ?=?*4} partial={(0): sum|avg|max|min}}
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<?x4xf32> into tensor<?xf32>
  return %c : tensor<?xf32>
}
func.func @slices(%x: tensor<8x6xf32>, %y: tensor<8x2xf32>, %i: index) -> (tensor<8x2xf32>, tensor<8x6xf32>, tensor<6xf32>, tensor<8x2xf32>) {
  // expected-remark @below {{sharding rule: ([i, -]) -> ([i, -]) {i=8} partial={(0): sum|avg|max|min}}
  %a = tensor.extract_slice %x[0, 2] [8, 2] [1, 1] : tensor<8x6xf32> to tensor<8x2xf32>
  // expected-remark @below {{sharding rule: ([i, -], [i, -]) -> ([i, -]) {i=8} partial={(0, 1): sum|avg|max|min}}
  %b = tensor.insert_slice %y into %x[0, 4] [8, 2] [1, 1] : tensor<8x2xf32> into tensor<8x6xf32>
  // Rank-reducing: the dropped row is not a factor, the whole columns are.
  // expected-remark @below {{sharding rule: ([-, i]) -> ([i]) {i=6} partial={(0): sum|avg|max|min}}
  %r = tensor.extract_slice %x[3, 0] [1, 6] [1, 1] : tensor<8x6xf32> to tensor<6xf32>
  // expected-remark @below {{sharding rule: ([i, -], _) -> ([i, -]) {i=8} partial={(0): sum|avg|max|min}}
  %d = tensor.extract_slice %x[0, %i] [8, 2] [1, 1] : tensor<8x6xf32> to tensor<8x2xf32>
  return %a, %b, %r, %d : tensor<8x2xf32>, tensor<8x6xf32>, tensor<6xf32>, tensor<8x2xf32>
}
func.func @concat_pad(%x: tensor<8x4xf32>, %y: tensor<8x2xf32>) -> (tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  // expected-remark @below {{sharding rule: ([i, -], [i, -]) -> ([i, -]) {i=8, j=6} need_replication={j} partial={(0, 1): sum|avg|max|min}}
  %c = tensor.concat dim(1) %x, %y : (tensor<8x4xf32>, tensor<8x2xf32>) -> tensor<8x6xf32>
  // expected-remark @below {{sharding rule: ([i, -]) -> ([i, -]) {i=8, j=6} need_replication={j} partial={(0): sum|avg|max|min}}
  %p0 = tensor.pad %x low[0, 1] high[0, 1] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : f32
  } : tensor<8x4xf32> to tensor<8x6xf32>
  // expected-remark @below {{sharding rule: ([i, -]) -> ([i, -]) {i=8, j=6} need_replication={j} partial={(0): max|min}}
  %p1 = tensor.pad %x low[0, 2] high[0, 0] {
    ^bb0(%i: index, %j: index):
      tensor.yield %one : f32
  } : tensor<8x4xf32> to tensor<8x6xf32>
  return %c, %p0, %p1 : tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>
}
func.func @no_rule(%x: tensor<8xf32>, %i: index) -> (f32, tensor<8xf32>) {
  // expected-remark @below {{no sharding rule}}
  %e = tensor.extract %x[%i] : tensor<8xf32>
  // expected-remark @below {{no sharding rule}}
  %r = func.call @opaque(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %e, %r : f32, tensor<8xf32>
}
func.func private @opaque(tensor<8xf32>) -> tensor<8xf32>
