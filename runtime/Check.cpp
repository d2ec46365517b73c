//===- Check.cpp - A run's results against a one-device reference ---------===//

#include "runtime/Check.h"

#include "runtime/Collectives.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace spmd::plan {

namespace {
std::string formatTolerance(double t) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", t);
  return buf;
}
} // namespace

Tolerance toleranceFor(DType type, double atol, double rtol) {
  Tolerance tol{0, 0};
  switch (type) {
  case DType::F64:
    tol = {1e-9, 1e-9};
    break;
  case DType::F32:
    tol = {1e-4, 1e-4};
    break;
  case DType::F16:
    tol = {1e-2, 1e-2};
    break;
  case DType::BF16:
    tol = {5e-2, 5e-2};
    break;
  default:
    break;
  }
  if (atol >= 0)
    tol.atol = atol;
  if (rtol >= 0)
    tol.rtol = rtol;
  return tol;
}

Status Reference::run(Schedule &ref, std::vector<KernelFn> kernels,
                      const std::vector<NpyArray> &globals, size_t numResults,
                      int64_t steps, size_t fed, const std::string &name) {
  for (const Step &step : ref.steps)
    if (step.kind != StepKind::Kernel && step.kind != StepKind::Gemm &&
        step.kind != StepKind::Copy)
      return Status::error(name +
                           ": --check needs an unpartitioned reference "
                           "without collectives (pass one with --reference)");
  ref.mesh = Mesh{{"world"}, {1}};
  if (ref.args.size() != globals.size() || ref.results.size() != numResults)
    return Status::error(
        name + ": reference " + ref.name + " takes " +
        std::to_string(ref.args.size()) + " arguments and returns " +
        std::to_string(ref.results.size()) + " results; the program has " +
        std::to_string(globals.size()) + " and " + std::to_string(numResults));
  for (size_t i = 0; i < globals.size(); ++i) {
    if (ref.args[i].localShape != globals[i].shape)
      return Status::error(name + ": reference argument " + std::to_string(i) +
                           " is " + shapeStr(ref.args[i].localShape) +
                           ", the global input is " +
                           shapeStr(globals[i].shape));
    args.push_back(convert(globals[i], ref.args[i].type));
  }
  for (std::vector<char> &a : args)
    ptrs.push_back(a.data());
  executor = std::make_unique<Executor>(ref, std::move(kernels), nullptr);
  for (int64_t s = 0; s < steps; ++s) {
    if (std::string err = executor->run(ptrs); !err.empty())
      return Status::error(name + ": reference run: " + err);
    if (s + 1 < steps)
      for (size_t i = 0; i < fed && i < ref.results.size(); ++i)
        std::memmove(ptrs[i], executor->result(i, ptrs), args[i].size());
  }
  return Status::success();
}

ResultCheck compareResult(const Schedule &schedule, size_t i,
                          const NpyArray &assembled, const RankBlocks &outputs,
                          const RankShapes &outShapes, const void *expected,
                          DType refType, Tolerance tol) {
  const Mesh &mesh = schedule.mesh;
  const TensorInfo &res = schedule.results[i];
  Layout layout = res.layout ? *res.layout : Layout::replicated(mesh.rank());
  ResultCheck check;
  // Per rank, so a mismatch names the rank; partial results are compared
  // assembled (no single rank holds the value).
  bool partial = layout.hasPartial();
  for (int64_t d = 0; d < (partial ? 1 : mesh.numDevices()); ++d) {
    const Shape &shape = partial ? assembled.shape : outShapes[d][i];
    Shape offset(shape.size(), 0);
    if (!partial) {
      std::vector<Range> ranges =
          localRanges(mesh, layout, assembled.shape, mesh.coords(d));
      for (size_t k = 0; k < ranges.size(); ++k)
        offset[k] = ranges[k].offset;
    }
    std::vector<char> want(numElements(shape) * dtypeSize(refType));
    copyBox(expected, assembled.shape, offset, want.data(), shape,
            Shape(shape.size(), 0), shape, dtypeSize(refType));
    const char *got = partial ? assembled.data.data() : outputs[d][i].data();
    for (int64_t k = 0; k < numElements(shape); ++k) {
      double a = loadAsDouble(got, res.type, k);
      double b = loadAsDouble(want.data(), refType, k);
      if (std::isnan(a) && std::isnan(b)) {
        ++check.nanInBoth;
        continue;
      }
      if (a == b) // infinities included
        continue;
      double abs = std::fabs(a - b);
      double rel = abs / std::max(std::fabs(b), 1e-30);
      bool bad = !(abs <= tol.atol + tol.rtol * std::fabs(b));
      check.maxAbs = std::max(check.maxAbs, abs);
      if (std::fabs(b) > tol.atol)
        check.maxRel = std::max(check.maxRel, rel);
      if (bad && check.firstBad.empty())
        check.firstBad = "result " + std::to_string(i) + " mismatches on " +
                         (partial ? std::string("the assembled partial value")
                                  : "rank " + std::to_string(d)) +
                         " at local element " + std::to_string(k) + ": got " +
                         std::to_string(a) + ", expected " + std::to_string(b) +
                         " (atol " + formatTolerance(tol.atol) + ", rtol " +
                         formatTolerance(tol.rtol) + ")";
    }
  }
  return check;
}

} // namespace spmd::plan
