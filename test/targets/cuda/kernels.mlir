// REQUIRES: nvrtc
// Representative plan kernels printed as CUDA C++ (spmd-emit-cuda), then the
// same text compiled by NVRTC for sm_80/sm_90 and run through the host
// emulation against the CPU backend's kernels (spmd-cuda-check).
// RUN: spmd-opt %s --spmd-emit-cuda=output=%t.cu | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s < %t.cu
// RUN: spmd-cuda-check %s --nvrtc --emulate | FileCheck %s --check-prefix=CHK
// RUN: spmd-cuda-check %s --emulate --dim-size 0 | FileCheck %s --check-prefix=EMPTY
// RUN: spmd-cuda-check %s --emulate --dim-size 70 --seed 7 | FileCheck %s --check-prefix=BIG
// RUN: spmd-cuda-check %s --emulate --row-reductions=false | FileCheck %s --check-prefix=SERIAL
// Buffers 4 bytes past a 16-byte boundary: the vector forms are not taken.
// RUN: spmd-cuda-check %s --emulate --offset-bytes 4 | FileCheck %s --check-prefix=EMPTY
// A wrong result is reported (the check can fail).
// RUN: not spmd-cuda-check %s --emulate --test-break-kernel=row_max | FileCheck %s --check-prefix=BROKEN

// CHK-DAG: nvrtc sm_80: {{[0-9]+}} bytes, 18/18 kernels
// CHK-DAG: nvrtc sm_90: {{[0-9]+}} bytes, 18/18 kernels
// CHK: all checks passed
// EMPTY: all checks passed
// BIG: all checks passed
// SERIAL: kernel row_max (grid_stride, work 6, 246 elements): max abs err {{.*}} ok
// SERIAL: all checks passed
// BROKEN: kernel row_max (warp_per_row, work 6, 246 elements): max abs err {{.*}} MISMATCH
// BROKEN: FAILED: 1 check(s)

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

module attributes {spmd.plan_version = 1 : i64} {

// Elementwise with a broadcast operand: y = gelu(x + b[col]).
// IR-LABEL: func.func @bias_gelu
// IR-SAME: spmd_cuda.launch = "grid_stride", spmd_cuda.work = array<i64: 40>
// CHECK-LABEL: // bias_gelu: grid-stride
// CHECK: void __launch_bounds__(256) bias_gelu(const float *__restrict__ a0,
// CHECK-NEXT: const float *__restrict__ a1,
// CHECK-NEXT: float *__restrict__ a2) {
// CHECK: const long long total = n0 * n1;
// CHECK: for (long long t = spmdk::globalThreadIndex(); t < total; t += spmdk::globalThreadCount()) {
// CHECK: const long long i1 = rest % n1;
// CHECK: const long long i0 = rest;
// CHECK: const float [[X:x[0-9]+]] = a0[i0 * 10LL + i1];
// CHECK: const float [[B:x[0-9]+]] = a1[i1];
// CHECK: = (float)([[X]] + [[B]]);
// CHECK: erff(
// CHECK: a2[i0 * 10LL + i1] =
func.func @bias_gelu(%x: memref<4x10xf32>, %b: memref<10xf32>, %y: memref<4x10xf32>) attributes {spmd.plan_kernel} {
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %rsqrt2 = arith.constant 0.70710678 : f32
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<4x10xf32>, memref<10xf32>) outs(%y : memref<4x10xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %t = arith.mulf %s, %rsqrt2 : f32
    %e = math.erf %t : f32
    %p = arith.addf %e, %one : f32
    %h = arith.mulf %s, %half : f32
    %r = arith.mulf %h, %p : f32
    linalg.yield %r : f32
  }
  return
}

