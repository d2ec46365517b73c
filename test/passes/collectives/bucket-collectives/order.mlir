// RUN: spmd-opt %s -split-input-file -spmd-bucket-collectives | FileCheck %s

// A result used before the next gradient exists: the fused op could not
// come after that gradient and before the use, so the bucket closes and a
// new one starts; the collectives stay in program order.
spmd.mesh @dp2 ["dp"=2]

// CHECK-LABEL: func.func @use_between
// CHECK-SAME: (%[[A:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>, %[[C:[^:]*]]: tensor<4xf32>, %[[D:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT: %[[CAT1:.*]] = tensor.concat dim(0) %[[A]], %[[B]]
// CHECK-NEXT: %[[R1:.*]] = spmd.all_reduce %[[CAT1]] {{.*}} : tensor<8xf32>
// CHECK-NEXT: %[[RA:.*]] = tensor.extract_slice %[[R1]][0] [4] [1]
// CHECK-NEXT: %[[RB:.*]] = tensor.extract_slice %[[R1]][4] [4] [1]
// CHECK-NEXT: %[[U:.*]] = arith.addf %[[RA]], %[[C]]
// CHECK-NEXT: %[[CAT2:.*]] = tensor.concat dim(0) %[[U]], %[[D]]
// CHECK-NEXT: %[[R2:.*]] = spmd.all_reduce %[[CAT2]] {{.*}} : tensor<8xf32>
// CHECK-NEXT: %[[RU:.*]] = tensor.extract_slice %[[R2]][0] [4] [1]
// CHECK-NEXT: %[[RD:.*]] = tensor.extract_slice %[[R2]][4] [4] [1]
// CHECK-NEXT: return %[[RB]], %[[RU]], %[[RD]]
func.func @use_between(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>, %d: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %ra = spmd.all_reduce %a on @dp2 ["dp"] sum : tensor<4xf32>
  %rb = spmd.all_reduce %b on @dp2 ["dp"] sum : tensor<4xf32>
  // The next gradient needs %ra: it cannot join %ra's bucket.
  %u = arith.addf %ra, %c : tensor<4xf32>
  %ru = spmd.all_reduce %u on @dp2 ["dp"] sum : tensor<4xf32>
  %rd = spmd.all_reduce %d on @dp2 ["dp"] sum : tensor<4xf32>
  return %rb, %ru, %rd : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// An all_reduce of an all_reduce's result can never share its bucket.
spmd.mesh @mesh ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @chained
// CHECK-SAME: (%[[A:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT: %[[R1:.*]] = spmd.all_reduce %[[A]] on @mesh ["tp"] sum
// CHECK-NEXT: %[[R2:.*]] = spmd.all_reduce %[[R1]] on @mesh ["tp"] sum
// CHECK-NEXT: return %[[R2]]
func.func @chained(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r1 = spmd.all_reduce %a on @mesh ["tp"] sum : tensor<4xf32>
  %r2 = spmd.all_reduce %r1 on @mesh ["tp"] sum : tensor<4xf32>
  return %r2 : tensor<4xf32>
}

// -----

// An all_reduce of another kind between the members stays before the fused
// one (it comes first in the program), and the fused one never moves above
// the definition of its last operand.
spmd.mesh @mesh ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @keeps_order
// CHECK-SAME: (%[[A:[^:]*]]: tensor<4xf32>, %[[T:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT: %[[RT:.*]] = spmd.all_reduce %[[T]] on @mesh ["tp"] sum
// CHECK-NEXT: %[[G:.*]] = arith.mulf %[[B]], %[[B]]
// CHECK-NEXT: %[[CAT:.*]] = tensor.concat dim(0) %[[A]], %[[G]]
// CHECK-NEXT: spmd.all_reduce %[[CAT]] on @mesh ["dp"] sum : tensor<8xf32>
func.func @keeps_order(%a: tensor<4xf32>, %t: tensor<4xf32>, %b: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %ra = spmd.all_reduce %a on @mesh ["dp"] sum : tensor<4xf32>
  %rt = spmd.all_reduce %t on @mesh ["tp"] sum : tensor<4xf32>
  %g = arith.mulf %b, %b : tensor<4xf32>
  %rb = spmd.all_reduce %g on @mesh ["dp"] sum : tensor<4xf32>
  return %ra, %rt, %rb : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Buckets form inside nested regions too, never across region boundaries.
spmd.mesh @mesh ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @loop
// CHECK: spmd.all_reduce %{{.*}} on @mesh ["dp"] sum : tensor<4xf32>
// CHECK: scf.for
// CHECK-NOT: spmd.all_reduce
// CHECK: tensor.concat
// CHECK-NEXT: spmd.all_reduce %{{.*}} on @mesh ["dp"] sum : tensor<8xf32>
// CHECK-NOT: spmd.all_reduce
// CHECK: scf.yield
func.func @loop(%a: tensor<4xf32>, %b: tensor<4xf32>, %n: index) -> (tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ra = spmd.all_reduce %a on @mesh ["dp"] sum : tensor<4xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %b) -> tensor<4xf32> {
    %r1 = spmd.all_reduce %x on @mesh ["dp"] sum : tensor<4xf32>
    %r2 = spmd.all_reduce %ra on @mesh ["dp"] sum : tensor<4xf32>
    %s = arith.addf %r1, %r2 : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  return %ra, %r : tensor<4xf32>, tensor<4xf32>
}

// -----

// An optimizer step between the reductions (SGD with momentum reduces the
// new momentum, computed right before each parameter's update): the ops
// computing the second operand depend on no member, so they move above the
// first update and the two reductions share a bucket.
spmd.mesh @dp2 ["dp"=2]

// CHECK-LABEL: func.func @optimizer_between
// CHECK-SAME: (%[[G1:[^:]*]]: tensor<4xf32>, %[[G2:[^:]*]]: tensor<4xf32>, %[[M2:[^:]*]]: tensor<4xf32>, %[[P1:[^:]*]]: tensor<4xf32>, %[[P2:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT: %[[B2:.*]] = arith.mulf %[[M2]], %[[M2]]
// CHECK-NEXT: %[[X2:.*]] = arith.addf %[[G2]], %[[B2]]
// CHECK-NEXT: %[[CAT:.*]] = tensor.concat dim(0) %[[G1]], %[[X2]]
// CHECK-NEXT: %[[R:.*]] = spmd.all_reduce %[[CAT]] on @dp2 ["dp"] sum : tensor<8xf32>
// CHECK-NEXT: %[[R1:.*]] = tensor.extract_slice %[[R]][0] [4] [1]
// CHECK-NEXT: %[[R2:.*]] = tensor.extract_slice %[[R]][4] [4] [1]
// CHECK-NEXT: %[[N1:.*]] = arith.subf %[[P1]], %[[R1]]
// CHECK-NEXT: %[[N2:.*]] = arith.subf %[[P2]], %[[R2]]
// CHECK-NEXT: return %[[N1]], %[[N2]]
func.func @optimizer_between(%g1: tensor<4xf32>, %g2: tensor<4xf32>, %m2: tensor<4xf32>,
                             %p1: tensor<4xf32>, %p2: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r1 = spmd.all_reduce %g1 on @dp2 ["dp"] sum : tensor<4xf32>
  %n1 = arith.subf %p1, %r1 : tensor<4xf32>
  %b2 = arith.mulf %m2, %m2 : tensor<4xf32>
  %x2 = arith.addf %g2, %b2 : tensor<4xf32>
  %r2 = spmd.all_reduce %x2 on @dp2 ["dp"] sum : tensor<4xf32>
  %n2 = arith.subf %p2, %r2 : tensor<4xf32>
  return %n1, %n2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The same with a collective among the producers: collectives never move,
// so the producer of %g2's reduction cannot rise above %n1; %n1 (which uses
// the first member) sinks below it instead and the two dp reductions share
// a bucket after the tp one.
spmd.mesh @mesh ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @collective_between
// CHECK: %[[T:.*]] = spmd.all_reduce %arg1 on @mesh ["tp"] max
// CHECK: %[[C:.*]] = tensor.concat dim(0) %arg0, %[[T]]
// CHECK: %[[R:.*]] = spmd.all_reduce %[[C]] on @mesh ["dp"] sum : tensor<8xf32>
// CHECK: arith.subf %arg2,
// CHECK-NOT: spmd.all_reduce
func.func @collective_between(%g1: tensor<4xf32>, %g2: tensor<4xf32>, %p1: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %r1 = spmd.all_reduce %g1 on @mesh ["dp"] sum : tensor<4xf32>
  %n1 = arith.subf %p1, %r1 : tensor<4xf32>
  %t2 = spmd.all_reduce %g2 on @mesh ["tp"] max : tensor<4xf32>
  %r2 = spmd.all_reduce %t2 on @mesh ["dp"] sum : tensor<4xf32>
  return %n1, %r2 : tensor<4xf32>, tensor<4xf32>
}
