// Forward references the cross-region scan must accept: a CFG whose blocks
// are not in dominance order (uses in ^bb1 and in a nested region of ^bb1,
// defined in ^bb2), and a block argument name reused by a second generic.
#id = affine_map<(i) -> (i)>
func.func @cfg(%x: f32) -> f32 {
  cf.br ^bb2
^bb1:
  %y = arith.negf %z : f32
  %r = scf.execute_region -> f32 {
    scf.yield %z : f32
  }
  %s = arith.addf %y, %r : f32
  return %s : f32
^bb2:
  %z = arith.negf %x : f32
  cf.br ^bb1
}
func.func @names(%t: tensor<4xf32>) -> tensor<4xf32> {
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%t : tensor<4xf32>) outs(%t : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : tensor<4xf32>) outs(%p : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.addf %a, %o : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  return %q : tensor<4xf32>
}
