// RUN: spmd-opt %s | FileCheck %s
// RUN: spmd-opt %s | spmd-opt | FileCheck %s
// RUN: spmd-opt %s --mlir-print-op-generic | spmd-opt | FileCheck %s
// Ops and attributes of partitioned (local) programs.

spmd.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @local
// CHECK-SAME: {spmd.global_type = tensor<13x16xf32>, spmd.layout = #spmd.layout<@mesh, [R, S(0)]>}
// CHECK-SAME: -> (tensor<8x16xf32> {spmd.global_type = tensor<8x16xf32>, spmd.layout = #spmd.layout<@mesh, [P(sum), R]>})
func.func @local(%x: tensor<?x16xf32> {spmd.global_type = tensor<13x16xf32>,
                                       spmd.layout = #spmd.layout<@mesh, [R, S(0)]>},
                 %y: tensor<8x16xf32>)
    -> (tensor<8x16xf32> {spmd.global_type = tensor<8x16xf32>,
                          spmd.layout = #spmd.layout<@mesh, [P(sum), R]>}) {
  // CHECK: spmd.local_size @mesh ["tp"] of 13 : index
  %n = spmd.local_size @mesh ["tp"] of 13 : index
  // CHECK: spmd.local_size @mesh ["dp", "tp"] of 5 : index
  %m = spmd.local_size @mesh ["dp", "tp"] of 5 : index
  // CHECK: spmd.local_size @mesh ["tp"] of 0 : index
  %z = spmd.local_size @mesh ["tp"] of 0 : index
  // CHECK: spmd.local_offset @mesh ["tp"] of 13 : index
  %o = spmd.local_offset @mesh ["tp"] of 13 : index
  // CHECK: spmd.local_offset @mesh ["dp", "tp"] of 5 : index
  %o2 = spmd.local_offset @mesh ["dp", "tp"] of 5 : index
  // CHECK: spmd.partial_from_replicated %{{.*}} on @mesh ["dp"] sum : tensor<8x16xf32>
  %p = spmd.partial_from_replicated %y on @mesh ["dp"] sum : tensor<8x16xf32>
  // CHECK: spmd.partial_from_replicated %{{.*}} on @mesh ["dp", "tp"] max : tensor<?x16xf32>
  %q = spmd.partial_from_replicated %x on @mesh ["dp", "tp"] max : tensor<?x16xf32>
  return %p : tensor<8x16xf32>
}
