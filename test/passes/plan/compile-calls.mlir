// RUN: spmd-opt %s --spmd-compile -split-input-file | FileCheck %s

// Private helpers are inlined into the entry (and dropped); the two relu
// calls fuse with the add into one kernel.
// CHECK-LABEL: func.func @entry(
// CHECK-NEXT: spmd.plan_buffer
// CHECK-NEXT: spmd.plan_kernel @entry_kernel_0
// CHECK-NEXT: return
// CHECK-NOT: func.func @relu
// CHECK: func.func @entry_kernel_0
// CHECK-NOT: func.func
func.func private @relu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %a, %zero : f32
      linalg.yield %m : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @entry(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %a = func.call @relu(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %b = func.call @relu(%y) : (tensor<8xf32>) -> tensor<8xf32>
  %s = arith.addf %a, %b : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// No calls, but an unused private function: it is dropped too (the inline
// step runs the inliner and SymbolDCE whenever a private function exists).
// CHECK-LABEL: func.func @only(
// CHECK-NOT: func.func @unused
func.func private @unused(%x: tensor<8xf32>) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}
func.func @only(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s = arith.addf %x, %x : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// Neither calls nor private functions: the functions are canonicalized
// (the inliner's clean-up) before fusion; the public helper stays.
// CHECK-LABEL: func.func @first(
// CHECK: spmd.plan_kernel
// CHECK-LABEL: func.func @second(
func.func @first(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s = arith.addf %x, %x : tensor<8xf32>
  return %s : tensor<8xf32>
}
func.func @second(%x: tensor<8xf32>) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}