// Softmax's row max: one warp per row, lanes over the row, shuffles. Rows
// whose length is a multiple of 4 and aligned: each lane reads 4
// neighbouring elements (the vector form); else one at a time.
// IR-LABEL: func.func @row_max
// IR-SAME: spmd_cuda.launch = "warp_per_row", spmd_cuda.work = array<i64: 6>
// CHECK-LABEL: // row_max: warp per row
// CHECK: const int lane = threadIdx.x & 31;
// CHECK: for (long long t = spmdk::globalThreadIndex() >> 5; t < total; t += spmdk::globalThreadCount() >> 5) {
// CHECK: float [[P:part[0-9]+]] = spmdk::negInf();
// CHECK: // vector form: 4 neighbouring elements per lane.
// CHECK: if (n1 % 4 == 0 && spmdk::alignedTo<16>(a0 + 0LL)) {
// CHECK: for (long long r = lane * 4; r < n1; r += 32 * 4) {
// CHECK: const spmdk::Vec<float, 4> [[Q:q[0-9]+]] = *reinterpret_cast<const spmdk::Vec<float, 4> *>(a0 + (i0 * 40LL + i1b));
// CHECK: = [[Q]].v[3];
// CHECK: spmdgMaximumF({{x[0-9]+}}, [[P]]);
// CHECK: [[P]] = v{{[0-9]+}};
// CHECK: } else {
// CHECK: for (long long r = lane; r < n1; r += 32) {
// CHECK: spmdgMaximumF(
// CHECK: for (int o = 16; o > 0; o >>= 1) {
// CHECK: spmdgShflXor([[P]], o);
// CHECK: if (lane == 0) {
// CHECK: a1[i0] = 
func.func @row_max(%x: memref<6x40xf32>, %m: memref<6xf32>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<6x40xf32>) outs(%m : memref<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// Softmax's denominator: sum of exp(x - max[row]), the row max broadcast.
// CHECK-LABEL: // softmax_sum: warp per row
// CHECK: float [[P:part[0-9]+]] = 0.0f;
// CHECK: expf(
// CHECK: spmdgShflXor([[P]], o)
func.func @softmax_sum(%x: memref<6x40xf32>, %m: memref<6xf32>, %s: memref<6xf32>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<6x40xf32>, memref<6xf32>) outs(%s : memref<6xf32>) {
  ^bb0(%a: f32, %mx: f32, %acc: f32):
    %d = arith.subf %a, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// layer_norm statistics of bf16 rows in f32: two outputs (sum, sum of
// squares), both combined across the warp.
// CHECK-LABEL: // ln_stats: warp per row
// CHECK: const float [[X:x[0-9]+]] = spmdk::toF32(a0[i0 * 33LL + i1]);
// CHECK-COUNT-2: spmdgShflXor(
// CHECK: a1[i0] =
// CHECK: a2[i0] =
func.func @ln_stats(%x: memref<5x33xbf16>, %sum: memref<5xf32>, %sq: memref<5xf32>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<5x33xbf16>) outs(%sum, %sq : memref<5xf32>, memref<5xf32>) {
  ^bb0(%a: bf16, %s0: f32, %s1: f32):
    %f = arith.extf %a : bf16 to f32
    %q = arith.mulf %f, %f : f32
    %r0 = arith.addf %f, %s0 : f32
    %r1 = arith.addf %q, %s1 : f32
    linalg.yield %r0, %r1 : f32, f32
  }
  return
}

// layer_norm's normalization: (x - mean[row]) * rstd[row] * gamma[col] +
// beta[col], bf16 in and out.
// CHECK-LABEL: // ln_apply: grid-stride
// CHECK: a5[i0 * 33LL + i1] = spmdk::fromF32<spmdk::bf16>(
func.func @ln_apply(%x: memref<5x33xbf16>, %mean: memref<5xf32>, %rstd: memref<5xf32>, %g: memref<33xbf16>, %b: memref<33xbf16>, %y: memref<5x33xbf16>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean, %rstd, %g, %b : memref<5x33xbf16>, memref<5xf32>, memref<5xf32>, memref<33xbf16>, memref<33xbf16>) outs(%y : memref<5x33xbf16>) {
  ^bb0(%a: bf16, %mu: f32, %rs: f32, %ga: bf16, %be: bf16, %o: bf16):
    %f = arith.extf %a : bf16 to f32
    %d = arith.subf %f, %mu : f32
    %n = arith.mulf %d, %rs : f32
    %gf = arith.extf %ga : bf16 to f32
    %bf = arith.extf %be : bf16 to f32
    %m = arith.mulf %n, %gf : f32
    %r = arith.addf %m, %bf : f32
    %t = arith.truncf %r : f32 to bf16
    linalg.yield %t : bf16
  }
  return
}

