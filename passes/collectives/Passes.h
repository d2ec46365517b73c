//===- Passes.h - spmd collectives passes -----------------------*- C++ -*-===//
//
// Declarations of the passes in passes/collectives/Passes.td and their
// registration.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_COLLECTIVES_PASSES_H
#define SPMD_PASSES_COLLECTIVES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace spmd {

#define GEN_PASS_DECL
#include "passes/collectives/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/collectives/Passes.h.inc"

} // namespace spmd

#endif // SPMD_PASSES_COLLECTIVES_PASSES_H
