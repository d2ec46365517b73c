//===- SPMDPlanOps.h - spmd plan steps --------------------------*- C++ -*-===//

#ifndef SPMD_DIALECTS_SPMD_SPMDPLANOPS_H
#define SPMD_DIALECTS_SPMD_SPMDPLANOPS_H

#include "dialects/spmd/SPMDOps.h"
#include "mlir/IR/BuiltinTypes.h"

#define GET_OP_CLASSES
#include "dialects/spmd/SPMDPlanOps.h.inc"

namespace spmd {
/// Attribute names of plans: on the module (format version), on kernel
/// functions, and on schedule functions (the arena size in bytes).
inline constexpr llvm::StringLiteral kPlanVersionAttrName = "spmd.plan_version";
inline constexpr llvm::StringLiteral kPlanKernelAttrName = "spmd.plan_kernel";
inline constexpr llvm::StringLiteral kPlanArenaAttrName =
    "spmd.plan_arena_bytes";
/// The plan format this compiler writes and spmd-run reads.
inline constexpr int64_t kPlanVersion = 1;

/// Verifies a `spmd.plan_*` discardable attribute (called from
/// SPMDDialect::verifyOperationAttribute).
mlir::LogicalResult verifyPlanAttribute(mlir::Operation *op,
                                        mlir::NamedAttribute attr);
} // namespace spmd

#endif // SPMD_DIALECTS_SPMD_SPMDPLANOPS_H
