// RUN: spmd-opt %s --spmd-one-hot-matmul --split-input-file | FileCheck %s

// An embedding lookup: out[b, d] += select(tok[b] == v, w[v, d], 0) over v
// becomes a one-hot tensor over (b, v) and a contraction (a GEMM).
// CHECK-LABEL: func.func @lookup(
// CHECK-SAME: %[[TOK:.*]]: tensor<4xi64>, %[[W:.*]]: tensor<13x8xbf16>, %[[INIT:.*]]: tensor<4x8xbf16>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x13xbf16>
// CHECK: %[[OH:.*]] = linalg.generic {indexing_maps = [#[[B:.*]], #[[ID:.*]]], iterator_types = ["parallel", "parallel"]} ins(%[[TOK]] : tensor<4xi64>) outs(%[[E]] : tensor<4x13xbf16>)
// CHECK: linalg.index 1 : index
// CHECK: arith.cmpi eq
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : bf16
// CHECK: %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[OH]], %[[W]] : tensor<4x13xbf16>, tensor<13x8xbf16>) outs(%[[INIT]] : tensor<4x8xbf16>)
// CHECK: %[[P:.*]] = arith.mulf
// CHECK: arith.addf %{{.*}}, %[[P]] : bf16
// CHECK: return %[[R]]
func.func @lookup(%tok: tensor<4xi64>, %w: tensor<13x8xbf16>, %init: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %r = linalg.generic {indexing_maps = [affine_map<(b, d, v) -> (b)>, affine_map<(b, d, v) -> (v, d)>, affine_map<(b, d, v) -> (b, d)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%tok, %w : tensor<4xi64>, tensor<13x8xbf16>) outs(%init : tensor<4x8xbf16>) {
  ^bb0(%t: i64, %x: bf16, %o: bf16):
    %i = linalg.index 2 : index
    %c = arith.index_cast %i : index to i64
    %eq = arith.cmpi eq, %t, %c : i64
    %z = arith.constant 0.0 : bf16
    %s = arith.select %eq, %x, %z : bf16
    %a = arith.addf %o, %s : bf16
    linalg.yield %a : bf16
  } -> tensor<4x8xbf16>
  return %r : tensor<4x8xbf16>
}

// -----

// Its gradient: the vocabulary a parallel loop, the tokens reduced; a
// rank's vocabulary rows start at an offset from above, and the rows are
// dynamic (an uneven shard).
// CHECK-LABEL: func.func @scatter(
// CHECK-SAME: %[[TOK:.*]]: tensor<2x3xi64>, %[[G:.*]]: tensor<2x3x8xf32>, %[[INIT:.*]]: tensor<?x8xf32>, %[[OFF:.*]]: index
// CHECK: %[[N:.*]] = tensor.dim %[[INIT]]
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x2x3xf32>
// CHECK: %[[OH:.*]] = linalg.generic {{.*}} ins(%[[TOK]] : tensor<2x3xi64>) outs(%[[E]] : tensor<?x2x3xf32>)
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: arith.addi %[[I]], %[[OFF]] : index
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[OH]], %[[G]] : tensor<?x2x3xf32>, tensor<2x3x8xf32>) outs(%[[INIT]] : tensor<?x8xf32>)
func.func @scatter(%tok: tensor<2x3xi64>, %g: tensor<2x3x8xf32>, %init: tensor<?x8xf32>, %off: index) -> tensor<?x8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(v, d, b, t) -> (b, t)>, affine_map<(v, d, b, t) -> (b, t, d)>, affine_map<(v, d, b, t) -> (v, d)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%tok, %g : tensor<2x3xi64>, tensor<2x3x8xf32>) outs(%init : tensor<?x8xf32>) {
  ^bb0(%t: i64, %x: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = arith.addi %i, %off : index
    %c = arith.index_cast %j : index to i64
    %eq = arith.cmpi eq, %t, %c : i64
    %z = arith.constant 0.0 : f32
    %s = arith.select %eq, %x, %z : f32
    %a = arith.addf %s, %o : f32
    linalg.yield %a : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// Left alone: a false value that is not zero, a condition that reads the
// selected value, and a body that computes more than the select.
// CHECK-LABEL: func.func @not_one_hot(
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
func.func @not_one_hot(%tok: tensor<4xi64>, %w: tensor<13x8xf32>, %init: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %r0 = linalg.generic {indexing_maps = [affine_map<(b, d, v) -> (b)>, affine_map<(b, d, v) -> (v, d)>, affine_map<(b, d, v) -> (b, d)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%tok, %w : tensor<4xi64>, tensor<13x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%t: i64, %x: f32, %o: f32):
    %i = linalg.index 2 : index
    %c = arith.index_cast %i : index to i64
    %eq = arith.cmpi eq, %t, %c : i64
    %one = arith.constant 1.0 : f32
    %s = arith.select %eq, %x, %one : f32
    %a = arith.addf %o, %s : f32
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  %r1 = linalg.generic {indexing_maps = [affine_map<(b, d, v) -> (b)>, affine_map<(b, d, v) -> (v, d)>, affine_map<(b, d, v) -> (b, d)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%tok, %w : tensor<4xi64>, tensor<13x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%t: i64, %x: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %eq = arith.cmpf ogt, %x, %z : f32
    %s = arith.select %eq, %x, %z : f32
    %a = arith.addf %o, %s : f32
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  %r2 = linalg.generic {indexing_maps = [affine_map<(b, d, v) -> (b)>, affine_map<(b, d, v) -> (v, d)>, affine_map<(b, d, v) -> (b, d)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%tok, %w : tensor<4xi64>, tensor<13x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%t: i64, %x: f32, %o: f32):
    %i = linalg.index 2 : index
    %c = arith.index_cast %i : index to i64
    %eq = arith.cmpi eq, %t, %c : i64
    %z = arith.constant 0.0 : f32
    %s = arith.select %eq, %x, %z : f32
    %e = math.exp %s : f32
    %a = arith.addf %o, %e : f32
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  return %r0, %r1, %r2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Left alone: loop d2 is bounded only by an input the body never reads,
// which the rewrite would drop.
// CHECK-LABEL: func.func @unbounded_loop(
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
func.func @unbounded_loop(%tok: tensor<4xi64>, %w: tensor<13x8xf32>, %unused: tensor<5xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(b, d, v, k) -> (b)>, affine_map<(b, d, v, k) -> (v, d)>, affine_map<(b, d, v, k) -> (k)>, affine_map<(b, d, v, k) -> (b, d)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%tok, %w, %unused : tensor<4xi64>, tensor<13x8xf32>, tensor<5xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%t: i64, %x: f32, %u: f32, %o: f32):
    %i = linalg.index 2 : index
    %c = arith.index_cast %i : index to i64
    %eq = arith.cmpi eq, %t, %c : i64
    %z = arith.constant 0.0 : f32
    %s = arith.select %eq, %x, %z : f32
    %a = arith.addf %o, %s : f32
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
