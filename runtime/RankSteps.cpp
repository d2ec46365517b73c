//===- RankSteps.cpp - One rank's steps of a plan on a backend ------------===//

#include "runtime/RankSteps.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace spmd::plan {

CpuSteps::CpuSteps(const Schedule &schedule, std::vector<KernelFn> kernels,
                   Collectives *comm, std::vector<std::vector<char>> &blocks,
                   const std::vector<Shape> &shapes)
    : executor(schedule, std::move(kernels), comm), schedule(schedule),
      shapes(shapes) {
  for (std::vector<char> &block : blocks)
    args.push_back(block.data());
}

std::string CpuSteps::run() { return executor.run(args, shapes); }

std::string CpuSteps::feed(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (executor.resultShape(i) != shapes[i])
      return "result " + std::to_string(i) + " has local shape " +
             shapeStr(executor.resultShape(i)) + ", argument " +
             std::to_string(i) + " " + shapeStr(shapes[i]) +
             ": cannot feed it back";
    std::memmove(args[i], executor.result(i, args),
                 static_cast<size_t>(numElements(shapes[i])) *
                     dtypeSize(schedule.args[i].type));
  }
  return "";
}

std::string CpuSteps::results(std::vector<std::vector<char>> &data,
                              std::vector<Shape> &outShapes) {
  for (size_t i = 0; i < schedule.results.size(); ++i) {
    data.emplace_back();
    outShapes.emplace_back();
    if (std::string err = result(i, data.back(), outShapes.back());
        !err.empty())
      return err;
  }
  return "";
}

std::string CpuSteps::result(size_t i, std::vector<char> &data, Shape &shape) {
  if (i >= schedule.results.size())
    return "result " + std::to_string(i) + " out of range";
  const auto *p = static_cast<const char *>(executor.result(i, args));
  shape = executor.resultShape(i);
  data.assign(p, p + numElements(shape) * dtypeSize(schedule.results[i].type));
  return "";
}

std::string CpuSteps::writeArgument(size_t i, const void *data) {
  if (i >= args.size())
    return "argument " + std::to_string(i) + " out of range";
  std::memcpy(args[i], data,
              numElements(shapes[i]) * dtypeSize(schedule.args[i].type));
  return "";
}

std::string CpuSteps::readArgument(size_t i, std::vector<char> &data) {
  if (i >= args.size())
    return "argument " + std::to_string(i) + " out of range";
  const auto *p = static_cast<const char *>(args[i]);
  data.assign(p, p + numElements(shapes[i]) * dtypeSize(schedule.args[i].type));
  return "";
}

size_t feedablePrefix(const Schedule &schedule) {
  const Mesh &mesh = schedule.mesh;
  size_t pairs = std::min(schedule.results.size(), schedule.args.size());
  size_t fed = 0;
  for (; fed < pairs; ++fed) {
    const TensorInfo &r = schedule.results[fed], &a = schedule.args[fed];
    Layout rl = r.layout ? *r.layout : Layout::replicated(mesh.rank());
    Layout al = a.layout ? *a.layout : Layout::replicated(mesh.rank());
    // Global shapes where the plan knows them (spmd.global_type); a
    // hand-written local program's dynamic dims (any negative value) are
    // compared per rank when fed.
    bool sameLocal = r.localShape.size() == a.localShape.size();
    for (size_t k = 0; sameLocal && k < r.localShape.size(); ++k)
      sameLocal = r.localShape[k] == a.localShape[k] ||
                  (r.localShape[k] < 0 && a.localShape[k] < 0);
    if (r.type != a.type || rl != al || !sameLocal ||
        (r.globalShape && a.globalShape && *r.globalShape != *a.globalShape))
      break;
  }
  return fed;
}

std::string runSteps(RankSteps &rank, int64_t steps, size_t fed,
                     const std::function<void(int64_t step)> &progress,
                     double &secondsPerStep, int64_t untimed) {
  untimed = std::clamp<int64_t>(untimed, 0, steps - 1);
  auto start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    if (s == untimed)
      start = std::chrono::steady_clock::now();
    if (std::string err = rank.run(); !err.empty())
      return err;
    if (s + 1 < steps) {
      if (std::string err = rank.feed(fed); !err.empty())
        return err;
      progress(s + 1);
    }
  }
  secondsPerStep =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count() /
      static_cast<double>(steps - untimed);
  return "";
}

} // namespace spmd::plan
