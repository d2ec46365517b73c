// RUN: not spmd-opt %s -spmd-bucket-all-reduces=cap-bytes=-1 2>&1 | FileCheck %s

// CHECK: error: spmd-bucket-all-reduces: cap-bytes must be >= 0, got -1
spmd.mesh @dp2 ["dp"=2]
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = spmd.all_reduce %a on @dp2 ["dp"] sum : tensor<4xf32>
  return %r : tensor<4xf32>
}
