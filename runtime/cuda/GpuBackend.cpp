//===- GpuBackend.cpp - The DeviceBackend of a real GPU -------------------===//

#include "runtime/cuda/GpuBackend.h"

#include "runtime/Executor.h"

#include "runtime/CommCollectives.h"
#include "runtime/cuda/Gemm.h"
#include "runtime/cuda/NcclComm.h"

#include <cstring>

using namespace spmd;
using namespace spmd::cuda;

namespace {
// cuBLASLt's recommended workspace on Hopper.
constexpr size_t kGemmWorkspace = size_t(32) << 20;

CUdeviceptr dptr(DevicePtr p) { return static_cast<CUdeviceptr>(p); }
} // namespace

Status GpuBackend::create(const Device &device, const CompiledModule &compiled,
                          const Recompiler &recompile,
                          const std::vector<std::string> &kernels,
                          std::unique_ptr<GpuBackend> &backend) {
  std::unique_ptr<GpuBackend> b(new GpuBackend());
  b->device = &device;
  Status s = device.makeCurrent();
  if (s.ok())
    s = Module::load(device, compiled, recompile, b->module);
  for (const std::string &name : kernels) {
    CUfunction fn = nullptr;
    if (s.ok())
      s = b->module->function(name, fn);
    b->functions.push_back(fn);
  }
  if (s.ok())
    s = Stream::create(device, b->compute);
  if (s.ok())
    s = Stream::create(device, b->comm);
  if (s.ok())
    s = GemmRunner::create(device, kGemmWorkspace, b->gemms);
  if (!s.ok())
    return s;
  backend = std::move(b);
  return Status::success();
}

GpuBackend::~GpuBackend() {
  if (nccl)
    nccl->setStream(nullptr);
  (void)synchronize();
}

void GpuBackend::setCollectives(NcclComm *n, plan::Collectives *h) {
  nccl = n;
  host = h;
  ncclCollectives.reset();
  if (nccl) {
    nccl->setStream(comm->get());
    ncclCollectives = std::make_unique<plan::CommCollectives>(*nccl);
  }
}

std::string GpuBackend::describe() const {
  return device->name() + " (GPU " + std::to_string(device->ordinal()) +
         ", sm_" + std::to_string(device->arch()) + ", " +
         module->imageSource() + ")";
}

Status GpuBackend::allocate(size_t bytes, DevicePtr &ptr) {
  std::unique_ptr<DeviceArena> arena;
  Status s = DeviceArena::create(*device, std::max<size_t>(bytes, 1), arena);
  if (!s.ok())
    return s;
  ptr = static_cast<DevicePtr>(arena->base());
  allocations[ptr] = std::move(arena);
  return Status::success();
}

void GpuBackend::release(DevicePtr ptr) { allocations.erase(ptr); }

Status GpuBackend::upload(DevicePtr dst, const void *src, size_t bytes) {
  const DriverApi &api = device->api();
  return check(api, api.cuMemcpyHtoD(dptr(dst), src, bytes), "cuMemcpyHtoD");
}

Status GpuBackend::download(void *dst, DevicePtr src, size_t bytes) {
  const DriverApi &api = device->api();
  return check(api, api.cuMemcpyDtoH(dst, dptr(src), bytes), "cuMemcpyDtoH");
}

Status GpuBackend::launch(int64_t kernel, LaunchDims dims, void **params,
                          size_t, const OpInfo &op) {
  return cuda::launch(*device, functions[kernel], dims, *compute, params, 0,
                      op.what);
}

Status GpuBackend::gemm(const GemmDesc &desc, DevicePtr a, DevicePtr b,
                        DevicePtr c, const OpInfo &op) {
  Status s = gemms->run(desc, dptr(a), dptr(b), dptr(c), 0, *compute);
  return s.ok() ? s : Status::error(op.what + ": " + s.message());
}

Status GpuBackend::copy2D(DevicePtr dst, size_t dstPitch, DevicePtr src,
                          size_t srcPitch, size_t width, size_t height,
                          const OpInfo &op) {
  const DriverApi &api = device->api();
  if (height == 1)
    return check(
        api, api.cuMemcpyDtoDAsync(dptr(dst), dptr(src), width, compute->get()),
        op.what + ": cuMemcpyDtoDAsync");
  CUDA_MEMCPY2D copy;
  std::memset(&copy, 0, sizeof copy);
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = dptr(src);
  copy.srcPitch = srcPitch;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = dptr(dst);
  copy.dstPitch = dstPitch;
  copy.WidthInBytes = width;
  copy.Height = height;
  return check(api, api.cuMemcpy2DAsync(&copy, compute->get()),
               op.what + ": cuMemcpy2DAsync");
}

