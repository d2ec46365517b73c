//===- Passes.h - spmd plan lowering passes ---------------------*- C++ -*-===//
//
// Declarations of the passes in passes/plan/Passes.td and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_PLAN_PASSES_H
#define SPMD_PASSES_PLAN_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace spmd {

#define GEN_PASS_DECL
#include "passes/plan/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/plan/Passes.h.inc"

} // namespace spmd

#endif // SPMD_PASSES_PLAN_PASSES_H
