// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-fold-reshapes))' 2>&1 | FileCheck %s

// Reshapes that only add or drop unit dims are not folded into their
// linalg neighbours: their sharding rule already maps each dim to one dim
// (test/passes/propagation/propagate/reshape.mlir), and folding them by
// expansion fed itself on a Hugging Face Qwen3 step ([6, 16] grew into
// [6, 1, 1, 16, 1, ...], minutes of rewriting until the budget ran out).
// A reshape that splits a dim (the heads below) is still folded.
// CHECK-NOT: remark
// CHECK-LABEL: func.func @squeeze
// CHECK: %[[C:.*]] = tensor.collapse_shape %arg0 {{.*}} : tensor<6x16x1xf32> into tensor<6x16xf32>
// CHECK: %[[M:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%[[C]], %arg1 : tensor<6x16xf32>, tensor<6x16xf32>)
// CHECK: tensor.expand_shape %[[M]] {{.*}} : tensor<6x16xf32> into tensor<6x1x16xf32>
// CHECK: return
func.func @squeeze(%s: tensor<6x16x1xf32>, %x: tensor<6x16xf32>) -> tensor<6x1x16xf32> {
  %c = tensor.collapse_shape %s [[0], [1, 2]] : tensor<6x16x1xf32> into tensor<6x16xf32>
  %e = tensor.empty() : tensor<6x16xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c, %x : tensor<6x16xf32>, tensor<6x16xf32>) outs(%e : tensor<6x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %p = arith.mulf %a, %b : f32
      linalg.yield %p : f32
  } -> tensor<6x16xf32>
  %y = tensor.expand_shape %m [[0, 1], [2]] output_shape [6, 1, 16] : tensor<6x16xf32> into tensor<6x1x16xf32>
  return %y : tensor<6x1x16xf32>
}

// CHECK-LABEL: func.func @heads
// CHECK: %[[H:.*]] = tensor.expand_shape %arg0 {{.*}} : tensor<6x16xf32> into tensor<6x4x4xf32>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%[[H]] : tensor<6x4x4xf32>)
// CHECK-NOT: tensor.
// CHECK: return
func.func @heads(%x: tensor<6x16xf32>) -> tensor<6x4x4xf32> {
  %e = tensor.empty() : tensor<6x16xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<6x16xf32>) outs(%e : tensor<6x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %p = arith.mulf %a, %a : f32
      linalg.yield %p : f32
  } -> tensor<6x16xf32>
  %h = tensor.expand_shape %m [[0], [1, 2]] output_shape [6, 4, 4] : tensor<6x16xf32> into tensor<6x4x4xf32>
  return %h : tensor<6x4x4xf32>
}
