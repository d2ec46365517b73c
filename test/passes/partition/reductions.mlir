// RUN: spmd-opt %s --spmd-partition | FileCheck %s
// Reductions over a sharded dim give local partial results of the
// combiner's kind; uneven and empty shards contribute the init's identity,
// never padding.

spmd.mesh @tp ["tp"=4]

// Column max of 13x5 with rows on 4 (4, 4, 4, 1): P(max) locally, one
// all_reduce max.
// CHECK-LABEL: func.func @colmax
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x5xf32>
// CHECK: %[[M:.*]] = linalg.reduce ins(%[[X]] : tensor<?x5xf32>) outs(%{{.*}} : tensor<5xf32>) dimensions = [0]
// CHECK: %[[R:.*]] = spmd.all_reduce %[[M]] on @tp ["tp"] max : tensor<5xf32>
// CHECK-NEXT: return %[[R]]
func.func @colmax(%x: tensor<13x5xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> (tensor<5xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() {spmd.layout = #spmd.layout<@tp, [P(max)]>} : tensor<5xf32>
  %f = linalg.fill {spmd.layout = #spmd.layout<@tp, [P(max)]>} ins(%ninf : f32) outs(%e : tensor<5xf32>) -> tensor<5xf32>
  %m = linalg.reduce ins(%x : tensor<13x5xf32>) outs(%f : tensor<5xf32>) dimensions = [0]
      {spmd.layout = #spmd.layout<@tp, [P(max)]>}
    (%in: f32, %acc: f32) {
      %v = arith.maximumf %in, %acc : f32
      linalg.yield %v : f32
    }
  %r = spmd.constrain %m to #spmd.layout<@tp, [R]> : tensor<5xf32>
  return %r : tensor<5xf32>
}

// A P(max) value goes through max(x, 0) (monotone) and stays partial; a
// P(sum) goes through scaling by a replicated factor and an addition of
// partials.
// CHECK-LABEL: func.func @partial_flow
// CHECK-SAME: (%[[A:[^:]*]]: tensor<4xf32> {{[^}]*}}}, %[[B:[^:]*]]: tensor<4xf32> {{[^}]*}}}, %[[S:[^:]*]]: tensor<4xf32> {{[^}]*}}}, %[[C:[^:]*]]: tensor<4xf32>
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK: %[[M:.*]] = arith.mulf %[[B]], %[[S]] : tensor<4xf32>
// CHECK-NEXT: %[[P:.*]] = arith.addf %[[M]], %[[C]] : tensor<4xf32>
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[P]] : tensor<4xf32>
// CHECK-NEXT: %[[R:.*]] = spmd.reduce_scatter %[[N]] on @tp ["tp"] dim 0 sum : tensor<4xf32> -> tensor<1xf32>
func.func @partial_flow(%a: tensor<4xf32> {spmd.layout = #spmd.layout<@tp, [P(max)]>},
                        %b: tensor<4xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>},
                        %s: tensor<4xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
                        %c: tensor<4xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>})
    -> (tensor<4xf32> {spmd.layout = #spmd.layout<@tp, [P(max)]>},
        tensor<4xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() {spmd.layout = #spmd.layout<@tp, [P(max)]>} : tensor<4xf32>
  %relu = linalg.generic {
      indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
      iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>)
      attrs = {spmd.layout = #spmd.layout<@tp, [P(max)]>} {
    ^bb0(%in: f32, %out: f32):
      %v = arith.maximumf %in, %zero : f32
      linalg.yield %v : f32
  } -> tensor<4xf32>
  %m = arith.mulf %b, %s {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<4xf32>
  %p = arith.addf %m, %c {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<4xf32>
  %n = arith.negf %p {spmd.layout = #spmd.layout<@tp, [P(sum)]>} : tensor<4xf32>
  %r = spmd.constrain %n to #spmd.layout<@tp, [S(0)]> : tensor<4xf32>
  return %relu, %r : tensor<4xf32>, tensor<4xf32>
}

// A loss summed over a dim sharded on both axes of a 2x2 mesh: P(sum) on
// both, reduced by one all_reduce over the two axes together.
spmd.mesh @m ["dp"=2, "tp"=2]
// CHECK-LABEL: func.func @loss
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2xf32>
// CHECK: %[[S:.*]] = linalg.reduce ins(%[[X]] : tensor<2xf32>) outs(%{{.*}} : tensor<f32>) dimensions = [0]
// CHECK: %[[R:.*]] = spmd.all_reduce %[[S]] on @m ["dp", "tp"] sum : tensor<f32>
// CHECK-NEXT: return %[[R]] : tensor<f32>
func.func @loss(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@m, [S(0), S(0)]>})
    -> (tensor<f32> {spmd.layout = #spmd.layout<@m, [R, R]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() {spmd.layout = #spmd.layout<@m, [P(sum), P(sum)]>} : tensor<f32>
  %f = linalg.fill {spmd.layout = #spmd.layout<@m, [P(sum), P(sum)]>} ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%x : tensor<8xf32>) outs(%f : tensor<f32>) dimensions = [0]
      {spmd.layout = #spmd.layout<@m, [P(sum), P(sum)]>}
    (%in: f32, %acc: f32) {
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    }
  %r = spmd.constrain %s to #spmd.layout<@m, [R, R]> : tensor<f32>
  return %r : tensor<f32>
}
