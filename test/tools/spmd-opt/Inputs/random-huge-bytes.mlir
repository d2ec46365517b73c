// Mutant 9359 of bench/fuzz/mutate.py's seed-30 campaign (from
// test/e2e/Inputs/random_draws.mlir): three draws of 7 x INT64_MAX floats,
// 2^66 bytes each.
spmd.mesh @mesh ["x"=2, "y"=3]
func.func @draw(%seed: tensor<i64> {spmd.layout = #spmd.layout<@mesh, [R, R]>},
                %step: tensor<i64> {spmd.layout = #spmd.layout<@mesh, [R, R]>})
    -> (tensor<7x9223372036854775807xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>}, tensor<7x9223372036854775807xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>},
        tensor<7x9223372036854775807xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>}) {
  %u = spmd.random "uniform"(-1.0, 3.0) seed %seed step %step : tensor<7x9223372036854775807xf32>
  %n = spmd.random "normal"(0.5, 2.0) seed %seed step %step : tensor<7x9223372036854775807xf32>
  %b = spmd.random "bernoulli"(0.3, 0.0) seed %seed step %step : tensor<7x9223372036854775807xf32>
  return %u, %n, %b : tensor<7x9223372036854775807xf32>, tensor<7x9223372036854775807xf32>, tensor<7x9223372036854775807xf32>
}
