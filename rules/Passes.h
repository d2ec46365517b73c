//===- Passes.h - sharding rule passes --------------------------*- C++ -*-===//

#ifndef SPMD_RULES_PASSES_H
#define SPMD_RULES_PASSES_H

#include "mlir/Pass/Pass.h"

namespace spmd {

#define GEN_PASS_DECL
#include "rules/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "rules/Passes.h.inc"

} // namespace spmd

#endif // SPMD_RULES_PASSES_H
