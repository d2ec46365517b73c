// RUN: spmd-opt %s --split-input-file --spmd-propagate=explain -verify-diagnostics | FileCheck %s
// RUN: spmd-opt %s --split-input-file --spmd-propagate --spmd-partition | FileCheck %s --check-prefix=PART

// A linalg body that reads a tensor from above at indices it computes (a
// gather: GPT-J's sin/cos table at the position ids, MoE expert weights
// picked per token) reads it at global coordinates: every rank needs all of
// it. spmd-propagate gives the body a replicated copy; the loops themselves
// stay sharded (the token loop on dp).

spmd.mesh @dp ["dp"=4]

// CHECK-LABEL: func.func @gather_rows
// CHECK: %[[W:.*]] = spmd.constrain %arg1 to #spmd.layout<@dp, [R]>
// CHECK: linalg.generic
// CHECK-SAME: spmd.layout = #spmd.layout<@dp, [S(0)]>
// CHECK: tensor.extract %[[W]][
// PART-LABEL: func.func @gather_rows
// PART: %[[W:.*]] = spmd.all_gather %arg1 on @dp ["dp"] dim 0 : tensor<?x8xf32> -> tensor<10x8xf32>
// PART: linalg.generic {{.*}} ins(%arg0 : tensor<?xi64>)
// PART: tensor.extract %[[W]][
func.func @gather_rows(%ids: tensor<6xi64> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                       %w: tensor<10x8xf32> {spmd.layout = #spmd.layout<@dp, [S(0)]>})
    -> tensor<6x8xf32> {
  %e = tensor.empty() : tensor<6x8xf32>
  // expected-remark @+1 {{spmd-propagate: read inside a region at computed indices: whole on every rank}}
  %g = linalg.generic {
      indexing_maps = [affine_map<(t, d) -> (t)>, affine_map<(t, d) -> (t, d)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x8xf32>) {
    ^bb0(%id: i64, %out: f32):
      %r = arith.index_cast %id : i64 to index
      %d = linalg.index 1 : index
      %v = tensor.extract %w[%r, %d] : tensor<10x8xf32>
      linalg.yield %v : f32
  } -> tensor<6x8xf32>
  return %g : tensor<6x8xf32>
}

// -----

spmd.mesh @dp ["dp"=4]

// A tensor read by two bodies gets a copy per op; one already replicated
// needs none (the constrain is to its own layout: no collective).
// CHECK-LABEL: func.func @two_readers
// CHECK-COUNT-2: spmd.constrain %arg1 to #spmd.layout<@dp, [R]>
// PART-LABEL: func.func @two_readers
// PART-NOT: spmd.all_gather
// PART: return
func.func @two_readers(%ids: tensor<8xi64> {spmd.layout = #spmd.layout<@dp, [S(0)]>},
                       %t: tensor<16xf32> {spmd.layout = #spmd.layout<@dp, [R]>})
    -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  // expected-remark @+1 {{spmd-propagate: read inside a region at computed indices: whole on every rank}}
  %a = linalg.generic {
      indexing_maps = [affine_map<(t) -> (t)>, affine_map<(t) -> (t)>],
      iterator_types = ["parallel"]}
      ins(%ids : tensor<8xi64>) outs(%e : tensor<8xf32>) {
    ^bb0(%id: i64, %out: f32):
      %r = arith.index_cast %id : i64 to index
      %v = tensor.extract %t[%r] : tensor<16xf32>
      linalg.yield %v : f32
  } -> tensor<8xf32>
  // expected-remark @+1 {{spmd-propagate: read inside a region at computed indices: whole on every rank}}
  %b = linalg.generic {
      indexing_maps = [affine_map<(t) -> (t)>, affine_map<(t) -> (t)>],
      iterator_types = ["parallel"]}
      ins(%ids : tensor<8xi64>) outs(%e : tensor<8xf32>) {
    ^bb0(%id: i64, %out: f32):
      %r = arith.index_cast %id : i64 to index
      %v = tensor.extract %t[%r] : tensor<16xf32>
      %w = arith.mulf %v, %v : f32
      linalg.yield %w : f32
  } -> tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}
