func.func @f(%x: f32) -> f32 {
  %y = scf.execute_region -> f32 {
    scf.yield %a : f32
  }
  %r = scf.execute_region -> f32 {
    %a = arith.negf %x : f32
    scf.yield %a, %a : f32
  }
  return %y : f32
}
