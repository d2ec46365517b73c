// RUN: spmd-opt %s --split-input-file --spmd-partition | FileCheck %s

// A body that reads the index of a sharded loop gets this rank's chunk
// offset added (spmd.local_offset, made once before the op): the local index
// plus the offset is the global index the body was written for.
spmd.mesh @tp ["tp"=4]
// CHECK-LABEL: func.func @iota
// CHECK: %[[OFF:.*]] = spmd.local_offset @tp ["tp"] of 8 : index
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[G:.*]] = arith.addi %[[I]], %[[OFF]] : index
// CHECK: arith.index_cast %[[G]] : index to i32
// CHECK: } -> tensor<2xf32>
func.func @iota(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %e = tensor.empty() {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8xf32>
  %g = linalg.generic {
      indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
      iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>)
      attrs = {spmd.layout = #spmd.layout<@tp, [S(0)]>} {
    ^bb0(%in: f32, %out: f32):
      %i = linalg.index 0 : index
      %c = arith.index_cast %i : index to i32
      %f = arith.sitofp %c : i32 to f32
      %a = arith.addf %in, %f : f32
      linalg.yield %a : f32
  } -> tensor<8xf32>
  return %g : tensor<8xf32>
}

// -----

// One-hot embedding with the table row-split (vocabulary 13 on 2x2, nested:
// chunks 4, 3, 3, 3): the vocabulary loop is a reduction read by
// linalg.index; the offset comes from both axes in mesh order, only the
// index of the sharded loop is offset, and the result is partial.
spmd.mesh @m ["dp"=2, "tp"=2]
// CHECK-LABEL: func.func @one_hot
// CHECK: %[[OFF:.*]] = spmd.local_offset @m ["dp", "tp"] of 13 : index
// CHECK-NOT: spmd.local_offset
// CHECK: linalg.generic
// CHECK: %[[V:.*]] = linalg.index 1 : index
// CHECK: %[[G:.*]] = arith.addi %[[V]], %[[OFF]] : index
// CHECK: arith.index_cast %[[G]] : index to i64
// CHECK: } -> tensor<6x4xf32>
#tok = affine_map<(t, v, d) -> (t)>
#tab = affine_map<(t, v, d) -> (v, d)>
#out = affine_map<(t, v, d) -> (t, d)>
func.func @one_hot(%tok: tensor<6xi64> {spmd.layout = #spmd.layout<@m, [R, R]>},
                   %table: tensor<13x4xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(0)]>})
    -> (tensor<6x4xf32> {spmd.layout = #spmd.layout<@m, [P(sum), P(sum)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() {spmd.layout = #spmd.layout<@m, [P(sum), P(sum)]>} : tensor<6x4xf32>
  %f = linalg.fill {spmd.layout = #spmd.layout<@m, [P(sum), P(sum)]>} ins(%zero : f32) outs(%e : tensor<6x4xf32>) -> tensor<6x4xf32>
  %r = linalg.generic {indexing_maps = [#tok, #tab, #out],
                       iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%tok, %table : tensor<6xi64>, tensor<13x4xf32>) outs(%f : tensor<6x4xf32>)
      attrs = {spmd.layout = #spmd.layout<@m, [P(sum), P(sum)]>} {
    ^bb0(%t: i64, %w: f32, %o: f32):
      %v = linalg.index 1 : index
      %vi = arith.index_cast %v : index to i64
      %eq = arith.cmpi eq, %vi, %t : i64
      %x = arith.select %eq, %w, %zero : f32
      %s = arith.addf %o, %x : f32
      linalg.yield %s : f32
  } -> tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}
