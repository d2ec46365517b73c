// RUN: spmd-opt %s --split-input-file --spmd-auto-shard=mesh=mesh -verify-diagnostics
// RUN: not spmd-opt %s --split-input-file --spmd-auto-shard=device=tpu 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: not spmd-opt %s --split-input-file --spmd-auto-shard=mesh=nothere 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not spmd-opt %s --split-input-file --spmd-auto-shard 2>&1 | FileCheck %s --check-prefix=SEVERAL
// RUN: not spmd-opt %s --split-input-file --spmd-auto-shard="mesh=mesh comm-slack=-0.1" 2>&1 | FileCheck %s --check-prefix=SLACK
// RUN: not spmd-opt %s --split-input-file --spmd-auto-shard="mesh=mesh time-limit=0" 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not spmd-opt %s --split-input-file --spmd-auto-shard="mesh=mesh search-time=-1" 2>&1 | FileCheck %s --check-prefix=SEARCH
// RUN: not spmd-opt %s --split-input-file --spmd-auto-shard="mesh=mesh collective-latency=nan" 2>&1 | FileCheck %s --check-prefix=LATENCY

// What spmd-auto-shard rejects, each with the reason.

// DEVICE: spmd-auto-shard: unknown device 'tpu' (known: h100, cpu)
// MESH: spmd-auto-shard: no spmd.mesh named @nothere
// SEVERAL: spmd-auto-shard: the module has several meshes; name one with mesh=
// SLACK: spmd-auto-shard: comm-slack must be a fraction >= 0, got -0.1
// LIMIT: spmd-auto-shard: time-limit must be positive seconds, got 0
// SEARCH: spmd-auto-shard: search-time must be seconds >= 0, got -1
// LATENCY: spmd-auto-shard: collective-latency must be microseconds, got nan

spmd.mesh @mesh ["tp"=4]

// A result's `spmd.updates` names an argument of another type.
// expected-error @+1 {{'spmd.updates' on result 0 must be the index of an argument of the same type, got 1 : i64}}
func.func @wrong_type(%a: tensor<8xf32>, %b: tensor<4xf32>)
    -> (tensor<8xf32> {spmd.updates = 1 : i64}) {
  return %a : tensor<8xf32>
}

// -----

spmd.mesh @mesh ["tp"=4]

// expected-error @+1 {{'spmd.updates' on result 0 must be the index of an argument of the same type, got 2 : i64}}
func.func @no_such_argument(%a: tensor<8xf32>)
    -> (tensor<8xf32> {spmd.updates = 2 : i64}) {
  return %a : tensor<8xf32>
}

// -----

spmd.mesh @mesh ["tp"=4]

// A constrain on another mesh than the one searched.
spmd.mesh @other ["x"=2]

func.func @two_meshes(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{spmd-auto-shard: layout on mesh @other, the function's is @mesh}}
  %c = spmd.constrain %a to #spmd.layout<@other, [S(0)]> : tensor<8xf32>
  return %c : tensor<8xf32>
}
