// RUN: spmd-opt %s --spmd-expand-random | FileCheck %s
// RUN: spmd-opt %s --spmd-partition-pipeline | FileCheck %s --check-prefix=PART

// Each spmd.random becomes an elementwise linalg.generic over its result:
// the element's global row-major index from linalg.index, plus the op's
// counter offset (allocated in program order after the fixed ones), then
// ten Philox rounds keyed by the seed on (index, step).
// CHECK-LABEL: func.func @draws
// CHECK: %[[E:.*]] = tensor.empty() : tensor<5x8xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<i64>, tensor<i64>) outs(%[[E]] : tensor<5x8xf32>)
// The first free range starts after the fixed op's 40..45.
// CHECK: arith.constant 46 : i64
// CHECK: linalg.index 0
// CHECK: arith.constant 8 : i64
// CHECK: linalg.index 1
// CHECK-COUNT-20: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.uitofp
// CHECK: linalg.yield
// The op with a fixed offset keeps it.
// CHECK: arith.constant 40 : i64
// CHECK: math.log
// CHECK: math.cos
// CHECK-NOT: spmd.random
func.func @draws(%seed: tensor<i64>, %step: tensor<i64>) -> (tensor<5x8xf32>, tensor<6xf32>) {
  %u = spmd.random "uniform"(0.0, 1.0) seed %seed step %step : tensor<5x8xf32>
  %n = spmd.random "normal"(0.0, 1.0) seed %seed step %step {offset = 40 : i64} : tensor<6xf32>
  return %u, %n : tensor<5x8xf32>, tensor<6xf32>
}

// Partitioned, the draw takes the result's layout (rows on 4 ranks: 2,2,1,0)
// with no collective, and its row index becomes the global one.
// PART-LABEL: func.func @sharded
// PART-NOT: spmd.all_gather
// PART: spmd.local_offset @mesh ["x"] of 5 : index
// PART: linalg.generic
// PART-SAME: outs(%{{.*}} : tensor<?x8xf32>)
// PART: linalg.index 0
spmd.mesh @mesh ["x"=4]
func.func @sharded(%seed: tensor<i64> {spmd.layout = #spmd.layout<@mesh, [R]>},
                   %step: tensor<i64> {spmd.layout = #spmd.layout<@mesh, [R]>})
    -> (tensor<5x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) {
  %u = spmd.random "bernoulli"(0.5, 0.0) seed %seed step %step : tensor<5x8xf32>
  return %u : tensor<5x8xf32>
}