// A column sum (reduction over the outer loop): one thread per column,
// serial over the rows.
// IR-LABEL: func.func @col_sum
// IR-SAME: spmd_cuda.launch = "grid_stride", spmd_cuda.work = array<i64: 5>
// CHECK-LABEL: // col_sum: grid-stride
// CHECK: float [[ACC:acc[0-9]+]] = a1[i1];
// CHECK: for (long long r = 0; r < n0; r += 1) {
// CHECK: [[ACC]] =
// CHECK: a1[i1] = [[ACC]];
func.func @col_sum(%x: memref<7x5xf32>, %s: memref<5xf32>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<7x5xf32>) outs(%s : memref<5xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// A long column reduction into few outputs (a bias gradient: 300 rows into
// 37 columns, bf16 in, f32 out), launched as a warp per output so that the
// GPU is not left with one thread per column: the column form, 8
// neighbouring columns per block (reads of neighbouring addresses), the
// block's rows of threads striding over the rows, combined in shared
// memory; the last block's columns past 37 store nothing.
// IR-LABEL: func.func @col_sum_long
// IR-SAME: spmd_cuda.launch = "warp_per_row", spmd_cuda.work = array<i64: 37>
// CHECK-LABEL: // col_sum_long: warp per row
// CHECK: const int col = threadIdx.x % 8;
// CHECK: SPMD_SHARED(float, red0, 1024);
// CHECK: for (long long g = blockIdx.x; g * 8 < total; g += gridDim.x) {
// CHECK: const long long t = live ? g * 8 + col : 0;
// CHECK: for (long long r = phase; r < n0; r += phases) {
// CHECK: spmdk::toF32(a0[i0 * 37LL + i1])
// CHECK: red0[threadIdx.x] = [[P:part[0-9]+]];
// CHECK: __syncthreads();
// CHECK: if (phase == 0 && live) {
// CHECK: red0[p * 8 + col];
// CHECK: a1[i1] =
// CHECK: __syncthreads();
// CHECK-NOT: spmdgShflXor(
func.func @col_sum_long(%x: memref<300x37xbf16>, %s: memref<37xf32>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<300x37xbf16>) outs(%s : memref<37xf32>) {
  ^bb0(%a: bf16, %acc: f32):
    %e = arith.extf %a : bf16 to f32
    %r = arith.addf %e, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// A transposed view folded into the strides (column stride 8).
// CHECK-LABEL: // transpose_copy: grid-stride
// CHECK: a0[i0 + i1 * 8LL]
func.func @transpose_copy(%x: memref<6x8xf32>, %y: memref<8x6xf32>) attributes {spmd.plan_kernel} {
  %t = memref.transpose %x (d0, d1) -> (d1, d0) : memref<6x8xf32> to memref<8x6xf32, strided<[1, 8]>>
  linalg.copy ins(%t : memref<8x6xf32, strided<[1, 8]>>) outs(%y : memref<8x6xf32>)
  return
}

// A transposed read of sizes that are multiples of 32: the tile form (read
// along d0 where the input is contiguous, written along d1 where the output
// is), the body applied on the way out; the element-by-element form after
// it for other sizes.
// CHECK-LABEL: // transpose_scale_tiled: grid-stride
// CHECK: // tile form: 32 x 32 tiles through shared memory, read along d0, written along d1.
// CHECK: if (n1 % 32 == 0 && n0 % 32 == 0) {
// CHECK: SPMD_SHARED(float, tile, 32 * 33);
// CHECK: const long long i0 = i0t * 32 + tx;
// CHECK: tile[k * 33 + tx] = spmdk::toF32(a0[i0 + i1 * 96LL]);
// CHECK: __syncthreads();
// CHECK: const long long i1 = i1t * 32 + tx;
// CHECK: const float [[X:x[0-9]+]] = tile[tx * 33 + k];
// CHECK: (float)([[X]] * {{v[0-9]+}})
// CHECK: a1[i0 * 64LL + i1] = spmdk::fromF32<spmdk::bf16>(
// CHECK: return;
// CHECK: for (long long t = spmdk::globalThreadIndex(); t < total; t += spmdk::globalThreadCount()) {
func.func @transpose_scale_tiled(%x: memref<64x96xbf16>, %y: memref<96x64xbf16>) attributes {spmd.plan_kernel} {
  %t = memref.transpose %x (d0, d1) -> (d1, d0) : memref<64x96xbf16> to memref<96x64xbf16, strided<[1, 96]>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<96x64xbf16, strided<[1, 96]>>) outs(%y : memref<96x64xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %two = arith.constant 2.0 : bf16
    %m = arith.mulf %a, %two : bf16
    linalg.yield %m : bf16
  }
  return
}

// A strided slice (offset 2*12+3, strides 12 and 2) read, scaled, written.
// CHECK-LABEL: // strided_slice: grid-stride
// CHECK: a0[27LL + i0 * 12LL + i1 * 2LL]
func.func @strided_slice(%x: memref<8x12xf32>, %y: memref<4x5xf32>) attributes {spmd.plan_kernel} {
  %two = arith.constant 2.0 : f32
  %s = memref.subview %x[2, 3] [4, 5] [1, 2] : memref<8x12xf32> to memref<4x5xf32, strided<[12, 2], offset: 27>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<4x5xf32, strided<[12, 2], offset: 27>>) outs(%y : memref<4x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %two : f32
    linalg.yield %r : f32
  }
  return
}

