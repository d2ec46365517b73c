// RUN: spmd-opt %s --spmd-partition=explain=true -verify-diagnostics | FileCheck %s
// With explain=true every inserted collective carries a remark naming the
// spmd.constrain that forced it, and its reason when it has one.

spmd.mesh @m ["a"=2, "b"=2]

// CHECK-LABEL: func.func @explained
func.func @explained(%x: tensor<8x8xf32> {spmd.layout = #spmd.layout<@m, [P(sum), S(0)]>})
    -> (tensor<8x8xf32> {spmd.layout = #spmd.layout<@m, [R, R]>},
        tensor<8x8xf32> {spmd.layout = #spmd.layout<@m, [S(1), S(0)]>}) {
  // CHECK: spmd.all_reduce
  // CHECK-NEXT: spmd.all_gather
  // expected-remark @+2 {{spmd-partition: spmd.all_reduce over ["a"] inserted because spmd.constrain changes #spmd.layout<@m, [P(sum), S(0)]> to #spmd.layout<@m, [R, R]> (step: all_reduce([a], sum) -> [R, S(0)]); reason: the loss is returned replicated}}
  // expected-remark @+1 {{spmd-partition: spmd.all_gather over ["b"] inserted because spmd.constrain changes #spmd.layout<@m, [P(sum), S(0)]> to #spmd.layout<@m, [R, R]> (step: all_gather([b], dim 0) -> [R, R]); reason: the loss is returned replicated}}
  %r = spmd.constrain %x to #spmd.layout<@m, [R, R]> : tensor<8x8xf32> {reason = "the loss is returned replicated"}
  // Without a reason attribute the remark still names the constrain.
  // CHECK: spmd.reduce_scatter
  // expected-remark @+1 {{spmd-partition: spmd.reduce_scatter over ["a"] inserted because spmd.constrain changes #spmd.layout<@m, [P(sum), S(0)]> to #spmd.layout<@m, [S(1), S(0)]> (step: reduce_scatter([a], dim 1, sum) -> [S(1), S(0)])}}
  %s = spmd.constrain %x to #spmd.layout<@m, [S(1), S(0)]> : tensor<8x8xf32>
  return %r, %s : tensor<8x8xf32>, tensor<8x8xf32>
}
