// RUN: spmd-opt %s --spmd-cpu-one-hot-loops | FileCheck %s

#tok = affine_map<(b, t, d, v) -> (b, t)>
#tab = affine_map<(b, t, d, v) -> (v, d)>
#emb = affine_map<(b, t, d, v) -> (b, t, d)>
#btok = affine_map<(v, d, b, t) -> (b, t)>
#bg = affine_map<(v, d, b, t) -> (b, t, d)>
#bout = affine_map<(v, d, b, t) -> (v, d)>

// The lookup: a gather, loops over (b, t, d), the vocabulary dim gone.
// CHECK-LABEL: func.func @lookup
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %c5
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %c3
// CHECK: scf.for %[[D:.*]] = %{{.*}} to %c4
// CHECK: %[[ID:.*]] = memref.load %arg0[%[[B]], %[[T]]] : memref<5x3xi64>
// CHECK: %[[R:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK: %[[GE:.*]] = arith.cmpi sge, %[[R]], %{{.*}}
// CHECK: %[[LT:.*]] = arith.cmpi slt, %[[R]], %c7
// CHECK: %[[IN:.*]] = arith.andi %[[GE]], %[[LT]]
// CHECK: scf.if %[[IN]] {
// CHECK: %[[W:.*]] = memref.load %arg1[%[[R]], %[[D]]] : memref<7x4xf32>
// CHECK: %[[ACC:.*]] = memref.load %arg2[%[[B]], %[[T]], %[[D]]]
// CHECK: %[[SUM:.*]] = arith.addf %[[ACC]], %[[W]] : f32
// CHECK: memref.store %[[SUM]], %arg2[%[[B]], %[[T]], %[[D]]]
func.func @lookup(%idx: memref<5x3xi64>, %table: memref<7x4xf32>,
                  %out: memref<5x3x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#tok, #tab, #emb],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%idx, %table : memref<5x3xi64>, memref<7x4xf32>) outs(%out : memref<5x3x4xf32>) {
  ^bb0(%i: i64, %w: f32, %acc: f32):
    %v = linalg.index 3 : index
    %vi = arith.index_cast %v : index to i64
    %hit = arith.cmpi eq, %i, %vi : i64
    %s = arith.select %hit, %w, %zero : f32
    %r = arith.addf %acc, %s : f32
    linalg.yield %r : f32
  }
  return
}

// The backward on a vocabulary shard (an offset added to the row index):
// a scatter-add at row idx - offset, the token dims outermost.
// CHECK-LABEL: func.func @scatter
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %c5
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %c3
// CHECK: scf.for %[[D:.*]] = %{{.*}} to %c4
// CHECK: %[[ID:.*]] = memref.load %arg0[%[[B]], %[[T]]]
// CHECK: %[[CAST:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK: %[[R:.*]] = arith.subi %[[CAST]], %arg3 : index
// CHECK: scf.if
// CHECK: memref.load %arg1[%[[B]], %[[T]], %[[D]]]
// CHECK: memref.load %arg2[%[[R]], %[[D]]]
// CHECK: memref.store {{.*}}, %arg2[%[[R]], %[[D]]]
func.func @scatter(%idx: memref<5x3xi64>, %g: memref<5x3x4xf32>,
                   %out: memref<7x4xf32>, %offset: index) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#btok, #bg, #bout],
      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%idx, %g : memref<5x3xi64>, memref<5x3x4xf32>) outs(%out : memref<7x4xf32>) {
  ^bb0(%i: i64, %x: f32, %acc: f32):
    %v = linalg.index 0 : index
    %vo = arith.addi %v, %offset : index
    %vi = arith.index_cast %vo : index to i64
    %hit = arith.cmpi eq, %vi, %i : i64
    %s = arith.select %hit, %x, %zero : f32
    %r = arith.addf %s, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// Not one-hot: the compared index feeds another op too (the select's
// value depends on it), so the generic stays.
// CHECK-LABEL: func.func @not_one_hot
// CHECK: linalg.generic
func.func @not_one_hot(%idx: memref<5x3xi64>, %table: memref<7x4xf32>,
                       %out: memref<5x3x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#tok, #tab, #emb],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%idx, %table : memref<5x3xi64>, memref<7x4xf32>) outs(%out : memref<5x3x4xf32>) {
  ^bb0(%i: i64, %w: f32, %acc: f32):
    %v = linalg.index 3 : index
    %vi = arith.index_cast %v : index to i64
    %hit = arith.cmpi eq, %i, %vi : i64
    %vf = arith.sitofp %vi : i64 to f32
    %s = arith.select %hit, %vf, %zero : f32
    %r = arith.addf %acc, %s : f32
    linalg.yield %r : f32
  }
  return
}

// Not one-hot: the false value is not zero.
// CHECK-LABEL: func.func @not_zero
// CHECK: linalg.generic
func.func @not_zero(%idx: memref<5x3xi64>, %table: memref<7x4xf32>,
                    %out: memref<5x3x4xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.generic {indexing_maps = [#tok, #tab, #emb],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%idx, %table : memref<5x3xi64>, memref<7x4xf32>) outs(%out : memref<5x3x4xf32>) {
  ^bb0(%i: i64, %w: f32, %acc: f32):
    %v = linalg.index 3 : index
    %vi = arith.index_cast %v : index to i64
    %hit = arith.cmpi eq, %i, %vi : i64
    %s = arith.select %hit, %w, %one : f32
    %r = arith.addf %acc, %s : f32
    linalg.yield %r : f32
  }
  return
}
