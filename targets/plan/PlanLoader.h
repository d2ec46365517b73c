//===- PlanLoader.h - MLIR plan to runtime plan -----------------*- C++ -*-===//
//
// Every target starts here: parses a plan file and converts a schedule's
// `spmd.plan_*` ops to the runtime's plan model (runtime/Plan.h). Loading
// an existing plan needs no compiler passes (SPMDPlanLoader); compiling a
// program that is not a plan yet is targets/plan/EnsurePlan.h's
// (SPMDEnsurePlan, which links the passes). The kernels are the targets'
// business: targets/cpu JIT-compiles them to native code, targets/cuda
// prints them as CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_PLAN_PLANLOADER_H
#define SPMD_TARGETS_PLAN_PLANLOADER_H

#include "runtime/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <optional>
#include <string>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace spmd {

/// Parses the program or plan in `file` (text or bytecode) into
/// `sourceMgr`, reporting errors through `ctx`'s diagnostics; null on
/// failure. Text that upstream MLIR's parser would crash on
/// (core/ParseHazards.h) is an error at its position instead; the parsed
/// module is verified by passes/InputCheck.h's verifyInput (no upstream
/// verifier or pass sees an op it would crash on).
mlir::OwningOpRef<mlir::ModuleOp> parseProgramFile(llvm::StringRef file,
                                                   llvm::SourceMgr &sourceMgr,
                                                   mlir::MLIRContext *ctx);

/// parseProgramFile on a buffer already read (its identifier names it in
/// errors): the same scan, the parser, then the same check.
mlir::OwningOpRef<mlir::ModuleOp>
parseProgramBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                   llvm::SourceMgr &sourceMgr, mlir::MLIRContext *ctx);

/// Whether `module` is a plan (spmd-compile's output: it has the
/// spmd.plan_version attribute).
bool isPlan(mlir::ModuleOp module);

/// Checks that `module` is a plan of the version this build reads. Errors
/// name `file`.
mlir::LogicalResult checkPlanVersion(mlir::ModuleOp module,
                                     llvm::StringRef file, std::string &error);

/// The runtime element type of a buffer element type: f32/f64/f16/bf16,
/// i32, i64 (and index), i8 (and i1); none for others.
std::optional<DType> dtypeOfElementType(mlir::Type type);

/// Converts the schedule `entry` (empty: the only one) of a plan.
mlir::LogicalResult loadSchedule(mlir::ModuleOp plan, llvm::StringRef entry,
                                 plan::Schedule &schedule, std::string &error);

/// Runs `fn` and appends the diagnostics it emits on `ctx` to `error`.
mlir::LogicalResult
captureDiagnostics(mlir::MLIRContext *ctx, std::string &error,
                   llvm::function_ref<mlir::LogicalResult()> fn);

} // namespace spmd

#endif // SPMD_TARGETS_PLAN_PLANLOADER_H
