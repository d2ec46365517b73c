// RUN: spmd-opt %s -verify-diagnostics -spmd-bucket-collectives=cap-bytes=-5 -o /dev/null

// expected-error@+1 {{spmd-bucket-collectives: cap-bytes must be >= 0, got -5}}
module {
  spmd.mesh @dp2 ["dp"=2]
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    %r = spmd.all_reduce %a on @dp2 ["dp"] sum : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
