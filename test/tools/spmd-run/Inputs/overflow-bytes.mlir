func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<1152921504606846976x4xf32>
  %b = linalg.broadcast ins(%x : tensor<4xf32>) outs(%e : tensor<1152921504606846976x4xf32>) dimensions = [0]
  %m = linalg.elementwise kind=#linalg.elementwise_kind<mul> ins(%b, %b : tensor<1152921504606846976x4xf32>, tensor<1152921504606846976x4xf32>) outs(%e : tensor<1152921504606846976x4xf32>) -> tensor<1152921504606846976x4xf32>
  %z = arith.constant 0.0 : f32
  %i = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%i : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.reduce ins(%m : tensor<1152921504606846976x4xf32>) outs(%f : tensor<4xf32>) dimensions = [0]
    (%a: f32, %c: f32) { %s = arith.addf %a, %c : f32
      linalg.yield %s : f32 }
  return %r : tensor<4xf32>
}
