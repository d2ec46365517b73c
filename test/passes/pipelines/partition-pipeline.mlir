// RUN: spmd-opt %s --pass-pipeline='builtin.module(spmd-partition-pipeline{bucket=false})' | FileCheck %s
// RUN: spmd-opt %s --spmd-partition-pipeline | FileCheck %s --check-prefix=BUCKET
// RUN: spmd-opt %s --pass-pipeline='builtin.module(spmd-partition-pipeline{explain=true})' -verify-diagnostics -o /dev/null

// Data-parallel step of a 2-layer linear model: the batch is split on dp,
// weights are replicated, and each weight gradient needs one all_reduce
// (bucketed into one by default; bucket=false keeps them apart).
spmd.mesh @mesh ["dp"=4]

// CHECK-LABEL: func.func @grads
// CHECK-SAME: tensor<4x8xf32>
// CHECK-NOT: spmd.all_gather
// CHECK: spmd.all_reduce %{{.*}} on @mesh ["dp"] sum : tensor<8x8xf32>
// CHECK: spmd.all_reduce %{{.*}} on @mesh ["dp"] sum : tensor<8x8xf32>
// CHECK-NOT: spmd.all_reduce
// BUCKET-COUNT-1: spmd.all_reduce %{{.*}} on @mesh ["dp"] sum : tensor<128xf32>
// BUCKET-NOT: spmd.all_reduce
func.func @grads(%x: tensor<16x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                 %dy: tensor<16x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                 %dz: tensor<16x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<8x8xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
        tensor<8x8xf32> {spmd.layout = #spmd.layout<@mesh, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %g1 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                       affine_map<(m, n, k) -> (k, n)>,
                                       affine_map<(m, n, k) -> (m, n)>]
        ins(%x, %dy : tensor<16x8xf32>, tensor<16x8xf32>)
        outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %g2 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                       affine_map<(m, n, k) -> (k, n)>,
                                       affine_map<(m, n, k) -> (m, n)>]
        ins(%x, %dz : tensor<16x8xf32>, tensor<16x8xf32>)
        outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  // The explanation names the annotation that forces each all_reduce.
  // expected-remark @+4 {{spmd-propagate: reshard from #spmd.layout<@mesh, [P(sum)]> to #spmd.layout<@mesh, [R]> for result 0 of the function}}
  // expected-remark @+3 {{spmd-propagate: reshard from #spmd.layout<@mesh, [P(sum)]> to #spmd.layout<@mesh, [R]> for result 1 of the function}}
  // expected-remark @+2 {{spmd-partition: spmd.all_reduce over ["dp"] inserted because spmd.constrain changes #spmd.layout<@mesh, [P(sum)]> to #spmd.layout<@mesh, [R]> (step: all_reduce([dp], sum) -> [R]); reason: reshard from #spmd.layout<@mesh, [P(sum)]> to #spmd.layout<@mesh, [R]> for result 0 of the function}}
  // expected-remark @+1 {{spmd-partition: spmd.all_reduce over ["dp"] inserted because spmd.constrain changes #spmd.layout<@mesh, [P(sum)]> to #spmd.layout<@mesh, [R]> (step: all_reduce([dp], sum) -> [R]); reason: reshard from #spmd.layout<@mesh, [P(sum)]> to #spmd.layout<@mesh, [R]> for result 1 of the function}}
  return %g1, %g2 : tensor<8x8xf32>, tensor<8x8xf32>
}
