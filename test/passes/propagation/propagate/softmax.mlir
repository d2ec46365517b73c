// RUN: spmd-opt %s --split-input-file --spmd-propagate -verify-diagnostics | FileCheck %s

// Softmax over a split row dim: the max reduction gives P(max), which the
// nonlinear subtraction cannot take, so it is reduced (P(max) -> R); the
// sum gives P(sum), reduced before the division.

spmd.mesh @tp ["tp"=4]

#xy = affine_map<(i, j) -> (i, j)>
#x = affine_map<(i, j) -> (i)>

// CHECK-LABEL: func.func @softmax
// CHECK: %[[M:.*]] = linalg.reduce {{.*}} {spmd.layout = #spmd.layout<@tp, [P(max)]>}
// CHECK: %[[MR:.*]] = spmd.constrain %[[M]] to #spmd.layout<@tp, [R]>
// CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%arg0, %[[MR]] {{.*}} attrs = {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK: %[[S:.*]] = linalg.reduce ins(%[[E]] {{.*}} {spmd.layout = #spmd.layout<@tp, [P(sum)]>}
// CHECK: %[[SR:.*]] = spmd.constrain %[[S]] to #spmd.layout<@tp, [R]>
// CHECK: linalg.generic {{.*}} ins(%[[E]], %[[SR]] {{.*}} attrs = {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK-NOT: spmd.constrain
func.func @softmax(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e8 = tensor.empty() : tensor<8xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.reduce ins(%a : tensor<8x16xf32>) outs(%fm : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  %e = tensor.empty() : tensor<8x16xf32>
  %ex = linalg.generic {indexing_maps = [#xy, #x, #xy], iterator_types = ["parallel", "parallel"]}
      ins(%a, %m : tensor<8x16xf32>, tensor<8xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%v: f32, %mx: f32, %o: f32):
      %d = arith.subf %v, %mx : f32
      %x = math.exp %d : f32
      linalg.yield %x : f32
  } -> tensor<8x16xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.reduce ins(%ex : tensor<8x16xf32>) outs(%fs : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %y = linalg.generic {indexing_maps = [#xy, #x, #xy], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %s : tensor<8x16xf32>, tensor<8xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %q = arith.divf %v, %t : f32
      linalg.yield %q : f32
  } -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

#id = affine_map<(i, j) -> (i, j)>

// A payload that reads a loop index (an iota) is split along that loop like
// any other (spmd-partition offsets the index): no gather.
// CHECK-LABEL: func.func @iota
// CHECK-NOT: spmd.constrain
// CHECK: linalg.generic {{.*}} ins(%arg0 {{.*}} attrs = {spmd.layout = #spmd.layout<@tp, [S(1)]>}
// CHECK-NOT: spmd.constrain
func.func @iota(%a: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>}) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%v: f32, %o: f32):
      %j = linalg.index 1 : index
      %ji = arith.index_cast %j : index to i32
      %jf = arith.sitofp %ji : i32 to f32
      %s = arith.addf %v, %jf : f32
      linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
