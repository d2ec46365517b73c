//===- EnsurePlan.h - Compile a program to a plan when needed ---*- C++ -*-===//
//
// What a target does with a program file that is not a plan yet: runs
// spmd-compile on it. Apart from targets/plan/PlanLoader.h because it links
// the compiler's passes (SPMDEnsurePlan); loading a plan does not.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_PLAN_ENSUREPLAN_H
#define SPMD_TARGETS_PLAN_ENSUREPLAN_H

#include "targets/plan/PlanLoader.h"

namespace spmd {

/// Runs spmd-compile{partition=`partition`} on `module` unless it is a plan
/// already (a global annotated program is partitioned first with "auto"; "off"
/// compiles it unpartitioned on one device); checks the plan version. Errors
/// name `file`.
mlir::LogicalResult ensurePlan(mlir::ModuleOp module, llvm::StringRef file,
                               std::string &error,
                               llvm::StringRef partition = "auto");

} // namespace spmd

#endif // SPMD_TARGETS_PLAN_ENSUREPLAN_H