// A slice written into (a concat's half), and an expand_shape of a slice
// read: offsets and strides through both views.
// CHECK-LABEL: // expand_slice: grid-stride
// CHECK: a0[4LL + i0 * 12LL + i1 * 4LL + i2]
// CHECK: a1[8LL + i0 * 16LL + i1 * 4LL + i2] =
func.func @expand_slice(%x: memref<8x12xf32>, %y: memref<8x4x4xf32>) attributes {spmd.plan_kernel} {
  %s = memref.subview %x[0, 4] [8, 8] [1, 1] : memref<8x12xf32> to memref<8x8xf32, strided<[12, 1], offset: 4>>
  %e = memref.expand_shape %s [[0], [1, 2]] output_shape [8, 2, 4] : memref<8x8xf32, strided<[12, 1], offset: 4>> into memref<8x2x4xf32, strided<[12, 4, 1], offset: 4>>
  %d = memref.subview %y[0, 2, 0] [8, 2, 4] [1, 1, 1] : memref<8x4x4xf32> to memref<8x2x4xf32, strided<[16, 4, 1], offset: 8>>
  linalg.copy ins(%e : memref<8x2x4xf32, strided<[12, 4, 1], offset: 4>>) outs(%d : memref<8x2x4xf32, strided<[16, 4, 1], offset: 8>>)
  return
}

// Dynamic dims (uneven shards): sizes and strides from long long params,
// f16 storage computed in f32; work = dim 0 of arg 0 * dim 1 of arg 0.
// IR-LABEL: func.func @dynamic_f16
// IR-SAME: spmd_cuda.launch = "grid_stride", spmd_cuda.work = array<i64: 1, 0, 0, 0, 1>
// CHECK-LABEL: // dynamic_f16: grid-stride
// CHECK: void __launch_bounds__(256) dynamic_f16(const spmdk::f16 *__restrict__ a0,
// CHECK-NEXT: const spmdk::f16 *__restrict__ a1,
// CHECK-NEXT: spmdk::f16 *__restrict__ a2,
// CHECK-NEXT: long long a0_d0,
// CHECK-NEXT: long long a0_d1,
// CHECK-NEXT: long long a1_d0,
// CHECK-NEXT: long long a2_d0,
// CHECK-NEXT: long long a2_d1) {
// CHECK: const long long n0 = a0_d0;
// CHECK: const long long n1 = a0_d1;
// CHECK: spmdk::toF32(a0[i0 * a0_d1 + i1])
// CHECK: a2[i0 * a2_d1 + i1] = spmdk::fromF32<spmdk::f16>(
func.func @dynamic_f16(%x: memref<?x?xf16>, %b: memref<?xf16>, %y: memref<?x?xf16>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<?x?xf16>, memref<?xf16>) outs(%y : memref<?x?xf16>) {
  ^bb0(%a: f16, %c: f16, %o: f16):
    %s = arith.mulf %a, %c : f16
    %t = math.tanh %s : f16
    linalg.yield %t : f16
  }
  return
}

