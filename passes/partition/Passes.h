//===- Passes.h - spmd partition passes -------------------------*- C++ -*-===//
//
// Declarations of the passes in passes/partition/Passes.td and their
// registration.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_PARTITION_PASSES_H
#define SPMD_PASSES_PARTITION_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace spmd {

#define GEN_PASS_DECL
#include "passes/partition/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/partition/Passes.h.inc"

} // namespace spmd

#endif // SPMD_PASSES_PARTITION_PASSES_H
