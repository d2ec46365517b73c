//===- GpuBackend.h - The DeviceBackend of a real GPU -----------*- C++ -*-===//
//
// DeviceExecutor's operations on an NVIDIA GPU through the driver API
// (CudaRuntime.h): buffers from cuMemAlloc, the plan's module loaded once
// per backend, launches on a compute stream, cuBLASLt GEMMs (Gemm.h),
// device copies, events between the compute and the communication stream,
// and CUDA Graph capture.
//
// Collectives: through an NcclComm enqueued on the communication stream
// (device pointers; planned member shapes skip its header exchange), or,
// where ranks share a GPU, through a host communicator with the blocks
// staged through host memory (both streams synchronized first: correct,
// not fast, and not capturable).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_GPUBACKEND_H
#define SPMD_RUNTIME_CUDA_GPUBACKEND_H

#include "runtime/Collectives.h"
#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/DeviceExecutor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace spmd {
namespace cuda {

class GemmRunner;
class NcclComm;

class GpuBackend final : public DeviceBackend {
public:
  /// On `device` (which outlives the backend): loads `compiled` (through
  /// `recompile` when it has no image for the device, see Module::load) and
  /// looks up `kernels` (the schedule's kernel names, in order).
  static Status create(const Device &device, const CompiledModule &compiled,
                       const Recompiler &recompile,
                       const std::vector<std::string> &kernels,
                       std::unique_ptr<GpuBackend> &backend);
  ~GpuBackend() override;

  /// Collectives through `nccl` (its stream becomes this backend's
  /// communication stream), or when null through `host` with staging.
  void setCollectives(NcclComm *nccl, plan::Collectives *host);

  std::string describe() const override;
  int smCount() const override { return device->smCount(); }
  Status allocate(size_t bytes, DevicePtr &ptr) override;
  void release(DevicePtr ptr) override;
  Status upload(DevicePtr dst, const void *src, size_t bytes) override;
  Status download(void *dst, DevicePtr src, size_t bytes) override;
  Status launch(int64_t kernel, LaunchDims dims, void **params,
                size_t numParams, const OpInfo &op) override;
  Status gemm(const GemmDesc &desc, DevicePtr a, DevicePtr b, DevicePtr c,
              const OpInfo &op) override;
  Status copy2D(DevicePtr dst, size_t dstPitch, DevicePtr src, size_t srcPitch,
                size_t width, size_t height, const OpInfo &op) override;
  Status zero(DevicePtr dst, size_t bytes, const OpInfo &op) override;
  Status collective(const plan::Step &step, DevicePtr in, const Shape &inShape,
                    DevicePtr out, const Shape &outShape,
                    const std::vector<Shape> *memberShapes,
                    const OpInfo &op) override;
  Status record(StreamId stream, int64_t event) override;
  /// Timing events: mark 0's device time is taken as the host clock when
  /// it was recorded, the others as its elapsed time from it.
  bool canTime() const override { return true; }
  Status timeMark(StreamId stream, int64_t mark) override;
  Status markTimes(int64_t count, std::vector<double> &us) override;
  Status wait(StreamId stream, int64_t event) override;
  Status synchronize() override;
  bool canCaptureCollectives() const override { return nccl != nullptr; }
  Status beginCapture() override;
  Status endCapture() override;
  Status replay() override;

private:
  GpuBackend() = default;
  const Stream &streamOf(StreamId id) const {
    return id == StreamId::Compute ? *compute : *comm;
  }

  const Device *device = nullptr;
  std::unique_ptr<Module> module;
  std::vector<CUfunction> functions;
  std::unique_ptr<Stream> compute, comm;
  std::vector<std::unique_ptr<Event>> events;
  std::vector<std::unique_ptr<Event>> marks; // timing events
  double firstMarkUs = 0;
  std::map<DevicePtr, std::unique_ptr<DeviceArena>> allocations;
  std::unique_ptr<GemmRunner> gemms;
  std::unique_ptr<GraphCapture> graph;
  NcclComm *nccl = nullptr;
  plan::Collectives *host = nullptr;
  std::unique_ptr<plan::Collectives> ncclCollectives;
  std::vector<char> stageIn, stageOut;
};

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_GPUBACKEND_H
