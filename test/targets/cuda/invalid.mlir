// What the CUDA printer cannot print exactly is an error naming the op and
// the reason, never code.
// RUN: spmd-opt %s --split-input-file --spmd-emit-cuda -verify-diagnostics

#id = affine_map<(d0) -> (d0)>
module attributes {spmd.plan_version = 1 : i64} {
func.func @cbrt(%x: memref<8xf32>, %y: memref<8xf32>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    // expected-error @below {{'math.cbrt' op cannot be printed as CUDA: no CUDA form for this op}}
    %r = math.cbrt %a : f32
    linalg.yield %r : f32
  }
  return
}
}

// -----

#id = affine_map<(d0) -> (d0)>
module attributes {spmd.plan_version = 1 : i64} {
// expected-error @below {{'func.func' op cannot be printed as CUDA: argument 0 has element type 'f8E4M3FN'}}
func.func @f8(%x: memref<8xf8E4M3FN>, %y: memref<8xf32>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<8xf8E4M3FN>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f8E4M3FN, %o: f32):
    %r = arith.extf %a : f8E4M3FN to f32
    linalg.yield %r : f32
  }
  return
}
}

// -----

// Both loops parallel but the output ignores d1: threads would race.
module attributes {spmd.plan_version = 1 : i64} {
func.func @race(%x: memref<4x8xf32>, %y: memref<4xf32>) attributes {spmd.plan_kernel} {
  // expected-error @below {{'linalg.generic' op cannot be printed as CUDA: a parallel loop does not index every output (threads would race on one element)}}
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
}

// -----

// An in-place transpose reads elements other threads write.
module attributes {spmd.plan_version = 1 : i64} {
func.func @inplace_transpose(%x: memref<4x4xf32>) attributes {spmd.plan_kernel} {
  %t = memref.transpose %x (d0, d1) -> (d1, d0) : memref<4x4xf32> to memref<4x4xf32, strided<[1, 4]>>
  // expected-error @below {{'linalg.copy' op cannot be printed as CUDA: it reads and writes overlapping views of argument 0 at different elements}}
  linalg.copy ins(%t : memref<4x4xf32, strided<[1, 4]>>) outs(%x : memref<4x4xf32>)
  return
}
}

// -----

// A non-identity layout argument.
module attributes {spmd.plan_version = 1 : i64} {
// expected-error @below {{'func.func' op cannot be printed as CUDA: argument 0 has a non-identity layout}}
func.func @strided_arg(%x: memref<4x4xf32, strided<[8, 1]>>, %y: memref<4x4xf32>) attributes {spmd.plan_kernel} {
  linalg.copy ins(%x : memref<4x4xf32, strided<[8, 1]>>) outs(%y : memref<4x4xf32>)
  return
}
}

// -----

// A vector inside the region.
#id = affine_map<(d0) -> (d0)>
module attributes {spmd.plan_version = 1 : i64} {
func.func @vector(%x: memref<8xf32>, %y: memref<8xf32>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    // expected-error @below {{'vector.broadcast' op cannot be printed as CUDA: its result type is not f16/bf16/f32/f64/i1/i8/i16/i32/i64/index}}
    %v = vector.broadcast %a : f32 to vector<4xf32>
    %r = vector.extract %v[0] : f32 from vector<4xf32>
    linalg.yield %r : f32
  }
  return
}
}
