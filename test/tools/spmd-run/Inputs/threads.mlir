// A GEMM, a row softmax (max and sum reductions along the inner dim) and a
// column sum (a reduction along the outer dim, which is not split), large
// enough that a rank's threads split the GEMM and the kernels' outer loops.
func.func @step(%x: tensor<192x256xf32>, %w: tensor<256x320xf32>) -> (tensor<192x320xf32>, tensor<320xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<192x320xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<192x320xf32>) -> tensor<192x320xf32>
  %y = linalg.matmul ins(%x, %w : tensor<192x256xf32>, tensor<256x320xf32>) outs(%f : tensor<192x320xf32>) -> tensor<192x320xf32>
  %em = tensor.empty() : tensor<192xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<192xf32>) -> tensor<192xf32>
  %m = linalg.reduce ins(%y : tensor<192x320xf32>) outs(%fm : tensor<192xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.maximumf %a, %acc : f32
      linalg.yield %s : f32
    }
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%y, %m : tensor<192x320xf32>, tensor<192xf32>) outs(%e : tensor<192x320xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      %x2 = math.exp %d : f32
      linalg.yield %x2 : f32
  } -> tensor<192x320xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%em : tensor<192xf32>) -> tensor<192xf32>
  %s = linalg.reduce ins(%ex : tensor<192x320xf32>) outs(%fs : tensor<192xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %t = arith.addf %a, %acc : f32
      linalg.yield %t : f32
    }
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %s : tensor<192x320xf32>, tensor<192xf32>) outs(%e : tensor<192x320xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %q = arith.divf %a, %b : f32
      linalg.yield %q : f32
  } -> tensor<192x320xf32>
  %ec = tensor.empty() : tensor<320xf32>
  %fc = linalg.fill ins(%zero : f32) outs(%ec : tensor<320xf32>) -> tensor<320xf32>
  %c = linalg.reduce ins(%p : tensor<192x320xf32>) outs(%fc : tensor<320xf32>) dimensions = [0]
    (%a: f32, %acc: f32) {
      %t = arith.addf %a, %acc : f32
      linalg.yield %t : f32
    }
  return %p, %c : tensor<192x320xf32>, tensor<320xf32>
}
