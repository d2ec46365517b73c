// RUN: spmd-opt %s --split-input-file --spmd-propagate -verify-diagnostics

// Annotations that cannot hold together are rejected with an error naming
// the op and the reason; nothing is propagated for that function.

spmd.mesh @a ["x"=2]
spmd.mesh @b ["y"=4]

// expected-error @below {{function @two_meshes names two meshes: argument 0 is on @a, 'spmd.constrain' on @b; a function runs on one mesh}}
func.func @two_meshes(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@a, [S(0)]>}) -> tensor<8xf32> {
  // expected-note @below {{'spmd.constrain' on @b}}
  %c = spmd.constrain %x to #spmd.layout<@b, [R]> : tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

spmd.mesh @a ["x"=2]
spmd.mesh @b ["y"=4]

// expected-error @below {{function @two_meshes_signature names two meshes: argument 0 is on @a, result 0 on @b; a function runs on one mesh}}
func.func @two_meshes_signature(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@a, [S(0)]>})
    -> (tensor<8xf32> {spmd.layout = #spmd.layout<@b, [R]>}) {
  return %x : tensor<8xf32>
}

// -----

spmd.mesh @a ["x"=2]

// expected-error @below {{invalid layout #spmd.layout<@a, [S(1)]> on argument 0: placement S(1) on mesh axis 'x' shards dim 1 of a rank-1 tensor}}
func.func @shard_beyond_rank(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@a, [S(1)]>}) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}

// -----

spmd.mesh @a ["x"=2]

func.func @shard_beyond_rank_in_constrain(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@a, [S(0)]>}) -> tensor<8xf32> {
  // expected-error @below {{invalid layout #spmd.layout<@a, [S(1)]> on the constrained value: placement S(1) on mesh axis 'x' shards dim 1 of a rank-1 tensor}}
  %c = spmd.constrain %x to #spmd.layout<@a, [S(1)]> : tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

spmd.mesh @a ["x"=2]

// expected-error @below {{unknown mesh @nope}}
func.func @unknown_mesh(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@nope, [S(0)]>}) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}

// -----

spmd.mesh @a ["x"=2, "y"=2]

// expected-error @below {{invalid layout #spmd.layout<@a, [S(0)]> on argument 0: layout has 1 placements but the mesh has 2 axes}}
func.func @wrong_placement_count(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@a, [S(0)]>}) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}

// -----

spmd.mesh @a ["x"=2]

// expected-error @below {{'func.func' op spmd-propagate handles single-block functions only}}
func.func @branches(%x: tensor<8xf32> {spmd.layout = #spmd.layout<@a, [S(0)]>}) -> tensor<8xf32> {
  cf.br ^next(%x : tensor<8xf32>)
^next(%y: tensor<8xf32>):
  return %y : tensor<8xf32>
}
