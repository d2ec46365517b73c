// RUN: spmd-opt %s -split-input-file -verify-diagnostics

spmd.mesh @mesh ["dp"=2, "tp"=4]
func.func @unknown_axis() -> index {
  // expected-error @+1 {{mesh @mesh has no axis named 'x'}}
  %n = spmd.local_size @mesh ["x"] of 13 : index
  return %n : index
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
func.func @negative() -> index {
  // expected-error @+1 {{global size -1 is negative}}
  %n = spmd.local_size @mesh ["tp"] of -1 : index
  return %n : index
}

// -----

func.func @no_mesh() -> index {
  // expected-error @+1 {{names unknown mesh @mesh}}
  %n = spmd.local_size @mesh ["tp"] of 4 : index
  return %n : index
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
func.func @twice() -> index {
  // expected-error @+1 {{lists mesh axis 'tp' twice}}
  %n = spmd.local_size @mesh ["tp", "tp"] of 4 : index
  return %n : index
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
func.func @partial_no_axes(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs at least one mesh axis}}
  %p = spmd.partial_from_replicated %x on @mesh [] sum : tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
func.func @partial_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %p = "spmd.partial_from_replicated"(%x) {mesh = @mesh, mesh_axes = ["tp"], kind = 0 : i32} : (tensor<4xf32>) -> tensor<4xf16>
  return %p : tensor<4xf16>
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
// expected-error @+1 {{'spmd.global_type' on argument 0 must be a statically shaped tensor type}}
func.func @global_type_dynamic(%x: tensor<?xf32> {spmd.global_type = tensor<?xf32>}) {
  return
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
// expected-error @+1 {{'spmd.global_type' 'tensor<4x4xf32>' on result 0 does not match its local type 'tensor<?xf32>'}}
func.func private @global_type_rank() -> (tensor<?xf32> {spmd.global_type = tensor<4x4xf32>})

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
func.func @offset_negative() -> index {
  // expected-error @+1 {{global size -2 is negative}}
  %n = spmd.local_offset @mesh ["tp"] of -2 : index
  return %n : index
}

// -----

spmd.mesh @mesh ["dp"=2, "tp"=4]
func.func @offset_unknown_axis() -> index {
  // expected-error @+1 {{mesh @mesh has no axis named 'y'}}
  %n = spmd.local_offset @mesh ["y"] of 13 : index
  return %n : index
}

// -----

// The result sizes recorded on a collective come as a pair.
spmd.mesh @mesh ["x"=2, "y"=2]
func.func @result_layout_alone(%a: tensor<?x5xf32>) -> tensor<?x5xf32> {
  // expected-error @+1 {{'spmd.result_global_type' (a type) and 'spmd.result_layout' (a #spmd.layout) must be given together}}
  %s = spmd.shard %a on @mesh ["y"] dim 0 {spmd.result_layout = #spmd.layout<@mesh, [S(0), S(0)]>} : tensor<?x5xf32> -> tensor<?x5xf32>
  return %s : tensor<?x5xf32>
}

// -----

spmd.mesh @mesh ["x"=2, "y"=2]
func.func @result_global_rank(%a: tensor<?x5xf32>) -> tensor<?x5xf32> {
  // expected-error @+1 {{'spmd.result_global_type' must be a ranked tensor type of the single result's rank and element type}}
  %s = spmd.shard %a on @mesh ["y"] dim 0 {spmd.result_global_type = tensor<9xf32>, spmd.result_layout = #spmd.layout<@mesh, [S(0), S(0)]>} : tensor<?x5xf32> -> tensor<?x5xf32>
  return %s : tensor<?x5xf32>
}

// -----

spmd.mesh @mesh ["x"=2, "y"=2]
func.func @result_layout_bad_dim(%a: tensor<?x5xf32>) -> tensor<?x5xf32> {
  // expected-error @+1 {{placement S(2) on mesh axis 'y' shards dim 2 of a rank-2 tensor}}
  %s = spmd.shard %a on @mesh ["y"] dim 0 {spmd.result_global_type = tensor<9x5xf32>, spmd.result_layout = #spmd.layout<@mesh, [S(0), S(2)]>} : tensor<?x5xf32> -> tensor<?x5xf32>
  return %s : tensor<?x5xf32>
}
