// A 3-D tensor on a 2x2x2 mesh through layouts uneven on several dims at
// once: partial on two axes, two axes nested on one dim, a shard of a
// size-1 dim (empty shards), returned in two other layouts (from a
// generator of random constrain chains, issue #18).
spmd.mesh @mesh ["x"=2, "y"=2, "z"=2]
func.func @main(%a: tensor<5x7x1xf32> {spmd.layout = #spmd.layout<@mesh, [S(2), P(sum), P(sum)]>}) -> (tensor<5x7x1xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(0), S(1)]>}, tensor<5x7x1xf32> {spmd.layout = #spmd.layout<@mesh, [S(1), S(0), S(1)]>}) {
  %b = arith.negf %a : tensor<5x7x1xf32>
  %c = spmd.constrain %b to #spmd.layout<@mesh, [S(2), S(0), S(2)]> : tensor<5x7x1xf32>
  %d = arith.mulf %c, %c : tensor<5x7x1xf32>
  %e = spmd.constrain %d to #spmd.layout<@mesh, [S(0), R, S(1)]> : tensor<5x7x1xf32>
  %f = arith.addf %e, %b : tensor<5x7x1xf32>
  return %f, %c : tensor<5x7x1xf32>, tensor<5x7x1xf32>
}
