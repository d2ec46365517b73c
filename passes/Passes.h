//===- Passes.h - spmd passes -----------------------------------*- C++ -*-===//

#ifndef SPMD_PASSES_PASSES_H
#define SPMD_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"

namespace spmd {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Registers the named pipelines (passes/Pipelines.cpp).
void registerSPMDPipelines();
/// spmd-compile: local program -> plan (fusion, bufferization, outlining,
/// memory plan).
void buildCompilePipeline(mlir::OpPassManager &pm);
void registerCompilePipeline();

/// Registers every pass and pipeline of the project.
void registerAllSPMDPasses();

} // namespace spmd

#endif // SPMD_PASSES_PASSES_H
