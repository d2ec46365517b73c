//===- OneHotLoops.h - one-hot contractions as gathers and scatters -*- C++
//-*-===//
//
// Rewrites, in a plan's kernels lowered for the CPU, every linalg.generic
// that is a contraction with a one-hot matrix (the frontend's embedding
// lookup and its backward) into loops that skip the one-hot dim: a gather,
// or a scatter-add. See OneHotLoops.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CPU_ONEHOTLOOPS_H
#define SPMD_TARGETS_CPU_ONEHOTLOOPS_H

namespace mlir {
class Operation;
} // namespace mlir

namespace spmd {

/// Rewrites the one-hot contractions under `root` (on buffers); returns
/// how many.
int rewriteOneHotContractions(mlir::Operation *root);

} // namespace spmd

#endif // SPMD_TARGETS_CPU_ONEHOTLOOPS_H
