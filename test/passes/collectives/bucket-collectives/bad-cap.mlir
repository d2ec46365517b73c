// RUN: not spmd-opt %s -spmd-bucket-collectives=cap-bytes=-1 2>&1 | FileCheck %s

// RUN: not spmd-opt %s -spmd-bucket-collectives=first-cap-bytes=-2 2>&1 | FileCheck %s --check-prefix=FIRST

// RUN: not spmd-opt %s -spmd-bucket-collectives=gather-reduce-bytes=-3 2>&1 | FileCheck %s --check-prefix=RIDE

// CHECK: error: spmd-bucket-collectives: cap-bytes must be >= 0, got -1
// FIRST: error: spmd-bucket-collectives: first-cap-bytes must be >= 0, got -2
// RIDE: error: spmd-bucket-collectives: gather-reduce-bytes must be >= 0, got -3
spmd.mesh @dp2 ["dp"=2]
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = spmd.all_reduce %a on @dp2 ["dp"] sum : tensor<4xf32>
  return %r : tensor<4xf32>
}
