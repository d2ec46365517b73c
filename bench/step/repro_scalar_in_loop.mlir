// Minimal reproducer: a scalar (0-d) computation fused into an elementwise
// kernel is recomputed for every element.
//
// AdamW's bias corrections 1 - b1^t and 1 - b2^t are 0-d values. The export
// computes them once; spmd-fuse-elementwise fuses their producers into the
// per-element update, so the outlined kernel's body (one linalg.generic, run
// as a scalar loop after convert-linalg-to-loops) calls powf for every
// element. The 0-d input is loaded inside the loop, and kernel arguments
// carry no noalias, so LLVM cannot hoist the load and the powf out of the
// loop either. In bench/step's MLP step (AdamW over 8.4M parameters)
// __powf_fma takes 16% of all samples (perf).
//
//   spmd-opt repro_scalar_in_loop.mlir --spmd-compile
//     # one plan_kernel; its linalg.generic over 1024 elements holds the
//     # math.powf (and the 0-d operand is an input of that generic)
func.func @scale(%p: tensor<1024xf32>, %t: tensor<f32>) -> tensor<1024xf32> {
  %b1 = arith.constant 0.9 : f32
  %one = arith.constant 1.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %bc = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
                        iterator_types = []}
      ins(%t : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%s: f32, %o: f32):
    %pw = math.powf %b1, %s : f32
    %r = arith.subf %one, %pw : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<1024xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>,
                                        affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%p, %bc : tensor<1024xf32>, tensor<f32>) outs(%e1 : tensor<1024xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.divf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1024xf32>
  return %y : tensor<1024xf32>
}
