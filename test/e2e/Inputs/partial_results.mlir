// Partial results: per-rank row max and row sum over a column shard,
// returned as P(max) and P(sum); spmd-run reduces them when assembling.
// A hand-written LOCAL program: spmd.global_type marks it as one, so
// spmd-run does not partition it.
spmd.mesh @mesh ["tp"=2]
// Each rank returns its local max over its column shard: P(max) result.
func.func @colmax(%x: tensor<4x3xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>, spmd.global_type = tensor<4x6xf32>})
    -> (tensor<4xf32> {spmd.layout = #spmd.layout<@mesh, [P(max)]>}, tensor<4xf32> {spmd.layout = #spmd.layout<@mesh, [P(sum)]>}) {
  %ninf = arith.constant -1.0e30 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%x : tensor<4x3xf32>) outs(%f : tensor<4xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.maximumf %a, %acc : f32
      linalg.yield %s : f32
    }
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.reduce ins(%x : tensor<4x3xf32>) outs(%f2 : tensor<4xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %t = arith.addf %a, %acc : f32
      linalg.yield %t : f32
    }
  return %m, %s : tensor<4xf32>, tensor<4xf32>
}
