// RUN: spmd-opt %s --spmd-propagate --spmd-partition | FileCheck %s
// Shard sizes of dims near INT64_MAX: ceil(n / k) as (n + k - 1) / k
// wrapped negative, giving local types such as tensor<-3074457345618258602xf32>.
// The elements are i8: a tensor whose byte size overflows int64 is an input
// error (spmd-check-input).

// 2^63 - 2 divides by 3: every shard is static.
spmd.mesh @mesh ["x"=3]
// CHECK-LABEL: func.func @even
// CHECK-SAME: tensor<3074457345618258602xi8>
// CHECK-NOT: tensor<-
func.func @even(%a: tensor<9223372036854775806xi8> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<9223372036854775806xi8> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) {
  %e = tensor.empty() : tensor<9223372036854775806xi8>
  // CHECK: linalg.add {{.*}} -> tensor<3074457345618258602xi8>
  %r = linalg.add ins(%a, %a : tensor<9223372036854775806xi8>, tensor<9223372036854775806xi8>) outs(%e : tensor<9223372036854775806xi8>) -> tensor<9223372036854775806xi8>
  return %r : tensor<9223372036854775806xi8>
}
