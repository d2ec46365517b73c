//===- DeviceSteps.cpp - One rank's steps on the GPU executor -------------===//

#include "runtime/cuda/DeviceSteps.h"

namespace spmd::cuda {

std::unique_ptr<DeviceSteps> DeviceSteps::create(
    std::unique_ptr<DeviceBackend> backend, const plan::Schedule &schedule,
    std::vector<KernelSpec> specs, int64_t device,
    DeviceExecutorOptions options, const std::vector<std::vector<char>> &blocks,
    const std::vector<std::vector<Shape>> &allShapes, std::string &error) {
  auto steps = std::unique_ptr<DeviceSteps>(new DeviceSteps());
  steps->backend = std::move(backend);
  steps->executor = std::make_unique<DeviceExecutor>(
      schedule, std::move(specs), *steps->backend, device, options);
  std::vector<const void *> args;
  for (const std::vector<char> &block : blocks)
    args.push_back(block.data());
  error = steps->executor->setArguments(args, allShapes[device], allShapes);
  if (!error.empty())
    return nullptr;
  steps->resultCount = schedule.results.size();
  return steps;
}

std::string DeviceSteps::results(std::vector<std::vector<char>> &data,
                                 std::vector<Shape> &shapes) {
  for (size_t i = 0; i < resultCount; ++i) {
    shapes.push_back(executor->resultShape(i));
    data.emplace_back();
    if (std::string err = executor->downloadResult(i, data.back());
        !err.empty())
      return err;
  }
  return "";
}

std::string DeviceSteps::report() const {
  const OverlapStats &s = executor->overlap();
  return std::to_string(s.collectives) + " collective(s), " +
         std::to_string(s.overlapped) + " with compute issued behind them; " +
         std::to_string(s.computeWhilePending) + " of " +
         std::to_string(s.computeSteps) +
         " compute steps issued while a collective was in flight";
}

} // namespace spmd::cuda
