// RUN: spmd-opt %s --split-input-file --spmd-propagate=explain -verify-diagnostics | FileCheck %s

// A reshard one user made is shared with later users: a later user may read
// that copy for free, and a later reshard starts from the closest copy.

spmd.mesh @tp ["tp"=4]

// The output gradient of a sequence-parallel layer arrives row-sharded; the
// input gradient's matmul gathers it. The bias gradient then sums the
// gathered copy (no collective), instead of summing its own rows into a
// partial that needs an all-reduce (what DTensor does too).
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[G:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: linalg.matmul {spmd.layout = #spmd.layout<@tp, [S(1)]>} ins(%[[G]], %arg1
// CHECK: linalg.reduce ins(%[[G]] : tensor<32x64xf32>) {{.*}} {spmd.layout = #spmd.layout<@tp, [R]>}
// CHECK-NOT: spmd.constrain
func.func @bias_grad(%dy: tensor<32x64xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                     %w: tensor<64x128xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>})
    -> (tensor<32x128xf32>, tensor<64xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x128xf32>) -> tensor<32x128xf32>
  // expected-remark @+1 {{reshard from #spmd.layout<@tp, [S(0)]> to #spmd.layout<@tp, [R]> for operand 0 of 'linalg.matmul'}}
  %dh = linalg.matmul ins(%dy, %w : tensor<32x64xf32>, tensor<64x128xf32>)
                      outs(%f : tensor<32x128xf32>) -> tensor<32x128xf32>
  %e2 = tensor.empty() : tensor<64xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64xf32>) -> tensor<64xf32>
  %db = linalg.reduce ins(%dy : tensor<32x64xf32>) outs(%f2 : tensor<64xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %dh, %db : tensor<32x128xf32>, tensor<64xf32>
}

// -----

spmd.mesh @tp ["tp"=4]

// A partial value is all-reduced for exp; the later row-sharded result is
// sliced from that reduced copy, not reduce-scattered from the partial.
// CHECK-LABEL: func.func @slice_of_reduced
// CHECK: %[[R:.*]] = spmd.constrain %arg0 to #spmd.layout<@tp, [R]>
// CHECK: math.exp %[[R]]
// CHECK: spmd.constrain %[[R]] to #spmd.layout<@tp, [S(0)]>
// CHECK-NOT: spmd.constrain %arg0
func.func @slice_of_reduced(%p: tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [P(sum)]>})
    -> (tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
        tensor<8x8xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  // expected-remark @+1 {{reshard from #spmd.layout<@tp, [P(sum)]> to #spmd.layout<@tp, [R]> for operand 0 of 'math.exp'}}
  %x = math.exp %p : tensor<8x8xf32>
  // expected-remark @+1 {{reshard from #spmd.layout<@tp, [R]> to #spmd.layout<@tp, [S(0)]> for result 1 of the function}}
  return %x, %p : tensor<8x8xf32>, tensor<8x8xf32>
}
