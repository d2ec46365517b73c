// One SGD training step of a two-layer MLP (relu), loss 0.5 * sum((y - t)^2),
// written on GLOBAL tensors: forward, hand-written backward, update. Only the
// parameters are annotated, Megatron style on a 1-D tensor-parallel mesh of
// 4 devices: W1 split by columns, W2 by rows; x and t replicated. spmd-run
// partitions it (spmd-propagate + spmd-partition decide every other layout
// and insert the collectives), compiles it, runs the 4 ranks, and with
// --check compares with the same program run unpartitioned on one device:
//
//   spmd-run examples/megatron_mlp_train.mlir --seed 1 --check --steps 3
//
// Parameters come first so `--steps` feeds result i back to argument i.
spmd.mesh @mesh ["tp"=4]
#id = affine_map<(d0, d1) -> (d0, d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#km = affine_map<(d0, d1, d2) -> (d2, d0)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
func.func @train_step(
    %w1: tensor<16x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>},
    %w2: tensor<32x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
    %x: tensor<4x16xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
    %t: tensor<4x8xf32> {spmd.layout = #spmd.layout<@mesh, [R]>})
    -> (tensor<16x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(1)]>},
        tensor<32x8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %lr = arith.constant 0.05 : f32
  // Forward.
  %e0 = tensor.empty() : tensor<4x32xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x16xf32>, tensor<16x32xf32>) outs(%f0 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x32xf32>) outs(%e0 : tensor<4x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %a, %zero : f32
      linalg.yield %m : f32
  } -> tensor<4x32xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  // Backward: dy = y - t.
  %dy = linalg.sub ins(%y, %t : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  // dw2 = r^T dy.
  %e2 = tensor.empty() : tensor<32x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x8xf32>) -> tensor<32x8xf32>
  %dw2 = linalg.matmul indexing_maps = [#km, #kn, #mn]
      ins(%r, %dy : tensor<4x32xf32>, tensor<4x8xf32>) outs(%f2 : tensor<32x8xf32>) -> tensor<32x8xf32>
  // dr = dy w2^T; dh = dr * (h > 0).
  %f3 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %dr = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%dy, %w2 : tensor<4x8xf32>, tensor<32x8xf32>) outs(%f3 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %dh = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dr, %h : tensor<4x32xf32>, tensor<4x32xf32>) outs(%e0 : tensor<4x32xf32>) {
    ^bb0(%g: f32, %a: f32, %o: f32):
      %pos = arith.cmpf ogt, %a, %zero : f32
      %v = arith.select %pos, %g, %zero : f32
      linalg.yield %v : f32
  } -> tensor<4x32xf32>
  // dw1 = x^T dh.
  %e4 = tensor.empty() : tensor<16x32xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dw1 = linalg.matmul indexing_maps = [#km, #kn, #mn]
      ins(%x, %dh : tensor<4x16xf32>, tensor<4x32xf32>) outs(%f4 : tensor<16x32xf32>) -> tensor<16x32xf32>
  // SGD.
  %nw1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w1, %dw1 : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e4 : tensor<16x32xf32>) {
    ^bb0(%w: f32, %g: f32, %o: f32):
      %s = arith.mulf %g, %lr : f32
      %n = arith.subf %w, %s : f32
      linalg.yield %n : f32
  } -> tensor<16x32xf32>
  %nw2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w2, %dw2 : tensor<32x8xf32>, tensor<32x8xf32>) outs(%e2 : tensor<32x8xf32>) {
    ^bb0(%w: f32, %g: f32, %o: f32):
      %s = arith.mulf %g, %lr : f32
      %n = arith.subf %w, %s : f32
      linalg.yield %n : f32
  } -> tensor<32x8xf32>
  return %nw1, %nw2 : tensor<16x32xf32>, tensor<32x8xf32>
}
