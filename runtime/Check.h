//===- Check.h - A run's results against a one-device reference -*- C++ -*-===//
//
// spmd-run --check: the unpartitioned program runs on one device from the
// same global inputs, and every result is compared with it, per rank (so a
// mismatch names the rank) or, for partial results, assembled, within a
// tolerance by element type.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CHECK_H
#define SPMD_RUNTIME_CHECK_H

#include "runtime/Executor.h"
#include "runtime/GlobalIO.h"
#include "runtime/Status.h"

#include <memory>

namespace spmd::plan {

struct Tolerance {
  double atol, rtol;
};
/// The default for `type` (f32 1e-4, f16 1e-2, bf16 5e-2, f64 1e-9,
/// integers exact), with `atol` and `rtol` replacing it when not negative.
Tolerance toleranceFor(DType type, double atol = -1, double rtol = -1);

/// The reference program run on one device.
class Reference {
public:
  /// Runs `ref` (kernels, GEMMs and copies only; its mesh becomes one
  /// device) `steps` times on `globals`, feeding results 0..fed-1 back, and
  /// checks that it takes the program's arguments and returns
  /// `numResults` results. Errors name `name`, the reference's file.
  Status run(Schedule &ref, std::vector<KernelFn> kernels,
             const std::vector<NpyArray> &globals, size_t numResults,
             int64_t steps, size_t fed, const std::string &name);
  const void *result(size_t i) const { return executor->result(i, ptrs); }

private:
  std::unique_ptr<Executor> executor;
  std::vector<std::vector<char>> args;
  std::vector<void *> ptrs;
};

/// How result i compares with `expected` (the reference's, of `refType`).
struct ResultCheck {
  double maxAbs = 0, maxRel = 0;
  int64_t nanInBoth = 0; // NaN where the reference has NaN too: a match
  std::string firstBad;  // the first mismatch, "" when none
};
ResultCheck compareResult(const Schedule &schedule, size_t i,
                          const NpyArray &assembled, const RankBlocks &outputs,
                          const RankShapes &outShapes, const void *expected,
                          DType refType, Tolerance tol);

} // namespace spmd::plan

#endif // SPMD_RUNTIME_CHECK_H
