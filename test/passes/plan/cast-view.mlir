// RUN: spmd-opt %s --spmd-compile | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t/in %t/out
// RUN: %python -c "import numpy as np; np.save('%t/in/arg0.npy', np.arange(32, dtype=np.float32).reshape(4, 8))"
// RUN: spmd-run %s --input-dir %t/in --output-dir %t/out
// RUN: %python -c "import numpy as np; assert (np.load('%t/out/result0.npy') == 2 * np.arange(32).reshape(4, 8)).all()"

// Casts between static and dynamic types fold away before the plan: the
// kernel takes the dynamic argument and writes a static arena buffer.
// CHECK-LABEL: func.func @c(
// CHECK-NEXT: %[[B:.*]] = spmd.plan_buffer offset 0 bytes 128 : memref<4x8xf32>
// CHECK-NEXT: spmd.plan_kernel @c_kernel_0(%arg0, %[[B]]) : memref<?x8xf32>, memref<4x8xf32>
// CHECK-NEXT: return %[[B]]
func.func @c(%x: tensor<?x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
  } -> tensor<?x8xf32>
  %r = tensor.cast %y : tensor<?x8xf32> to tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
