//===- CpuJit.h - a plan's kernels as native code ---------------*- C++ -*-===//
//
// The CPU target: JIT-compiles the kernels of a plan (linalg on memrefs) to
// native code for this machine with MLIR's ExecutionEngine (linalg -> loops
// -> LLVM, optimized for the host CPU), in the order of the schedule's
// kernel table, for runtime/Executor.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CPU_CPUJIT_H
#define SPMD_TARGETS_CPU_CPUJIT_H

#include "runtime/Executor.h"
#include "runtime/Plan.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>
#include <vector>

namespace spmd {

/// JIT-compiled kernels of a plan, in Schedule::kernels order.
struct CompiledKernels {
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::vector<plan::KernelFn> functions;
  /// Which kernels take a range of their outermost loop (see
  /// Schedule::kernelSplits, which compileKernels sets to this).
  std::vector<plan::Schedule::KernelSplit> splits;
};
/// Also sets `schedule.kernelSplits`.
mlir::LogicalResult compileKernels(mlir::ModuleOp plan,
                                   plan::Schedule &schedule,
                                   CompiledKernels &kernels,
                                   std::string &error);

} // namespace spmd

#endif // SPMD_TARGETS_CPU_CPUJIT_H
