//===- Passes.h - spmd CPU target passes ------------------------*- C++ -*-===//
//
// Declarations of the passes in targets/cpu/Passes.td and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CPU_PASSES_H
#define SPMD_TARGETS_CPU_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace spmd {

#define GEN_PASS_DECL
#include "targets/cpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "targets/cpu/Passes.h.inc"

} // namespace spmd

#endif // SPMD_TARGETS_CPU_PASSES_H
