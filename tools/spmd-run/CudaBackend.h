//===- CudaBackend.h - spmd-run --backend cuda ------------------*- C++ -*-===//
//
// The GPU side of spmd-run: the plan's kernels as a CUDA module (the one
// spmd-emit-cuda{embed=true} embedded, else printed and NVRTC-compiled
// here), the device, the module loaded and every kernel looked up.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TOOLS_SPMD_RUN_CUDABACKEND_H
#define SPMD_TOOLS_SPMD_RUN_CUDABACKEND_H

#include "runtime/Plan.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace spmd {

/// Prepares `schedule` of `plan` for the GPU; returns an error message (no
/// driver or no device is an error saying so), empty on success.
/// `summary` says which image was loaded where.
std::string prepareCuda(mlir::ModuleOp plan, const plan::Schedule &schedule,
                        std::string &summary);

} // namespace spmd

#endif // SPMD_TOOLS_SPMD_RUN_CUDABACKEND_H
