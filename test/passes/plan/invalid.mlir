// RUN: spmd-opt %s -split-input-file -verify-diagnostics --spmd-compile

spmd.mesh @mesh ["tp"=4]
func.func @dynamic_gather(%x: tensor<?x16xf32>) -> tensor<13x16xf32> {
  // A hand-written gather of a dynamic dim to a dynamic dim: without the
  // result's global type and layout (spmd-partition records them) its size
  // is unknown.
  // expected-error @+2 {{'spmd.all_gather' op with dynamic result dim 0 is not supported by spmd-bufferize (a split or joined dim of a dynamic input needs the result's 'spmd.result_global_type' and 'spmd.result_layout')}}
  // expected-error @+1 {{failed to bufferize op}}
  %g = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<?x16xf32> -> tensor<?x16xf32>
  %c = tensor.cast %g : tensor<?x16xf32> to tensor<13x16xf32>
  return %c : tensor<13x16xf32>
}

// -----

func.func @scalar(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'memref.load' op cannot be placed in a plan schedule (expected linalg ops on buffers, memref.copy, spmd collectives)}}
  %v = tensor.extract %x[%c0] : tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%v : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  return %f : tensor<8xf32>
}
