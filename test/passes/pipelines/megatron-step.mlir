// RUN: spmd-opt %s --pass-pipeline='builtin.module(spmd-partition-pipeline{bucket=false})' | FileCheck %s
// RUN: spmd-opt %s --spmd-partition-pipeline | FileCheck %s --check-prefix=BUCKET

// A Megatron MLP training step (forward, hand-written backward) on a 1-D
// mesh of 4: W1 column-split, W2 row-split. The whole step needs one
// all_reduce (the output y), and one more only when the input gradient dx is
// returned. The weight gradients stay sharded like their weights. Bucketed
// (the default), the two are one: y's only use is the result, so its
// all_reduce waits for dx's.
// BUCKET-LABEL: func.func @mlp_step(
// BUCKET-COUNT-1: spmd.all_reduce %{{.*}} on @tp ["tp"] sum : tensor<256xf32>
// BUCKET-NOT: spmd.all_reduce
// BUCKET-LABEL: func.func @mlp_step_no_dx(

// CHECK-LABEL: func.func @mlp_step(
// CHECK-COUNT-2: spmd.all_reduce
// CHECK-NOT: spmd.all_reduce
// CHECK-NOT: spmd.all_gather
// CHECK: return
// CHECK-LABEL: func.func @mlp_step_no_dx(
// CHECK-COUNT-1: spmd.all_reduce
// CHECK-NOT: spmd.all_reduce
// CHECK-NOT: spmd.all_gather
// CHECK: return

spmd.mesh @tp ["tp"=4]

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#km = affine_map<(m, n, k) -> (k, m)>
#kn = affine_map<(m, n, k) -> (k, n)>
#id = affine_map<(i, j) -> (i, j)>

// dr = dy @ W2^T
// dh = dr * (h > 0)
// dW2 = r^T @ dy, dW1 = x^T @ dh
// dx = dh @ W1^T
func.func @mlp_step(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
                    %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                    %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                    %dy: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
        tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
        tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
        tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %r = linalg.map ins(%h : tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>)
    (%in: f32, %out: f32) {
      %m = arith.maximumf %in, %zero : f32
      linalg.yield %m : f32
    }
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // dr[m, n] = sum_k dy[m, k] * w2[n, k]
  %dr = linalg.generic {indexing_maps = [#mk, #nk, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %w2 : tensor<8x16xf32>, tensor<64x16xf32>) outs(%f1 : tensor<8x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  // dh = h > 0 ? dr : 0
  %dh = linalg.generic {indexing_maps = [#id, #id, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%dr, %h : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>) {
    ^bb0(%g: f32, %v: f32, %o: f32):
      %pos = arith.cmpf ogt, %v, %zero : f32
      %s = arith.select %pos, %g, %zero : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  // dw2[m, n] = sum_k r[k, m] * dy[k, n]
  %e4 = tensor.empty() : tensor<64x16xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %dw2 = linalg.generic {indexing_maps = [#km, #kn, #mn],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%r, %dy : tensor<8x64xf32>, tensor<8x16xf32>) outs(%f4 : tensor<64x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<64x16xf32>
  // dw1[m, n] = sum_k x[k, m] * dh[k, n]
  %e5 = tensor.empty() : tensor<16x64xf32>
  %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %dw1 = linalg.generic {indexing_maps = [#km, #kn, #mn],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %dh : tensor<8x16xf32>, tensor<8x64xf32>) outs(%f5 : tensor<16x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<16x64xf32>
  // dx[m, n] = sum_k dh[m, k] * w1[n, k]
  %dx = linalg.generic {indexing_maps = [#mk, #nk, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dh, %w1 : tensor<8x64xf32>, tensor<16x64xf32>) outs(%f3 : tensor<8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %y, %dw1, %dw2, %dx : tensor<8x16xf32>, tensor<16x64xf32>, tensor<64x16xf32>, tensor<8x16xf32>
}

func.func @mlp_step_no_dx(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
                    %w1: tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
                    %w2: tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>},
                    %dy: tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@tp, [R]>},
        tensor<16x64xf32> {spmd.layout = #spmd.layout<@tp, [S(1)]>},
        tensor<64x16xf32> {spmd.layout = #spmd.layout<@tp, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>)
                     outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %r = linalg.map ins(%h : tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>)
    (%in: f32, %out: f32) {
      %m = arith.maximumf %in, %zero : f32
      linalg.yield %m : f32
    }
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // dr[m, n] = sum_k dy[m, k] * w2[n, k]
  %dr = linalg.generic {indexing_maps = [#mk, #nk, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %w2 : tensor<8x16xf32>, tensor<64x16xf32>) outs(%f1 : tensor<8x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  // dh = h > 0 ? dr : 0
  %dh = linalg.generic {indexing_maps = [#id, #id, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%dr, %h : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>) {
    ^bb0(%g: f32, %v: f32, %o: f32):
      %pos = arith.cmpf ogt, %v, %zero : f32
      %s = arith.select %pos, %g, %zero : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  // dw2[m, n] = sum_k r[k, m] * dy[k, n]
  %e4 = tensor.empty() : tensor<64x16xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %dw2 = linalg.generic {indexing_maps = [#km, #kn, #mn],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%r, %dy : tensor<8x64xf32>, tensor<8x16xf32>) outs(%f4 : tensor<64x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<64x16xf32>
  // dw1[m, n] = sum_k x[k, m] * dh[k, n]
  %e5 = tensor.empty() : tensor<16x64xf32>
  %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %dw1 = linalg.generic {indexing_maps = [#km, #kn, #mn],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %dh : tensor<8x16xf32>, tensor<8x64xf32>) outs(%f5 : tensor<16x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<16x64xf32>
  // dx[m, n] = sum_k dh[m, k] * w1[n, k]
  %dx = linalg.generic {indexing_maps = [#mk, #nk, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dh, %w1 : tensor<8x64xf32>, tensor<16x64xf32>) outs(%f3 : tensor<8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %y, %dw1, %dw2 : tensor<8x16xf32>, tensor<16x64xf32>, tensor<64x16xf32>
}
