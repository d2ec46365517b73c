// RUN: spmd-opt %s -split-input-file -verify-diagnostics

func.func @f() attributes {spmd.plan_arena_bytes = 100 : i64} {
  // expected-error @+1 {{'spmd.plan_buffer' op ends at byte 128 beyond the arena of 100 bytes}}
  %b = spmd.plan_buffer offset 64 bytes 64 : memref<16xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'spmd.plan_buffer' op reserves 32 bytes for a 'memref<16xf32>' of 64 bytes}}
  %b = spmd.plan_buffer offset 0 bytes 32 : memref<16xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'spmd.plan_buffer' op offset and bytes must not be negative}}
  %b = spmd.plan_buffer offset -64 bytes 64 : memref<16xf32>
  return
}

// -----

func.func @f(%n: index) {
  // expected-error @+1 {{'spmd.plan_buffer' op has 1 dynamic sizes for 0 dynamic dims}}
  %b = spmd.plan_buffer [%n] offset 0 bytes 64 : memref<16xf32>
  return
}

// -----

func.func @f(%x: memref<4xf32>) {
  // expected-error @+1 {{'spmd.plan_kernel' op names unknown kernel @missing}}
  spmd.plan_kernel @missing(%x) : memref<4xf32>
  return
}

// -----

func.func @k(%x: memref<4xf32>) {
  return
}
func.func @f(%x: memref<4xf32>) {
  // expected-error @+1 {{'spmd.plan_kernel' op callee @k is not marked 'spmd.plan_kernel'}}
  spmd.plan_kernel @k(%x) : memref<4xf32>
  return
}

// -----

func.func @k(%x: memref<8xf32>) attributes {spmd.plan_kernel} {
  return
}
func.func @f(%x: memref<4xf32>) {
  // expected-error @+1 {{'spmd.plan_kernel' op operand types do not match kernel @k}}
  spmd.plan_kernel @k(%x) : memref<4xf32>
  return
}

// -----

// expected-error @+1 {{kernel takes an argument of type 'f32' (memrefs, then index scalars)}}
func.func @k(%x: f32) attributes {spmd.plan_kernel} {
  return
}

// -----

// expected-error @+1 {{kernel takes a memref after an index scalar (memrefs, then index scalars)}}
func.func @k(%i: index, %x: memref<4xf32>) attributes {spmd.plan_kernel} {
  return
}

// -----

func.func @k(%x: memref<4xf32>, %i: index) attributes {spmd.plan_kernel} {
  return
}
func.func @f(%x: memref<4xf32>, %i: index) {
  // expected-error @+1 {{'spmd.plan_kernel' op takes its buffers before its index scalars}}
  "spmd.plan_kernel"(%i, %x) {callee = @k} : (index, memref<4xf32>) -> ()
  return
}

// -----

func.func @f(%a: memref<8x4xf32>, %b: memref<8x4xf32>, %c: memref<8x8xf32>) {
  // expected-error @+1 {{'spmd.plan_gemm' op has mismatched shapes: op(A) is 8x4, op(B) is 8x4, C is 8x8}}
  spmd.plan_gemm %a, %b, %c beta 1 : memref<8x4xf32>, memref<8x4xf32>, memref<8x8xf32>
  return
}

// -----

func.func @f(%a: memref<8x4xf32>, %b: memref<4x8xf32>, %c: memref<8x8xf32>) {
  // expected-error @+1 {{'spmd.plan_gemm' op beta must be 0 or 1}}
  spmd.plan_gemm %a, %b, %c beta 2 : memref<8x4xf32>, memref<4x8xf32>, memref<8x8xf32>
  return
}

// -----

func.func @f(%a: memref<8x4xi32>, %b: memref<4x8xi32>, %c: memref<8x8xi32>) {
  // expected-error @+1 {{'spmd.plan_gemm' op supports f32, f64, f16 and bf16, not 'i32'}}
  spmd.plan_gemm %a, %b, %c beta 0 : memref<8x4xi32>, memref<4x8xi32>, memref<8x8xi32>
  return
}

// -----

func.func @f(%a: memref<4xf32>, %b: memref<5xf32>) {
  // expected-error @+1 {{'spmd.plan_copy' op copies 'memref<4xf32>' into 'memref<5xf32>'}}
  spmd.plan_copy %a, %b : memref<4xf32>, memref<5xf32>
  return
}

// -----

func.func @f(%a: memref<4xf32>) {
  // expected-error @+1 {{'spmd.plan_all_reduce' op names unknown mesh @nowhere}}
  spmd.plan_all_reduce %a, %a on @nowhere ["x"] sum : memref<4xf32>, memref<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%a: memref<4xf32>, %b: memref<8xf32>) {
  // expected-error @+1 {{'spmd.plan_all_gather' op mesh @m has no axis named 'y'}}
  spmd.plan_all_gather %a, %b on @m ["y"] dim 0 : memref<4xf32>, memref<8xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%a: memref<4xf32>, %b: memref<8xf32>) {
  // expected-error @+1 {{'spmd.plan_all_gather' op dim 1 is out of range for rank 1}}
  spmd.plan_all_gather %a, %b on @m ["x"] dim 1 : memref<4xf32>, memref<8xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%a: memref<4xf32>, %b: memref<4xi32>) {
  // expected-error @+1 {{'spmd.plan_all_reduce' op needs input and output of one element type and rank}}
  spmd.plan_all_reduce %a, %b on @m ["x"] sum : memref<4xf32>, memref<4xi32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f() {
  // expected-error @+1 {{'spmd.plan_chunk_size' op lists mesh axis 'x' twice}}
  %n = spmd.plan_chunk_size @m ["x", "x"] of 5 : index
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f() {
  // expected-error @+1 {{'spmd.plan_chunk_size' op size must not be negative}}
  %n = spmd.plan_chunk_size @m ["x"] of -1 : index
  return
}

// -----

// expected-error @+1 {{'spmd.plan_arena_bytes' must be an integer on a func.func}}
module attributes {spmd.plan_arena_bytes = 1 : i64} {
}

// -----

// expected-error @+1 {{unknown spmd attribute 'spmd.plan_bogus'}}
module attributes {spmd.plan_bogus = 1 : i64} {
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%a: memref<4xf32>, %b: memref<8xf32>) {
  // expected-error @+1 {{'spmd.plan_partial_from_replicated' op needs input and output of one type}}
  spmd.plan_partial_from_replicated %a, %b on @m ["x"] sum : memref<4xf32>, memref<8xf32>
  return
}
