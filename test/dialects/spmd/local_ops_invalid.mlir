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
