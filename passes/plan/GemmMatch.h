//===- GemmMatch.h - contractions BLAS can run as (batched) GEMMs -*- C++
//-*-===//
//
// Shared by spmd-outline-plan (which turns such contractions into
// spmd.plan_gemm steps) and spmd-fuse-elementwise (which fuses a transpose
// into a contraction only where the result is still one).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_PLAN_GEMMMATCH_H
#define SPMD_PASSES_PLAN_GEMMMATCH_H

#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace spmd {

/// How the loops of a contraction C += A * B map onto a row-major (batched)
/// GEMM: for A, B and C, the runs of consecutive operand dims forming the
/// GEMM view's dims in order ((batch), rows, cols; an empty batch run when
/// there is none), and whether A or B is read transposed.
struct GemmLoops {
  bool transposeA = false, transposeB = false;
  llvm::SmallVector<llvm::SmallVector<unsigned>> runs[3];
};

/// Matches the indexing maps (A, B, C) of a contraction whose (batch, m, n,
/// k) loop groups appear as consecutive runs in every operand, in the order
/// (batch, m, k) / (batch, k, m) for A, (batch, k, n) / (batch, n, k) for B
/// and (batch, m, n) for C, each group in the same loop order wherever it
/// appears: then the buffers' row-major layouts are a GEMM's operands after
/// collapsing each run into one dim, without copies.
std::optional<GemmLoops> matchGemmLoops(llvm::ArrayRef<mlir::AffineMap> maps);

} // namespace spmd

#endif // SPMD_PASSES_PLAN_GEMMMATCH_H