// linalg.index and integer types: i32 from the indices, an i1 mask, i8 and
// i64 arithmetic.
// CHECK-LABEL: // index_ints: grid-stride
// CHECK: const long long [[I:v[0-9]+]] = i0;
// CHECK: (int)
// CHECK: (bool)
// CHECK: a3[i0 * 6LL + i1] =
func.func @index_ints(%t: memref<4xi64>, %m: memref<4x6xi8>, %idx: memref<4x6xi32>, %out: memref<4x6xi64>, %mask: memref<4x6xi1>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#row, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %m : memref<4xi64>, memref<4x6xi8>) outs(%idx, %out, %mask : memref<4x6xi32>, memref<4x6xi64>, memref<4x6xi1>) {
  ^bb0(%tv: i64, %mv: i8, %o0: i32, %o1: i64, %o2: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c6 = arith.constant 6 : index
    %ij = arith.muli %i, %c6 : index
    %lin = arith.addi %ij, %j : index
    %l32 = arith.index_cast %lin : index to i32
    %jj = arith.index_cast %j : index to i64
    %hit = arith.cmpi eq, %jj, %tv : i64
    %m2 = arith.muli %mv, %mv : i8
    %m64 = arith.extsi %m2 : i8 to i64
    %neg = arith.subi %tv, %m64 : i64
    %sel = arith.select %hit, %m64, %neg : i64
    %one = arith.constant 1 : i64
    %safe = arith.maxsi %tv, %one : i64
    %r = arith.divsi %sel, %safe : i64
    %q = arith.remsi %sel, %safe : i64
    %both = arith.addi %q, %r : i64
    %z = arith.cmpi ne, %tv, %one : i64
    %s2 = arith.select %z, %both, %sel : i64
    %x = arith.andi %hit, %z : i1
    linalg.yield %l32, %s2, %x : i32, i64, i1
  }
  return
}

// An argmax (value and index): no single combiner, so a serial reduction
// per row even though the reduction is the innermost loop.
// CHECK-LABEL: // argmax: grid-stride
// CHECK: for (long long r = 0; r < n1; r += 1) {
func.func @argmax(%x: memref<3x9xf32>, %v: memref<3xf32>, %i: memref<3xi64>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x9xf32>) outs(%v, %i : memref<3xf32>, memref<3xi64>) {
  ^bb0(%a: f32, %bv: f32, %bi: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %gt = arith.cmpf ogt, %a, %bv : f32
    %nv = arith.select %gt, %a, %bv : f32
    %ni = arith.select %gt, %ji, %bi : i64
    linalg.yield %nv, %ni : f32, i64
  }
  return
}

// A fill of a collapsed dynamic buffer with a constant.
// IR-LABEL: func.func @fill_collapsed
// IR-SAME: spmd_cuda.work = array<i64: 3, 0, 0>
// CHECK-LABEL: // fill_collapsed: grid-stride
// CHECK: const long long n0 = a0_d0 * 3LL;
// CHECK: if (n0 % 8 == 0 && spmdk::alignedTo<16>(a0 + 0LL)) {
// CHECK: const float [[C:v[0-9]+]] = (-1.5f);
// CHECK: o{{[0-9]+}}.v[7] = spmdk::fromF32<spmdk::f16>([[C]]);
// CHECK: const float [[D:v[0-9]+]] = (-1.5f);
// CHECK: a0[i0] = spmdk::fromF32<spmdk::f16>([[D]]);
func.func @fill_collapsed(%x: memref<?x3xf16>) attributes {spmd.plan_kernel} {
  %c = arith.constant -1.5 : f16
  %f = memref.collapse_shape %x [[0, 1]] : memref<?x3xf16> into memref<?xf16>
  linalg.fill ins(%c : f16) outs(%f : memref<?xf16>)
  return
}

