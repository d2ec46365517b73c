// RUN: spmd-opt %s --pass-pipeline='builtin.module(spmd-propagate{device=cpu})' | FileCheck %s
// RUN: not spmd-opt %s --pass-pipeline='builtin.module(spmd-propagate{device=tpu})' 2>&1 | FileCheck %s --check-prefix=ERR

// The device profile (compute next to communication in the cost model) is
// chosen by name; an unknown one is an error that names the known ones.
// ERR: error: spmd-propagate: unknown device 'tpu' (known: h100, cpu)

spmd.mesh @tp ["tp"=4]

// CHECK-LABEL: func.func @relu
// CHECK: linalg.generic
// CHECK-SAME: spmd.layout = #spmd.layout<@tp, [S(0)]>
func.func @relu(%x: tensor<64x32xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>})
    -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}
