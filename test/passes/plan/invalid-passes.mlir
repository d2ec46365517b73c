// RUN: spmd-opt %s -split-input-file -verify-diagnostics --spmd-outline-plan
// RUN: not spmd-opt %s --spmd-plan-memory=alignment=3 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: spmd-plan-memory: alignment must be a power of two, got 3

// expected-error @+1 {{entry 'unbufferized' must take and return identity-layout memrefs (run spmd-bufferize first), got 'tensor<4xf32>'}}
func.func @unbufferized(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
