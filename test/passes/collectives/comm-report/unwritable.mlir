// An output file that cannot be opened is an error naming it, and the tool
// fails.
// RUN: not spmd-opt %s -spmd-comm-report=out=%t.no-such-dir/report.json 2>&1 | FileCheck %s -DPATH=%t.no-such-dir/report.json

// CHECK: error: spmd-comm-report: cannot write '[[PATH]]': {{.+}}
// CHECK-NOT: "functions"

spmd.mesh @tp4 ["tp"=4]

func.func @mlp(%p: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = spmd.all_reduce %p on @tp4 ["tp"] sum : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
