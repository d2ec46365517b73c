// Mutant 3760 of the seed-40 mutation campaign: all_reduces of complex
// scalars. spmd-plan-memory and the plan_buffer verifier read their bit
// width as a float's (segfault); now planned at 8 bytes an element and
// rejected by the runtime.
spmd.mesh @mesh ["dp"=2, "tp"=2]

func.func @scalars(%a: tensor<complex<f32>>, %b: tensor<complex<f32>>) -> (tensor<complex<f32>>, tensor<complex<f32>>) {
  %ra = spmd.all_reduce %a on @mesh ["dp"] max : tensor<complex<f32>>
  %rb = spmd.all_reduce %b on @mesh ["dp"] max : tensor<complex<f32>>
  return %ra, %rb : tensor<complex<f32>>, tensor<complex<f32>>
}
