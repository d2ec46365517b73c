// RUN: spmd-opt %s -split-input-file -spmd-bucket-collectives | FileCheck %s

// Interleaved all_reduces of different kinds, axes, meshes and element types
// form one bucket per kind of all_reduce; a lone one stays as it is.
spmd.mesh @mesh ["dp"=2, "tp"=2]
spmd.mesh @other ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @mixed
// CHECK-SAME: (%[[A:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>, %[[C:[^:]*]]: tensor<2xf32>, %[[D:[^:]*]]: tensor<4xf32>,
// CHECK-SAME: %[[E:[^:]*]]: tensor<3xf32>, %[[F:[^:]*]]: tensor<4xbf16>, %[[G:[^:]*]]: tensor<4xbf16>, %[[H:[^:]*]]: tensor<4xf32>, %[[I:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT: %[[C1:.*]] = tensor.concat dim(0) %[[A]], %[[C]] :
// CHECK-NEXT: %[[R1:.*]] = spmd.all_reduce %[[C1]] on @mesh ["dp"] sum : tensor<6xf32>
// CHECK-NEXT: %[[A1:.*]] = tensor.extract_slice %[[R1]][0] [4] [1]
// CHECK-NEXT: %[[C2:.*]] = tensor.extract_slice %[[R1]][4] [2] [1]
// CHECK-NEXT: %[[CB:.*]] = tensor.concat dim(0) %[[B]], %[[E]] :
// CHECK-NEXT: %[[RB:.*]] = spmd.all_reduce %[[CB]] on @mesh ["tp"] sum : tensor<7xf32>
// CHECK-NEXT: %[[B1:.*]] = tensor.extract_slice %[[RB]][0] [4] [1]
// CHECK-NEXT: %[[E1:.*]] = tensor.extract_slice %[[RB]][4] [3] [1]
// The one avg all_reduce is alone: unchanged, in its place.
// CHECK-NEXT: %[[D1:.*]] = spmd.all_reduce %[[D]] on @mesh ["dp"] avg : tensor<4xf32>
// CHECK-NEXT: %[[CF:.*]] = tensor.concat dim(0) %[[F]], %[[G]] :
// CHECK-NEXT: %[[RF:.*]] = spmd.all_reduce %[[CF]] on @mesh ["dp"] sum : tensor<8xbf16>
// CHECK-NEXT: %[[F1:.*]] = tensor.extract_slice %[[RF]][0] [4] [1]
// CHECK-NEXT: %[[G1:.*]] = tensor.extract_slice %[[RF]][4] [4] [1]
// Other mesh, and the axes in the other order: not the same group order.
// CHECK-NEXT: %[[H1:.*]] = spmd.all_reduce %[[H]] on @other ["dp"] sum
// CHECK-NEXT: %[[I1:.*]] = spmd.all_reduce %[[I]] on @mesh ["tp", "dp"] sum
// CHECK-NEXT: return %[[A1]], %[[B1]], %[[C2]], %[[D1]], %[[E1]], %[[F1]], %[[G1]], %[[H1]], %[[I1]]
func.func @mixed(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<2xf32>, %d: tensor<4xf32>,
                 %e: tensor<3xf32>, %f: tensor<4xbf16>, %g: tensor<4xbf16>, %h: tensor<4xf32>,
                 %i: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<3xf32>,
        tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>) {
  %ra = spmd.all_reduce %a on @mesh ["dp"] sum : tensor<4xf32>
  %rb = spmd.all_reduce %b on @mesh ["tp"] sum : tensor<4xf32>
  %rc = spmd.all_reduce %c on @mesh ["dp"] sum : tensor<2xf32>
  %rd = spmd.all_reduce %d on @mesh ["dp"] avg : tensor<4xf32>
  %re = spmd.all_reduce %e on @mesh ["tp"] sum : tensor<3xf32>
  %rf = spmd.all_reduce %f on @mesh ["dp"] sum : tensor<4xbf16>
  %rg = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<4xbf16>
  %rh = spmd.all_reduce %h on @other ["dp"] sum : tensor<4xf32>
  %ri = spmd.all_reduce %i on @mesh ["tp", "dp"] sum : tensor<4xf32>
  return %ra, %rb, %rc, %rd, %re, %rf, %rg, %rh, %ri
      : tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<3xf32>,
        tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Dynamic shapes are never bucketed: their size differs between ranks.
// The static ones around them are.
spmd.mesh @mesh ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[A:[^:]*]]: tensor<4xf32>, %[[X:[^:]*]]: tensor<?xf32>, %[[Y:[^:]*]]: tensor<?x4xf32>, %[[B:[^:]*]]: tensor<4xf32>)
// CHECK-DAG: spmd.all_reduce %[[X]] on @mesh ["dp"] sum : tensor<?xf32>
// CHECK-DAG: spmd.all_reduce %[[Y]] on @mesh ["dp"] sum : tensor<?x4xf32>
// CHECK-DAG: %[[C:.*]] = tensor.concat dim(0) %[[A]], %[[B]]
// CHECK-DAG: spmd.all_reduce %[[C]] on @mesh ["dp"] sum : tensor<8xf32>
// CHECK: return
func.func @dynamic(%a: tensor<4xf32>, %x: tensor<?xf32>, %y: tensor<?x4xf32>, %b: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<?xf32>, tensor<?x4xf32>, tensor<4xf32>) {
  %ra = spmd.all_reduce %a on @mesh ["dp"] sum : tensor<4xf32>
  %rx = spmd.all_reduce %x on @mesh ["dp"] sum : tensor<?xf32>
  %ry = spmd.all_reduce %y on @mesh ["dp"] sum : tensor<?x4xf32>
  %rb = spmd.all_reduce %b on @mesh ["dp"] sum : tensor<4xf32>
  return %ra, %rx, %ry, %rb : tensor<4xf32>, tensor<?xf32>, tensor<?x4xf32>, tensor<4xf32>
}

// -----

// Scalars (rank 0) go through a 1-element view.
spmd.mesh @mesh ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @scalars
// CHECK: %[[E0:.*]] = tensor.expand_shape %{{.*}} [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK: %[[E1:.*]] = tensor.expand_shape %{{.*}} [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK: %[[C:.*]] = tensor.concat dim(0) %[[E0]], %[[E1]]
// CHECK: %[[R:.*]] = spmd.all_reduce %[[C]] on @mesh ["dp"] max : tensor<2xf32>
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[R]][0] [1] [1]
// CHECK: %[[L0:.*]] = tensor.collapse_shape %[[S0]] [] : tensor<1xf32> into tensor<f32>
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[R]][1] [1] [1]
// CHECK: %[[L1:.*]] = tensor.collapse_shape %[[S1]] [] : tensor<1xf32> into tensor<f32>
// CHECK: return %[[L0]], %[[L1]]
func.func @scalars(%a: tensor<f32>, %b: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %ra = spmd.all_reduce %a on @mesh ["dp"] max : tensor<f32>
  %rb = spmd.all_reduce %b on @mesh ["dp"] max : tensor<f32>
  return %ra, %rb : tensor<f32>, tensor<f32>
}
