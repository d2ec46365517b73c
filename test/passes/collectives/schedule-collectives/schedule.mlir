// RUN: spmd-opt %s -split-input-file -spmd-schedule-collectives | FileCheck %s

// Data parallel: each gradient's all_reduce starts right after the gradient
// exists, so the rest of the backward runs while it is in flight; the
// optimizer updates stay where they were.
spmd.mesh @dp2 ["dp"=2]

// CHECK-LABEL: func.func @gradients
// CHECK: %[[G1:.*]] = arith.mulf %arg0, %arg1
// CHECK-NEXT: %[[R1:.*]] = spmd.all_reduce %[[G1]]
// CHECK-NEXT: %[[G2:.*]] = arith.mulf %[[G1]], %arg2
// CHECK-NEXT: %[[R2:.*]] = spmd.all_reduce %[[G2]]
// CHECK-NEXT: %[[G3:.*]] = arith.mulf %[[G2]], %arg3
// CHECK-NEXT: %[[U1:.*]] = arith.subf %arg0, %[[R1]]
// CHECK-NEXT: %[[U2:.*]] = arith.subf %arg1, %[[R2]]
// CHECK-NEXT: return %[[U1]], %[[U2]], %[[G3]]
func.func @gradients(%w1: tensor<4xf32>, %w2: tensor<4xf32>, %x: tensor<4xf32>, %y: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %g1 = arith.mulf %w1, %w2 : tensor<4xf32>
  %g2 = arith.mulf %g1, %x : tensor<4xf32>
  %g3 = arith.mulf %g2, %y : tensor<4xf32>
  %r1 = spmd.all_reduce %g1 on @dp2 ["dp"] sum : tensor<4xf32>
  %u1 = arith.subf %w1, %r1 : tensor<4xf32>
  %r2 = spmd.all_reduce %g2 on @dp2 ["dp"] sum : tensor<4xf32>
  %u2 = arith.subf %w2, %r2 : tensor<4xf32>
  return %u1, %u2, %g3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A bucket's packing exists only to feed its all_reduce: it moves up with
// it, to right after the last gradient it packs.
spmd.mesh @dp2 ["dp"=2]

// CHECK-LABEL: func.func @bucket
// CHECK-DAG: %[[G1:.*]] = arith.mulf %arg0, %arg0
// CHECK-DAG: %[[G2:.*]] = arith.mulf %arg1, %arg1
// CHECK: %[[CAT:.*]] = tensor.concat dim(0) %[[G1]], %[[G2]]
// CHECK-NEXT: %[[R:.*]] = spmd.all_reduce %[[CAT]]
// CHECK-NEXT: %[[H:.*]] = arith.mulf %[[G2]], %arg2
func.func @bucket(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>)
    -> (tensor<8xf32>, tensor<4xf32>) {
  %g1 = arith.mulf %a, %a : tensor<4xf32>
  %g2 = arith.mulf %b, %b : tensor<4xf32>
  %h = arith.mulf %g2, %c : tensor<4xf32>
  %cat = tensor.concat dim(0) %g1, %g2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %r = spmd.all_reduce %cat on @dp2 ["dp"] sum : tensor<8xf32>
  return %r, %h : tensor<8xf32>, tensor<4xf32>
}

// -----

// FSDP: gathers of parameters (function arguments) are prefetched one
// ahead, each right before the first use of the previous one, not all at
// the top of the step.
spmd.mesh @dp2 ["dp"=2]

// CHECK-LABEL: func.func @prefetch
// CHECK: %[[P1:.*]] = spmd.all_gather %arg0
// CHECK-NEXT: %[[P2:.*]] = spmd.all_gather %arg1
// CHECK-NEXT: %[[H1:.*]] = arith.mulf %arg3, %[[P1]]
// CHECK-NEXT: %[[P3:.*]] = spmd.all_gather %arg2
// CHECK-NEXT: %[[H2:.*]] = arith.mulf %[[H1]], %[[P2]]
// CHECK-NEXT: %[[H3:.*]] = arith.mulf %[[H2]], %[[P3]]
// CHECK-NEXT: return %[[H3]]
func.func @prefetch(%p1: tensor<2xf32>, %p2: tensor<2xf32>, %p3: tensor<2xf32>, %x: tensor<4xf32>)
    -> tensor<4xf32> {
  %f1 = spmd.all_gather %p1 on @dp2 ["dp"] dim 0 : tensor<2xf32> -> tensor<4xf32>
  %h1 = arith.mulf %x, %f1 : tensor<4xf32>
  %f2 = spmd.all_gather %p2 on @dp2 ["dp"] dim 0 : tensor<2xf32> -> tensor<4xf32>
  %h2 = arith.mulf %h1, %f2 : tensor<4xf32>
  %f3 = spmd.all_gather %p3 on @dp2 ["dp"] dim 0 : tensor<2xf32> -> tensor<4xf32>
  %h3 = arith.mulf %h2, %f3 : tensor<4xf32>
  return %h3 : tensor<4xf32>
}

// -----

// A tensor-parallel all_reduce whose only consumer follows it at once has
// nothing to overlap: nothing moves.
spmd.mesh @tp2 ["tp"=2]

// CHECK-LABEL: func.func @nothing_to_overlap
// CHECK: %[[Y:.*]] = arith.mulf %arg0, %arg1
// CHECK-NEXT: %[[R:.*]] = spmd.all_reduce %[[Y]]
// CHECK-NEXT: %[[Z:.*]] = arith.addf %[[R]], %arg0
// CHECK-NEXT: return %[[Z]]
func.func @nothing_to_overlap(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %y = arith.mulf %a, %b : tensor<4xf32>
  %r = spmd.all_reduce %y on @tp2 ["tp"] sum : tensor<4xf32>
  %z = arith.addf %r, %a : tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

// A gradient's matmul exists only for the all_reduce: it rises with it,
// and its zero-filled init stays next to it instead of rising to the
// constants at the top (which would keep that buffer live all step).
spmd.mesh @dp2 ["dp"=2]

// CHECK-LABEL: func.func @fill_stays_close
// CHECK: %[[DY:.*]] = arith.mulf %arg1, %arg1
// CHECK-NEXT: arith.constant 0.0
// CHECK-NEXT: %[[E:.*]] = tensor.empty()
// CHECK-NEXT: %[[Z:.*]] = linalg.fill {{.*}} outs(%[[E]]
// CHECK-NEXT: %[[DW:.*]] = linalg.matmul ins(%arg0, %[[DY]] {{.*}} outs(%[[Z]]
// CHECK-NEXT: %[[R:.*]] = spmd.all_reduce %[[DW]]
// CHECK-NEXT: %[[DX:.*]] = arith.mulf %[[DY]], %arg2
// CHECK-NEXT: %[[U:.*]] = arith.subf %arg3, %[[R]]
func.func @fill_stays_close(%x: tensor<4x4xf32>, %g: tensor<4x4xf32>, %w: tensor<4x4xf32>, %p: tensor<4x4xf32>)
    -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %dy = arith.mulf %g, %g : tensor<4x4xf32>
  %dx = arith.mulf %dy, %w : tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %dw = linalg.matmul ins(%x, %dy : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = spmd.all_reduce %dw on @dp2 ["dp"] sum : tensor<4x4xf32>
  %u = arith.subf %p, %r : tensor<4x4xf32>
  return %u, %dx : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A gather of an argument through a reshape (FSDP's token gather for the
// embedding backward) is prefetched with the reshape: the reshape used to
// stay behind, below its user.
spmd.mesh @m5 ["x"=5]

// CHECK-LABEL: func.func @prefetch_with_reshape
// CHECK: %[[P1:.*]] = spmd.all_gather %arg0
// CHECK-NEXT: %[[E:.*]] = tensor.expand_shape %arg1
// CHECK-NEXT: %[[P2:.*]] = spmd.all_gather %[[E]]
// CHECK-NEXT: %[[H1:.*]] = arith.mulf %arg2, %[[P1]]
// CHECK-NEXT: return %[[H1]], %[[P2]]
func.func @prefetch_with_reshape(%p1: tensor<2xf32>, %t: tensor<2xi64>, %x: tensor<10xf32>)
    -> (tensor<10xf32>, tensor<10x1xi64>) {
  %f1 = spmd.all_gather %p1 on @m5 ["x"] dim 0 : tensor<2xf32> -> tensor<10xf32>
  %h1 = arith.mulf %x, %f1 : tensor<10xf32>
  %e = tensor.expand_shape %t [[0, 1]] output_shape [2, 1] : tensor<2xi64> into tensor<2x1xi64>
  %f2 = spmd.all_gather %e on @m5 ["x"] dim 0 : tensor<2x1xi64> -> tensor<10x1xi64>
  return %h1, %f2 : tensor<10xf32>, tensor<10x1xi64>
}

// -----

// An all_reduce of a matmul of arguments needs nothing of the block either:
// its matmul and zero fill move with it, in order.
spmd.mesh @m5 ["x"=5]

// CHECK-LABEL: func.func @prefetch_with_matmul
// CHECK: %[[P1:.*]] = spmd.all_gather %arg0
// CHECK-NEXT: arith.constant 0.0
// CHECK-NEXT: %[[E:.*]] = tensor.empty()
// CHECK-NEXT: %[[Z:.*]] = linalg.fill {{.*}} outs(%[[E]]
// CHECK-NEXT: %[[M:.*]] = linalg.matmul ins(%arg1, %arg2 {{.*}} outs(%[[Z]]
// CHECK-NEXT: %[[R:.*]] = spmd.all_reduce %[[M]]
// CHECK-NEXT: %[[H1:.*]] = arith.mulf %arg3, %[[P1]]
// CHECK-NEXT: return %[[H1]], %[[R]]
func.func @prefetch_with_matmul(%p1: tensor<2xf32>, %a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %x: tensor<10xf32>)
    -> (tensor<10xf32>, tensor<4x4xf32>) {
  %f1 = spmd.all_gather %p1 on @m5 ["x"] dim 0 : tensor<2xf32> -> tensor<10xf32>
  %h1 = arith.mulf %x, %f1 : tensor<10xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = spmd.all_reduce %m on @m5 ["x"] sum : tensor<4x4xf32>
  return %h1, %r : tensor<10xf32>, tensor<4x4xf32>
}
