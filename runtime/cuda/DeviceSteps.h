//===- DeviceSteps.h - One rank's steps on the GPU executor -----*- C++ -*-===//
//
// RankSteps (runtime/RankSteps.h) over the GPU step executor: the rank's
// arguments uploaded once, kept and fed on the device, results downloaded
// at the end. The backend (a GPU or the emulated one) is opened by the
// caller (targets/cuda/CudaBackend.h: CudaProgram::openRank).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_DEVICESTEPS_H
#define SPMD_RUNTIME_CUDA_DEVICESTEPS_H

#include "runtime/RankSteps.h"
#include "runtime/cuda/DeviceExecutor.h"

#include <memory>

namespace spmd::cuda {

class DeviceSteps final : public plan::RankSteps {
public:
  /// Rank `device` on `backend`, its arguments `blocks` uploaded; null and
  /// `error` on failure. `allShapes[r]` are rank r's argument shapes.
  static std::unique_ptr<DeviceSteps>
  create(std::unique_ptr<DeviceBackend> backend, const plan::Schedule &schedule,
         std::vector<KernelSpec> specs, int64_t device,
         DeviceExecutorOptions options,
         const std::vector<std::vector<char>> &blocks,
         const std::vector<std::vector<Shape>> &allShapes, std::string &error);
  std::string run() override { return executor->run(); }
  std::string feed(size_t count) override {
    return executor->feedResults(count);
  }
  std::string results(std::vector<std::vector<char>> &data,
                      std::vector<Shape> &shapes) override;
  std::string result(size_t i, std::vector<char> &data, Shape &shape) override {
    shape = executor->resultShape(i);
    return executor->downloadResult(i, data);
  }
  std::string writeArgument(size_t i, const void *data) override {
    return executor->uploadArgument(i, data);
  }
  std::string readArgument(size_t i, std::vector<char> &data) override {
    return executor->downloadArgument(i, data);
  }
  void failBeforeStep(int64_t step) override { executor->failBeforeStep(step); }
  bool setTrace(std::vector<plan::TraceEvent> *events) override {
    return executor->setTrace(events);
  }
  /// The step's overlap of compute with collectives.
  std::string report() const override;

private:
  DeviceSteps() = default;
  std::unique_ptr<DeviceBackend> backend;
  std::unique_ptr<DeviceExecutor> executor;
  size_t resultCount = 0;
};

} // namespace spmd::cuda

#endif // SPMD_RUNTIME_CUDA_DEVICESTEPS_H
