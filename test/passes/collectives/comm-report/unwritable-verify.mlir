// The same error, anchored at the module, with -verify-diagnostics.
// RUN: spmd-opt %s -split-input-file -verify-diagnostics -spmd-comm-report=out=%t.no-such-dir/report.json -o /dev/null

// expected-error@+1 {{spmd-comm-report: cannot write '}}
module {
  spmd.mesh @tp4 ["tp"=4]
  func.func @mlp(%p: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %y = spmd.all_reduce %p on @tp4 ["tp"] sum : tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
}
