// uniform, normal and bernoulli draws of 7x5 rows nested over a 2x3 mesh
// ([S(0), S(0)]: 4,3 rows then 2,1,1 / 1,1,1), for the CUDA path.
spmd.mesh @mesh ["x"=2, "y"=3]
func.func @draw(%seed: tensor<i64> {spmd.layout = #spmd.layout<@mesh, [R, R]>},
                %step: tensor<i64> {spmd.layout = #spmd.layout<@mesh, [R, R]>})
    -> (tensor<7x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>}, tensor<7x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>},
        tensor<7x5xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(0)]>}) {
  %u = spmd.random "uniform"(-1.0, 3.0) seed %seed step %step : tensor<7x5xf32>
  %n = spmd.random "normal"(0.5, 2.0) seed %seed step %step : tensor<7x5xf32>
  %b = spmd.random "bernoulli"(0.3, 0.0) seed %seed step %step : tensor<7x5xf32>
  return %u, %n, %b : tensor<7x5xf32>, tensor<7x5xf32>, tensor<7x5xf32>
}
