// RUN: spmd-opt %s -split-input-file -verify-diagnostics --spmd-compile
// RUN: spmd-opt %s -split-input-file -verify-diagnostics --spmd-compile=partition=off

// A function runs on one mesh. spmd-propagate rejected a second one, but a
// local program (not propagated) and partition=off compiled to a plan whose
// layouts name two meshes, rejected only when the plan was loaded
// (bench/fuzz/README.md, spmd-plan-fuzzer). spmd-compile rejects it first,
// naming the function, the annotation on each mesh and both meshes
// (spmd-run: test/tools/spmd-run/plan-meshes.test).

spmd.mesh @mesh ["dp"=2, "tp"=4]
spmd.mesh @line ["x"=3]

// Local (a collective): compiled as is, without propagation.
// expected-error @below {{function @local_arg_result names two meshes: argument 0 is on @mesh, result 0 on @line; a function runs on one mesh}}
func.func @local_arg_result(%x: tensor<13x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>})
    -> (tensor<4xf32> {spmd.layout = #spmd.layout<@line, [P(max)]>}) {
  %r = spmd.all_reduce %x on @mesh ["tp"] sum : tensor<13x16xf32>
  %o = tensor.empty() : tensor<4xf32>
  return %o : tensor<4xf32>
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
spmd.mesh @line ["x"=3]

// The collective names the second mesh.
// expected-error @below {{function @local_collective names two meshes: argument 0 is on @line, 'spmd.all_reduce' on @mesh; a function runs on one mesh}}
func.func @local_collective(%x: tensor<12xf32> {spmd.layout = #spmd.layout<@line, [R]>}) -> tensor<12xf32> {
  // expected-note @below {{'spmd.all_reduce' on @mesh}}
  %r = spmd.all_reduce %x on @mesh ["tp"] sum : tensor<12xf32>
  return %r : tensor<12xf32>
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
spmd.mesh @line ["x"=3]

// Global: the same error, from the same check, before propagation.
// expected-error @below {{function @global_args names two meshes: argument 0 is on @mesh, argument 1 on @line; a function runs on one mesh}}
func.func @global_args(%x: tensor<12xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>},
                       %y: tensor<12xf32> {spmd.layout = #spmd.layout<@line, [R]>}) -> tensor<12xf32> {
  %s = arith.addf %x, %y : tensor<12xf32>
  return %s : tensor<12xf32>
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
spmd.mesh @line ["x"=3]

// An op's layout (as spmd-auto-shard writes them) on a second mesh.
// expected-error @below {{function @op_layout names two meshes: argument 0 is on @mesh, 'tensor.empty' layout on @line; a function runs on one mesh}}
func.func @op_layout(%x: tensor<12xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>}) -> tensor<12xf32> {
  // expected-note @below {{'tensor.empty' layout on @line}}
  %e = tensor.empty() {spmd.layout = #spmd.layout<@line, [S(0)]>} : tensor<12xf32>
  %s = arith.addf %x, %e : tensor<12xf32>
  return %s : tensor<12xf32>
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
spmd.mesh @line ["x"=3]

// One mesh per function: two functions on two meshes are two entries.
func.func @on_mesh(%x: tensor<12xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>}) -> tensor<12xf32> {
  return %x : tensor<12xf32>
}
func.func @on_line(%x: tensor<12xf32> {spmd.layout = #spmd.layout<@line, [S(0)]>}) -> tensor<12xf32> {
  return %x : tensor<12xf32>
}
