spmd.mesh @m ["dp"=2, "tp"=4]

#bi = affine_map<(b, i, h) -> (b, i)>
#ih = affine_map<(b, i, h) -> (i, h)>
#bh = affine_map<(b, i, h) -> (b, h)>

func.func @step(%x: tensor<8x16xf32> {spmd.layout = #spmd.layout<@m, [S(0), R]>},
                %w1: tensor<16x32xf32> {spmd.layout = #spmd.layout<@m, [R, S(1)]>},
                %w2: tensor<32x16xf32> {spmd.layout = #spmd.layout<@m, [R, S(0)]>},
                %dy: tensor<8x16xf32> {spmd.layout = #spmd.layout<@m, [S(0), R]>})
    -> (tensor<8x16xf32> {spmd.layout = #spmd.layout<@m, [S(0), R]>},
        tensor<16x32xf32> {spmd.layout = #spmd.layout<@m, [R, S(1)]>},
        tensor<32x16xf32> {spmd.layout = #spmd.layout<@m, [R, S(0)]>},
        tensor<8x16xf32> {spmd.layout = #spmd.layout<@m, [S(0), R]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} : tensor<8x32xf32>
  %f1 = linalg.fill {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>}
      ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e2 = tensor.empty() {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>} : tensor<8x16xf32>
  %f2 = linalg.fill {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>} ins(%zero : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %yp = linalg.matmul {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>}
      ins(%h, %w2 : tensor<8x32xf32>, tensor<32x16xf32>) outs(%f2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = spmd.constrain %yp to #spmd.layout<@m, [S(0), R]> : tensor<8x16xf32>

  %e3 = tensor.empty() {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} : tensor<8x32xf32>
  %f3 = linalg.fill {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} ins(%zero : f32) outs(%e3 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %dh = linalg.generic {indexing_maps = [affine_map<(b, h, j) -> (b, j)>, affine_map<(b, h, j) -> (h, j)>, affine_map<(b, h, j) -> (b, h)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %w2 : tensor<8x16xf32>, tensor<32x16xf32>) outs(%f3 : tensor<8x32xf32>)
      attrs = {spmd.layout = #spmd.layout<@m, [S(0), S(1)]>} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %e4 = tensor.empty() {spmd.layout = #spmd.layout<@m, [P(sum), S(1)]>} : tensor<16x32xf32>
  %f4 = linalg.fill {spmd.layout = #spmd.layout<@m, [P(sum), S(1)]>} ins(%zero : f32) outs(%e4 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dw1p = linalg.generic {indexing_maps = [#bi, #bh, #ih],
                          iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %dh : tensor<8x16xf32>, tensor<8x32xf32>) outs(%f4 : tensor<16x32xf32>)
      attrs = {spmd.layout = #spmd.layout<@m, [P(sum), S(1)]>} {
      linalg.yield %s : f32
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<16x32xf32>
  %e5 = tensor.empty() {spmd.layout = #spmd.layout<@m, [P(sum), S(0)]>} : tensor<32x16xf32>
  %f5 = linalg.fill {spmd.layout = #spmd.layout<@m, [P(sum), S(0)]>} ins(%zero : f32) outs(%e5 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %dw2p = linalg.generic {indexing_maps = [affine_map<(b, h, j) -> (b, h)>, affine_map<(b, h, j) -> (b, j)>, affine_map<(b, h, j) -> (h, j)>],
                          iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%h, %dy : tensor<8x32xf32>, tensor<8x16xf32>) outs(%f5 : tensor<32x16xf32>)
      attrs = {spmd.layout = #spmd.layout<@m, [P(sum), S(0)]>} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
    ^bb0(%a: f32, %b: f32, %acc: f32):
  } -> tensor<32x16xf32>
  %e6 = tensor.empty() {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>} : tensor<8x16xf32>
  %f6 = linalg.fill {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>} ins(%zero : f32) outs(%e6 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dxp = linalg.generic {indexing_maps = [#bh, #ih, #bi],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dh, %w1 : tensor<8x32xf32>, tensor<16x32xf32>) outs(%f6 : tensor<8x16xf32>)
      attrs = {spmd.layout = #spmd.layout<@m, [S(0), P(sum)]>} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %dw1 = spmd.constrain %dw1p to #spmd.layout<@m, [R, S(1)]> : tensor<16x32xf32>
  %dw2 = spmd.constrain %dw2p to #spmd.layout<@m, [R, S(0)]> : tensor<32x16xf32>
  %dx = spmd.constrain %dxp to #spmd.layout<@m, [S(0), R]> : tensor<8x16xf32>
  return %y, %dw1, %dw2, %dx : tensor<8x16xf32>, tensor<16x32xf32>, tensor<32x16xf32>, tensor<8x16xf32>
}