Status GpuBackend::zero(DevicePtr dst, size_t bytes, const OpInfo &op) {
  const DriverApi &api = device->api();
  return check(api, api.cuMemsetD8Async(dptr(dst), 0, bytes, compute->get()),
               op.what + ": cuMemsetD8Async");
}

Status GpuBackend::collective(const plan::Step &step, DevicePtr in,
                              const Shape &inShape, DevicePtr out,
                              const Shape &outShape,
                              const std::vector<Shape> *memberShapes,
                              const OpInfo &op) {
  auto result = [&](const std::string &err) {
    return err.empty() ? Status::success()
                       : Status::error(op.what + ": " + err);
  };
  if (nccl) {
    if (memberShapes)
      nccl->setPlannedShapes(*memberShapes);
    return result(plan::runCollective(
        *ncclCollectives, step, reinterpret_cast<const void *>(in), inShape,
        reinterpret_cast<void *>(out), outShape));
  }
  if (!host)
    return Status::error(op.what + ": no communicator");
  // Staged through host memory: everything issued so far must be done.
  Status s = synchronize();
  size_t inBytes = static_cast<size_t>(numElements(inShape)) *
                   dtypeSize(step.operands[0].type);
  size_t outBytes = static_cast<size_t>(numElements(outShape)) *
                    dtypeSize(step.operands[1].type);
  stageIn.resize(std::max<size_t>(inBytes, 1));
  stageOut.resize(std::max<size_t>(outBytes, 1));
  if (s.ok() && inBytes)
    s = download(stageIn.data(), in, inBytes);
  if (!s.ok())
    return s;
  if (in == out)
    std::memcpy(stageOut.data(), stageIn.data(), std::min(inBytes, outBytes));
  std::string err = plan::runCollective(*host, step, stageIn.data(), inShape,
                                        stageOut.data(), outShape);
  if (!err.empty())
    return result(err);
  return outBytes ? upload(out, stageOut.data(), outBytes) : Status::success();
}

Status GpuBackend::record(StreamId stream, int64_t event) {
  while (events.size() <= static_cast<size_t>(event)) {
    std::unique_ptr<Event> e;
    if (Status s = Event::create(*device, false, e); !s.ok())
      return s;
    events.push_back(std::move(e));
  }
  return events[event]->record(streamOf(stream));
}

Status GpuBackend::timeMark(StreamId stream, int64_t mark) {
  if (mark < 0)
    return Status::error("timing mark " + std::to_string(mark));
  while (marks.size() <= static_cast<size_t>(mark)) {
    std::unique_ptr<Event> e;
    if (Status s = Event::create(*device, /*timing=*/true, e); !s.ok())
      return s;
    marks.push_back(std::move(e));
  }
  if (mark == 0)
    firstMarkUs = plan::traceClockUs();
  return marks[mark]->record(streamOf(stream));
}

Status GpuBackend::markTimes(int64_t count, std::vector<double> &us) {
  if (count > static_cast<int64_t>(marks.size()))
    return Status::error(std::to_string(count) + " timing marks asked, " +
                         std::to_string(marks.size()) + " recorded");
  us.assign(static_cast<size_t>(count), firstMarkUs);
  for (int64_t k = 1; k < count; ++k) {
    float ms = 0;
    if (Status s = marks[k]->elapsedSince(*marks[0], ms); !s.ok())
      return s;
    us[k] = firstMarkUs + 1000.0 * ms;
  }
  return Status::success();
}

Status GpuBackend::wait(StreamId stream, int64_t event) {
  if (static_cast<size_t>(event) >= events.size())
    return Status::error("wait on event " + std::to_string(event) +
                         ", never recorded");
  const DriverApi &api = device->api();
  return check(
      api,
      api.cuStreamWaitEvent(streamOf(stream).get(), events[event]->get(), 0),
      "cuStreamWaitEvent");
}

Status GpuBackend::synchronize() {
  Status s = compute->synchronize();
  Status c = nccl ? nccl->synchronize() : comm->synchronize();
  return s.ok() ? c : s;
}

Status GpuBackend::beginCapture() {
  graph = std::make_unique<GraphCapture>(*device);
  return graph->begin(*compute);
}

Status GpuBackend::endCapture() {
  if (!graph)
    return Status::error("no graph capture to end");
  return graph->end(*compute);
}

Status GpuBackend::replay() {
  if (!graph)
    return Status::error("no captured graph to replay");
  return graph->replay(*compute);
}
