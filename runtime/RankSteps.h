//===- RankSteps.h - One rank's steps of a plan on a backend ----*- C++ -*-===//
//
// One rank runs a plan's steps on its backend: the CPU executor over the
// host blocks (CpuSteps here), or the GPU executor over device copies of
// them (runtime/cuda/DeviceSteps.h). runSteps drives either for --steps K,
// feeding results back to arguments between steps.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_RANKSTEPS_H
#define SPMD_RUNTIME_RANKSTEPS_H

#include "runtime/Executor.h"
#include "runtime/Plan.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace spmd::plan {

/// Errors are messages, "" on success (as the executors').
class RankSteps {
public:
  virtual ~RankSteps() = default;
  virtual std::string run() = 0;
  /// Results 0..count-1 become arguments 0..count-1.
  virtual std::string feed(size_t count) = 0;
  /// Appends every result's local block and shape.
  virtual std::string results(std::vector<std::vector<char>> &data,
                              std::vector<Shape> &shapes) = 0;
  /// Result i's local block and shape after a run.
  virtual std::string result(size_t i, std::vector<char> &data,
                             Shape &shape) = 0;
  /// Argument i's block (of the shape the rank was made with) replaced by
  /// `data` / copied out, between runs.
  virtual std::string writeArgument(size_t i, const void *data) = 0;
  virtual std::string readArgument(size_t i, std::vector<char> &data) = 0;
  /// Fault injection for tests: the next run fails before `step`.
  virtual void failBeforeStep(int64_t step) = 0;
  /// What the backend has to say about the last step ("" for the CPU).
  virtual std::string report() const { return ""; }
  /// Records every executed step into `events`; false where the backend
  /// cannot (the GPU executors, for now).
  virtual bool setTrace(std::vector<TraceEvent> *events) { return false; }
};

/// The CPU executor over `blocks`, which it updates in place.
class CpuSteps final : public RankSteps {
public:
  CpuSteps(const Schedule &schedule, std::vector<KernelFn> kernels,
           Collectives *comm, std::vector<std::vector<char>> &blocks,
           const std::vector<Shape> &shapes);
  std::string run() override;
  std::string feed(size_t count) override;
  std::string results(std::vector<std::vector<char>> &data,
                      std::vector<Shape> &shapes) override;
  std::string result(size_t i, std::vector<char> &data, Shape &shape) override;
  std::string writeArgument(size_t i, const void *data) override;
  std::string readArgument(size_t i, std::vector<char> &data) override;
  void failBeforeStep(int64_t step) override { executor.failBeforeStep(step); }
  bool setTrace(std::vector<TraceEvent> *events) override {
    executor.setTrace(events);
    return true;
  }

private:
  Executor executor;
  const Schedule &schedule;
  std::vector<Shape> shapes;
  std::vector<void *> args;
};

/// How many results feed arguments between steps: result i feeds argument
/// i for the longest prefix of pairs with the same element type, global
/// shape and layout (a training step exported with its updated state
/// first); the first pair that differs ends the feeding.
size_t feedablePrefix(const Schedule &schedule);

/// Runs `steps` steps, feeding results 0..fed-1 back between them and
/// calling `progress(s)` after step s of 1..steps-1. `secondsPerStep` is
/// the mean time of the steps after the first `untimed` (at most steps - 1;
/// the first steps pay for set-up: GEMM algorithm choice, graph capture).
/// An error message or "".
std::string runSteps(RankSteps &rank, int64_t steps, size_t fed,
                     const std::function<void(int64_t step)> &progress,
                     double &secondsPerStep, int64_t untimed = 0);

} // namespace spmd::plan

#endif // SPMD_RUNTIME_RANKSTEPS_H
