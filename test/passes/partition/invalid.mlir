// RUN: spmd-opt %s --spmd-partition -split-input-file -verify-diagnostics
// Programs that are not layout-consistent are rejected, naming the op.

spmd.mesh @tp ["tp"=4]
// expected-error @+1 {{argument 1 has no spmd.layout; the program is not layout-consistent}}
func.func @arg_without_layout(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}, %y: tensor<8xf32>) {
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @result_without_layout(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  // expected-error @+1 {{'tensor.empty' op result 0 has no spmd.layout; the program is not layout-consistent}}
  %e = tensor.empty() : tensor<8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
// expected-error @+1 {{result 0 has no spmd.layout}}
func.func @func_result_without_layout(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @return_mismatch(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  // expected-error @+1 {{'func.return' op returns operand 0 in layout #spmd.layout<@tp, [S(0)]> but result 0 is declared #spmd.layout<@tp, [R]>}}
  return %x : tensor<8xf32>
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @matmul_mismatch(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                           %b: tensor<16x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
                           %c: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  // expected-error @+1 {{'linalg.matmul' op operand 1 must be S(0) on mesh axis 'tp' like the other operands indexed by loop 2, but it is R}}
  %m = linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
      ins(%a, %b : tensor<8x16xf32>, tensor<16x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @reduction_not_partial(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                                 %b: tensor<16x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                                 %c: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>}) {
  // expected-error @+1 {{'linalg.matmul' op reduces over loop 2 sharded on mesh axis 'tp', so result 0 must be P(sum), but it is R}}
  %m = linalg.matmul {spmd.layout = #spmd.layout<@tp, [R]>}
      ins(%a, %b : tensor<8x16xf32>, tensor<16x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @replicated_init_of_sharded_reduction(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                                                %b: tensor<16x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                                                %c: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  // expected-error @+1 {{'linalg.matmul' op reduces over loop 2 sharded on mesh axis 'tp', so operand 2 must be P(sum), but it is R}}
  %m = linalg.matmul {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
      ins(%a, %b : tensor<8x16xf32>, tensor<16x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @nonlinear_in_partial(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>}) {
  // expected-error @+1 {{'arith.mulf' op is not linear in its partial operands on mesh axis 'tp'; they must be reduced first}}
  %y = arith.mulf %x, %x {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @partial_plus_replicated(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>},
                                   %y: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  // expected-error @+1 {{'arith.addf' op is not linear in its partial operands on mesh axis 'tp'}}
  %z = arith.addf %x, %y {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @generic_exp_of_partial(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>}) {
  %e = tensor.empty() {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<8xf32>
  // expected-error @+1 {{'linalg.generic' op result 0 is not linear in the operands that are partial on mesh axis 'tp'; they must be reduced first}}
  %g = linalg.generic {
      indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
      iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>)
      attrs = {spmd.layout = #spmd.layout<@tp, [P(sum)]>} {
    ^bb0(%in: f32, %out: f32):
      %a = math.exp %in : f32
      linalg.yield %a : f32
  } -> tensor<8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @elementwise_shard_mismatch(%x: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                                      %y: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}) {
  // expected-error @+1 {{'arith.addf' op has operands sharded differently on mesh axis 'tp' (S(0) and S(1))}}
  %z = arith.addf %x, %y {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8x8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @result_layout_changes(%x: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  // expected-error @+1 {{'arith.negf' op needs every operand and result S(0) on mesh axis 'tp', but one is R}}
  %z = arith.negf %x {spmd.layout = #spmd.layout<@tp, [R]>} : tensor<8x8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @no_rule(%x: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{'tensor.from_elements' op has no spmd-partition rule and its result is not replicated (layout #spmd.layout<@tp, [S(0)]>)}}
  %t = tensor.from_elements %f, %f, %f, %f {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<4xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
spmd.mesh @other ["x"=2]
func.func @two_meshes(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  // expected-error @+1 {{'spmd.constrain' op result 0 is on mesh @other but the function already uses @tp; spmd-partition supports one mesh per function}}
  %c = spmd.constrain %x to #spmd.layout<@other, [R]> : tensor<8xf32>
  return
}

// -----

spmd.mesh @m ["a"=2, "b"=2]
func.func @mixed_partials(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@m, [P(max), P(sum)]>}) {
  // expected-error @+1 {{'spmd.constrain' op cannot redistribute from #spmd.layout<@m, [P(max), P(sum)]> to #spmd.layout<@m, [R, R]>: layout [P(max), P(sum)] mixes max or min partials with other reductions, whose order is undefined}}
  %c = spmd.constrain %x to #spmd.layout<@m, [R, R]> : tensor<8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @dynamic_global(%x: tensor<?xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  return
}
// expected-error @-3 {{argument 0 has the dynamic global type 'tensor<?xf32>'; spmd-partition needs static global shapes}}

// -----

spmd.mesh @tp ["tp"=4]
func.func @reshape_misaligned(%x: tensor<6x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  // 6 rows on 4 are 2, 2, 2, 0 (times 4: 8, 8, 8, 0) but 24 on 4 is 6 each.
  // expected-error @+1 {{'tensor.collapse_shape' op reshapes sharded dim 0 of 'tensor<24xf32>' but the chunk boundaries of #spmd.layout<@tp, [S(0)]> and #spmd.layout<@tp, [S(0)]> do not match on every rank}}
  %c = tensor.collapse_shape %x [[0, 1]] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<6x4xf32> into tensor<24xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @reshape_inner_dim(%x: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}) {
  // expected-error @+1 {{'tensor.collapse_shape' op cannot carry the sharding on mesh axis 'tp' from #spmd.layout<@tp, [S(1)]> to #spmd.layout<@tp, [S(0)]>: a sharded dim must be the outermost dim of its reshaped group}}
  %c = tensor.collapse_shape %x [[0, 1]] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8x8xf32> into tensor<64xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @slice_sharded_dim(%x: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  // expected-error @+1 {{'tensor.extract_slice' op slices dim 0, which #spmd.layout<@tp, [S(0)]> shards; a sharded dim must be taken whole}}
  %c = tensor.extract_slice %x[2, 0] [4, 8] [1, 1] {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8x8xf32> to tensor<4x8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @slice_changes_layout(%x: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  // expected-error @+1 {{'tensor.extract_slice' op must keep the layout: the whole tensor is #spmd.layout<@tp, [S(0)]> but the slice is #spmd.layout<@tp, [R]>}}
  %c = tensor.extract_slice %x[0, 0] [8, 4] [1, 1] {spmd.layout = #spmd.layout<@tp, [R]>} : tensor<8x8xf32> to tensor<8x4xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @tensor_in_body(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                          %t: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %e = tensor.empty() {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8xf32>
  %g = linalg.generic {
      indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
      iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>)
      attrs = {spmd.layout = #spmd.layout<@tp, [S(0)]>} {
    ^bb0(%in: f32, %out: f32):
      %c = arith.constant 0 : index
      // expected-error @+1 {{'tensor.extract' op reads a tensor from above whose layout is #spmd.layout<@tp, [S(0)]>; inside a region spmd-partition needs it replicated (run spmd-propagate, which makes it so)}}
      %v = tensor.extract %t[%c] : tensor<8xf32>
      linalg.yield %v : f32
  } -> tensor<8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @tensor_made_in_body(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %e = tensor.empty() {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8xf32>
  %g = linalg.generic {
      indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
      iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>)
      attrs = {spmd.layout = #spmd.layout<@tp, [S(0)]>} {
    ^bb0(%in: f32, %out: f32):
      // expected-error @+1 {{'tensor.splat' op inside a region is not supported by spmd-partition}}
      %s = tensor.splat %in : tensor<4xf32>
      %c = arith.constant 0 : index
      %v = tensor.extract %s[%c] : tensor<4xf32>
      linalg.yield %v : f32
  } -> tensor<8xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
// expected-error @+1 {{is already partitioned (its arguments carry spmd.global_type)}}
func.func @already_local(%x: tensor<2xf32> {spmd.global_type = tensor<8xf32>, spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @multi_block(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  // expected-error @-1 {{has several blocks; spmd-partition supports one block}}
  cf.br ^bb1
^bb1:
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @concat_sharded_dim(%x: tensor<8x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  // expected-error @+1 {{'tensor.concat' op concatenates dim 0, which #spmd.layout<@tp, [S(0)]> shards; it must be replicated}}
  %c = tensor.concat dim(0) %x, %x {spmd.layout = #spmd.layout<@tp, [S(0)]>} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @pad_partial_nonzero(%x: tensor<8x4xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>}) {
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{'tensor.pad' op pads a #spmd.layout<@tp, [P(sum)]> partial value with something other than 0}}
  %p = tensor.pad %x low[0, 1] high[0, 0] {
    ^bb0(%i: index, %j: index):
      tensor.yield %one : f32
  } {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<8x4xf32> to tensor<8x5xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @pad_sharded_dim(%x: tensor<8x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{'tensor.pad' op pads dim 0, which #spmd.layout<@tp, [S(0)]> shards}}
  %p = tensor.pad %x low[1, 0] high[0, 0] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : f32
  } {spmd.layout = #spmd.layout<@tp, [S(0)]>} : tensor<8x4xf32> to tensor<9x4xf32>
  return
}

// -----

spmd.mesh @tp ["tp"=4]
func.func @dim_of_sharded(%x: tensor<8x4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) -> index {
  %zero = arith.constant 0 : index
  // expected-error @+1 {{'tensor.dim' op reads the size of dim 0, which #spmd.layout<@tp, [S(0)]> shards}}
  %d = tensor.dim %x, %zero : tensor<8x4xf32>
  return %d : index
}
