//===- Passes.h - spmd passes and pipelines ---------------------*- C++ -*-===//
//
// Every phase's passes (one folder each: propagation/, partition/,
// collectives/, plan/) and the pipelines that chain them. The CUDA target's
// pass lives with the target (targets/cuda/Passes.h).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_PASSES_H
#define SPMD_PASSES_PASSES_H

#include "passes/collectives/Passes.h"
#include "passes/partition/Passes.h"
#include "passes/plan/Passes.h"
#include "passes/propagation/Passes.h"

namespace spmd {

/// Registers the named pipelines (passes/Pipelines.cpp).
void registerSPMDPipelines();
/// spmd-partition-pipeline with its default options: global annotated
/// program -> local program (spmd-compile's first step); `bucket` runs
/// spmd-bucket-collectives with its default caps.
void buildPartitionPipeline(mlir::OpPassManager &pm, bool bucket = true);
/// spmd-compile: program -> plan (partitioning of a global program,
/// fusion, bufferization, outlining, memory plan). `partition` is auto (a
/// global program is partitioned first, see isGlobalProgram), on or off
/// (compile unpartitioned on one device, spmd.constrain dropped).
/// `scheduleCollectives` runs spmd-schedule-collectives before
/// bufferization; `bucket` buckets the partitioned program's collectives.
void buildCompilePipeline(mlir::OpPassManager &pm,
                          llvm::StringRef partition = "auto",
                          bool scheduleCollectives = true, bool bucket = true);
/// Whether `module` is a global annotated program: it names a layout and has
/// no spmd collectives and no argument with spmd.global_type (the marks of a
/// local program). Not a plan.
bool isGlobalProgram(mlir::ModuleOp module);
void registerCompilePipeline();

/// Registers every pass and pipeline of the compiler's phases (a target's
/// passes register with the target, e.g. registerCudaPasses()).
void registerAllSPMDPasses();

} // namespace spmd

#endif // SPMD_PASSES_PASSES_H
