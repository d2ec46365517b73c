// Entries with layouts on two meshes. spmd-compile wrote @arg_result for
// test/dialects/spmd/roundtrip.mlir's @layouts. spmd-run took the last
// layout's mesh as the schedule's and scattered or assembled tensors by
// layouts of the other one: @results died of a division by zero (SIGFPE),
// the others ran on a mesh their layouts do not describe. Found by
// spmd-plan-fuzzer (its seed from roundtrip.mlir).
module attributes {spmd.plan_version = 1 : i64} {
  spmd.mesh @mesh ["dp"=2, "tp"=4]
  spmd.mesh @line ["x"=3]
  func.func @arg_result(%arg0: memref<13x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>}) -> (memref<4xf32> {spmd.layout = #spmd.layout<@line, [P(max)]>}) attributes {spmd.plan_arena_bytes = 16 : i64} {
    %0 = spmd.plan_buffer offset 0 bytes 16 : memref<4xf32>
    return %0 : memref<4xf32>
  }
  func.func @results(%arg0: memref<4xf32>) -> (memref<4xf32> {spmd.layout = #spmd.layout<@mesh, [R, S(0)]>}, memref<4xf32> {spmd.layout = #spmd.layout<@line, [R]>}) attributes {spmd.plan_arena_bytes = 16 : i64} {
    %0 = spmd.plan_buffer offset 0 bytes 16 : memref<4xf32>
    return %0, %arg0 : memref<4xf32>, memref<4xf32>
  }
  func.func @args(%arg0: memref<4xf32> {spmd.layout = #spmd.layout<@line, [S(0)]>}, %arg1: memref<4xf32> {spmd.layout = #spmd.layout<@mesh, [R, R]>}) -> memref<4xf32> attributes {spmd.plan_arena_bytes = 0 : i64} {
    return %arg1 : memref<4xf32>
  }
}
