//===- Executor.h - Runs a plan schedule for one rank -----------*- C++ -*-===//
//
// Runs the steps of a Schedule in order on one rank: kernels are native
// functions (the MLIR ExecutionEngine's packed C interface: one void* per
// argument, each pointing at a pointer to a memref descriptor), GEMMs go to
// BLAS (f16/bf16 computed in f32), collectives to a Collectives, copies to
// memcpy. The arena is allocated once and reused across runs.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_EXECUTOR_H
#define SPMD_RUNTIME_EXECUTOR_H

#include "runtime/Collectives.h"
#include "runtime/Plan.h"

#include <memory>

namespace spmd::plan {

/// A kernel entry point: `args[i]` points at a pointer to argument i's
/// memref descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}.
using KernelFn = void (*)(void **args);

class Executor {
public:
  /// `kernels[i]` runs Schedule::kernels[i]. `comm` may be null when the
  /// schedule has no collective.
  Executor(const Schedule &schedule, std::vector<KernelFn> kernels,
           Collectives *comm);
  ~Executor();

  /// Runs every step once. `args[i]` holds argument i's local block (it may
  /// be written: a step may update an argument in place). Returns an error
  /// message naming the step, or "".
  std::string run(const std::vector<void *> &args);
  /// Result i's data after run() (inside the arena or an argument).
  const void *result(size_t i, const std::vector<void *> &args) const;

private:
  void *address(const BufferRef &ref, const std::vector<void *> &args) const;
  std::string runStep(const Step &step, const std::vector<void *> &args);

  const Schedule &schedule;
  std::vector<KernelFn> kernels;
  Collectives *comm;
  void *arena = nullptr;
};

/// C += / = op(A) op(B) through BLAS on row-major blocks (see Step).
std::string runGemm(const Step &step, const void *a, const void *b, void *c);

} // namespace spmd::plan

#endif // SPMD_RUNTIME_EXECUTOR_H
