//===- CpuProgram.h - A program loaded for the CPU executor -----*- C++ -*-===//
//
// A program file made ready to run on runtime/Executor: parsed, compiled to
// a plan when it is not one (targets/plan/EnsurePlan.h), its schedule
// converted and its kernels JIT-compiled (CpuJit.h).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CPU_CPUPROGRAM_H
#define SPMD_TARGETS_CPU_CPUPROGRAM_H

#include "targets/cpu/CpuJit.h"

#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace spmd {

struct CpuProgram {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  plan::Schedule schedule;
  CompiledKernels kernels;
};

/// Loads `file`'s schedule `entry` (empty: the only one), compiled with
/// spmd-compile{partition=`partition`} when it is no plan. Errors (in
/// `error`) name `file`.
mlir::LogicalResult loadCpuProgram(mlir::MLIRContext &ctx,
                                   const std::string &file,
                                   llvm::StringRef entry,
                                   llvm::StringRef partition,
                                   CpuProgram &program, std::string &error);

} // namespace spmd

#endif // SPMD_TARGETS_CPU_CPUPROGRAM_H