// The vector form of an elementwise kernel: taken when the innermost size
// is a multiple of 4 (f32: 16 bytes) and the contiguous operands are 16-byte
// aligned; the row-broadcast operand is loaded once per 4 elements.
// CHECK-LABEL: // scale_shift_vec4: grid-stride
// CHECK: if (n1 % 4 == 0 && spmdk::alignedTo<16>(a0 + 0LL) && spmdk::alignedTo<16>(a1 + 0LL) && spmdk::alignedTo<16>(a3 + 0LL)) {
// CHECK: const long long i1b = (rest % nq) * 4;
// CHECK: const spmdk::Vec<float, 4> [[Q:q[0-9]+]] = *reinterpret_cast<const spmdk::Vec<float, 4> *>(a0 + (i0 * 12LL + i1b));
// CHECK: const spmdk::Vec<float, 4> [[S:q[0-9]+]] = *reinterpret_cast<const spmdk::Vec<float, 4> *>(a1 + i1b);
// CHECK: const float [[R:x[0-9]+]] = a2[i0];
// CHECK: const float [[X:x[0-9]+]] = [[Q]].v[0];
// CHECK: const float [[Y:x[0-9]+]] = [[S]].v[0];
// CHECK: (float)([[X]] * [[Y]])
// CHECK: *reinterpret_cast<spmdk::Vec<float, 4> *>(a3 + (i0 * 12LL + i1b)) =
// CHECK: return;
// CHECK: for (long long t = spmdk::globalThreadIndex(); t < total; t += spmdk::globalThreadCount()) {
func.func @scale_shift_vec4(%x: memref<3x12xf32>, %s: memref<12xf32>, %b: memref<3xf32>, %y: memref<3x12xf32>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [#id, #col, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s, %b : memref<3x12xf32>, memref<12xf32>, memref<3xf32>) outs(%y : memref<3x12xf32>) {
  ^bb0(%a: f32, %c: f32, %d: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %r = arith.addf %m, %d : f32
    linalg.yield %r : f32
  }
  return
}


// 16-bit and boolean operands: 8 lanes (16 bytes of bf16, 8 of i1); the
// innermost loop that moves is d1, the loop of one iteration after it
// indexes 0.
// CHECK-LABEL: // masked_scale_bf16: grid-stride
// CHECK: if (n1 % 8 == 0 && spmdk::alignedTo<8>(a0 + 0LL) && spmdk::alignedTo<16>(a1 + 0LL) && spmdk::alignedTo<16>(a3 + 0LL)) {
// CHECK: const long long i2 = 0;
// CHECK: const long long i1b = (rest % nq) * 8;
// CHECK: const spmdk::Vec<bool, 8> [[M:q[0-9]+]] = *reinterpret_cast<const spmdk::Vec<bool, 8> *>(a0 + (i1b + i2));
// CHECK: const spmdk::Vec<spmdk::bf16, 8> [[X:q[0-9]+]] = *reinterpret_cast<const spmdk::Vec<spmdk::bf16, 8> *>(a1 + (i0 * 16LL + i1b + i2));
// CHECK: const float {{x[0-9]+}} = spmdk::toF32(a2[i0]);
// CHECK: const bool {{x[0-9]+}} = [[M]].v[7];
// CHECK: const float {{x[0-9]+}} = spmdk::toF32([[X]].v[7]);
// CHECK: o{{[0-9]+}}.v[7] = spmdk::fromF32<spmdk::bf16>(
// CHECK: *reinterpret_cast<spmdk::Vec<spmdk::bf16, 8> *>(a3 + (i0 * 16LL + i1b + i2)) =
func.func @masked_scale_bf16(%m: memref<16x1xi1>, %x: memref<3x16x1xbf16>, %s: memref<3xbf16>, %y: memref<3x16x1xbf16>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%m, %x, %s : memref<16x1xi1>, memref<3x16x1xbf16>, memref<3xbf16>) outs(%y : memref<3x16x1xbf16>) {
  ^bb0(%k: i1, %a: bf16, %c: bf16, %o: bf16):
    %z = arith.constant 0.0 : bf16
    %p = arith.mulf %a, %c : bf16
    %r = arith.select %k, %z, %p : bf16
    linalg.yield %r : bf16
  }
  return
}


// A row reduction whose last loop has one iteration (the attention's
// [b, h, q, 1, k, 1] softmax max): the row is the innermost loop that
// moves, 8 bf16 per lane.
// CHECK-LABEL: // row_max_unit_bf16: warp per row
// CHECK: if (n1 % 8 == 0 && spmdk::alignedTo<16>(a0 + 0LL)) {
// CHECK: for (long long r = lane * 8; r < n1 * n2; r += 32 * 8) {
// CHECK: const spmdk::Vec<spmdk::bf16, 8> {{q[0-9]+}} = *reinterpret_cast<const spmdk::Vec<spmdk::bf16, 8> *>(a0 + (i0 * 40LL + i1b + i2));
func.func @row_max_unit_bf16(%x: memref<6x40x1xbf16>, %m: memref<6xbf16>) attributes {spmd.plan_kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : memref<6x40x1xbf16>) outs(%m : memref<6xbf16>) {
  ^bb0(%a: bf16, %acc: bf16):
    %r = arith.maximumf %a, %acc : bf16
    linalg.yield %r : bf16
  }
  return
}

}
