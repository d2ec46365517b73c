//===- Passes.h - spmd CUDA target passes -----------------------*- C++ -*-===//
//
// Declarations of the passes in targets/cuda/Passes.td and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CUDA_PASSES_H
#define SPMD_TARGETS_CUDA_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace spmd {

#define GEN_PASS_DECL
#include "targets/cuda/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "targets/cuda/Passes.h.inc"

} // namespace spmd

#endif // SPMD_TARGETS_CUDA_PASSES_H
