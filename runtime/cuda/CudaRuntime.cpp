//===- CudaRuntime.cpp - Devices, modules, memory and streams -------------===//

#include "runtime/cuda/CudaRuntime.h"

namespace spmd {
namespace cuda {

#define SPMD_TRY(expr)                                                         \
  do {                                                                         \
    Status spmd_status_ = (expr);                                              \
    if (!spmd_status_.ok())                                                    \
      return spmd_status_;                                                     \
  } while (0)

Status deviceCount(int &count) {
  count = 0;
  const DriverApi *api = nullptr;
  SPMD_TRY(loadDriver(api));
  SPMD_TRY(requireFunction(*api, (const void *)api->cuDeviceGetCount,
                           "cuDeviceGetCount"));
  SPMD_TRY(check(*api, api->cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0)
    return Status::error("the CUDA driver sees no GPU");
  return Status::success();
}

Status Device::open(int ordinal, std::unique_ptr<Device> &device) {
  int count = 0;
  SPMD_TRY(deviceCount(count));
  if (ordinal < 0 || ordinal >= count)
    return Status::error("GPU " + std::to_string(ordinal) +
                         " does not exist (the driver sees " +
                         std::to_string(count) + ")");
  std::unique_ptr<Device> d(new Device());
  SPMD_TRY(loadDriver(d->driver));
  const DriverApi &api = *d->driver;
  d->index = ordinal;
  std::string what = "GPU " + std::to_string(ordinal);
  SPMD_TRY(
      check(api, api.cuDeviceGet(&d->dev, ordinal), what + ": cuDeviceGet"));
  int major = 0, minor = 0;
  SPMD_TRY(
      check(api,
            api.cuDeviceGetAttribute(
                &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev),
            what + ": compute capability"));
  SPMD_TRY(
      check(api,
            api.cuDeviceGetAttribute(
                &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev),
            what + ": compute capability"));
  d->smVersion = major * 10 + minor;
  SPMD_TRY(check(api,
                 api.cuDeviceGetAttribute(
                     &d->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev),
                 what + ": SM count"));
  char name[256] = {0};
  api.cuDeviceGetName(name, sizeof name - 1, d->dev);
  d->deviceName = name;
  api.cuDeviceTotalMem(&d->memory, d->dev);
  SPMD_TRY(check(api, api.cuDevicePrimaryCtxRetain(&d->ctx, d->dev),
                 what + ": cuDevicePrimaryCtxRetain"));
  SPMD_TRY(d->makeCurrent());
  device = std::move(d);
  return Status::success();
}

Device::~Device() {
  if (ctx)
    driver->cuDevicePrimaryCtxRelease(dev);
}

Status Device::makeCurrent() const {
  return check(*driver, driver->cuCtxSetCurrent(ctx),
               "GPU " + std::to_string(index) + ": cuCtxSetCurrent");
}

Status Device::synchronize() const {
  SPMD_TRY(makeCurrent());
  return check(*driver, driver->cuCtxSynchronize(),
               "GPU " + std::to_string(index) + ": cuCtxSynchronize");
}

Status Module::load(const Device &device, const CompiledModule &compiled,
                    const Recompiler &recompile,
                    std::unique_ptr<Module> &module) {
  std::string image, how;
  SPMD_TRY(selectImage(compiled, device.arch(), recompile, image, how));
  std::unique_ptr<Module> m(new Module());
  m->device = &device;
  m->moduleName = compiled.name;
  m->how = how;
  const DriverApi &api = device.api();
  SPMD_TRY(device.makeCurrent());
  // Keep the JIT log for PTX (its errors are the interesting part).
  char log[8192] = {0};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER,
                         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {log, reinterpret_cast<void *>(sizeof log - 1)};
  CUresult rc = api.cuModuleLoadDataEx(&m->mod, image.data(), 2, opts, vals);
  if (rc != CUDA_SUCCESS)
    return Status::error(
        "loading " + compiled.name + " (" + how + ") on " + device.name() +
        " (sm_" + std::to_string(device.arch()) + "): " + errorText(api, rc) +
        (log[0] ? std::string("\n") + log : ""));
  module = std::move(m);
  return Status::success();
}

Module::~Module() {
  if (mod)
    device->api().cuModuleUnload(mod);
}

Status Module::function(const std::string &name, CUfunction &fn) {
  auto it = functions.find(name);
  if (it != functions.end()) {
    fn = it->second;
    return Status::success();
  }
  const DriverApi &api = device->api();
  SPMD_TRY(check(api, api.cuModuleGetFunction(&fn, mod, name.c_str()),
                 "kernel " + name + " of " + moduleName));
  functions[name] = fn;
  return Status::success();
}

Status launch(const Device &device, CUfunction fn, LaunchDims dims,
              const Stream &stream, void **args, unsigned sharedBytes,
              const std::string &what) {
  if (dims.grid == 0)
    return Status::success();
  const DriverApi &api = device.api();
  return check(api,
               api.cuLaunchKernel(fn, dims.grid, dims.gridY, 1, dims.block, 1,
                                  1, sharedBytes, stream.get(), args, nullptr),
               "launching " + what + " (grid " + std::to_string(dims.grid) +
                   ", block " + std::to_string(dims.block) + ")");
}

Status Stream::create(const Device &device, std::unique_ptr<Stream> &stream) {
  std::unique_ptr<Stream> s(new Stream());
  s->device = &device;
  SPMD_TRY(device.makeCurrent());
  SPMD_TRY(check(device.api(),
                 device.api().cuStreamCreate(&s->s, CU_STREAM_NON_BLOCKING),
                 "cuStreamCreate"));
  stream = std::move(s);
  return Status::success();
}

Stream::~Stream() {
  if (s)
    device->api().cuStreamDestroy(s);
}

Status Stream::synchronize() const {
  return check(device->api(), device->api().cuStreamSynchronize(s),
               "cuStreamSynchronize");
}

Status Event::create(const Device &device, bool timing,
                     std::unique_ptr<Event> &event) {
  std::unique_ptr<Event> e(new Event());
  e->device = &device;
  SPMD_TRY(device.makeCurrent());
  SPMD_TRY(
      check(device.api(),
            device.api().cuEventCreate(&e->e, timing ? CU_EVENT_DEFAULT
                                                     : CU_EVENT_DISABLE_TIMING),
            "cuEventCreate"));
  event = std::move(e);
  return Status::success();
}

Event::~Event() {
  if (e)
    device->api().cuEventDestroy(e);
}

Status Event::record(const Stream &stream) {
  return check(device->api(), device->api().cuEventRecord(e, stream.get()),
               "cuEventRecord");
}

Status Event::synchronize() const {
  return check(device->api(), device->api().cuEventSynchronize(e),
               "cuEventSynchronize");
}

Status Event::elapsedSince(const Event &start, float &ms) const {
  return check(device->api(), device->api().cuEventElapsedTime(&ms, start.e, e),
               "cuEventElapsedTime");
}

Status DeviceArena::create(const Device &device, size_t bytes,
                           std::unique_ptr<DeviceArena> &arena) {
  std::unique_ptr<DeviceArena> a(new DeviceArena());
  a->device = &device;
  a->bytes = bytes;
  if (bytes) {
    SPMD_TRY(device.makeCurrent());
    CUresult rc = device.api().cuMemAlloc(&a->ptr, bytes);
    if (rc != CUDA_SUCCESS) {
      size_t freeB = 0, totalB = 0;
      device.api().cuMemGetInfo(&freeB, &totalB);
      return Status::error(
          "allocating the memory plan (" + std::to_string(bytes) +
          " bytes) on GPU " + std::to_string(device.ordinal()) + " (" +
          std::to_string(freeB) + " of " + std::to_string(totalB) +
          " bytes free): " + errorText(device.api(), rc));
    }
  }
  arena = std::move(a);
  return Status::success();
}

DeviceArena::~DeviceArena() {
  if (ptr)
    device->api().cuMemFree(ptr);
}

Status DeviceArena::at(size_t offset, size_t size, CUdeviceptr &out) const {
  if (offset > bytes || size > bytes - offset)
    return Status::error("buffer [" + std::to_string(offset) + ", " +
                         std::to_string(offset + size) +
                         ") lies outside the arena of " +
                         std::to_string(bytes) + " bytes");
  out = ptr + offset;
  return Status::success();
}

Status StreamPair::create(const Device &device,
                          std::unique_ptr<StreamPair> &pair) {
  std::unique_ptr<StreamPair> p(new StreamPair());
  p->device = &device;
  SPMD_TRY(Stream::create(device, p->computeStream));
  SPMD_TRY(Stream::create(device, p->commStream));
  SPMD_TRY(Event::create(device, false, p->computeDone));
  SPMD_TRY(Event::create(device, false, p->commDone));
  pair = std::move(p);
  return Status::success();
}

Status StreamPair::commWaitsForCompute() {
  SPMD_TRY(computeDone->record(*computeStream));
  return check(
      device->api(),
      device->api().cuStreamWaitEvent(commStream->get(), computeDone->get(), 0),
      "cuStreamWaitEvent (communication after compute)");
}

Status StreamPair::computeWaitsForComm() {
  SPMD_TRY(commDone->record(*commStream));
  return check(
      device->api(),
      device->api().cuStreamWaitEvent(computeStream->get(), commDone->get(), 0),
      "cuStreamWaitEvent (compute after communication)");
}

Status StreamPair::synchronize() const {
  SPMD_TRY(computeStream->synchronize());
  return commStream->synchronize();
}

GraphCapture::~GraphCapture() {
  if (exec)
    device->api().cuGraphExecDestroy(exec);
  if (graph)
    device->api().cuGraphDestroy(graph);
}

Status GraphCapture::begin(const Stream &stream) {
  return check(device->api(),
               device->api().cuStreamBeginCapture(
                   stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
               "cuStreamBeginCapture");
}

Status GraphCapture::end(const Stream &stream) {
  const DriverApi &api = device->api();
  SPMD_TRY(check(api, api.cuStreamEndCapture(stream.get(), &graph),
                 "cuStreamEndCapture"));
  return check(api, api.cuGraphInstantiate(&exec, graph, 0),
               "cuGraphInstantiate");
}

Status GraphCapture::replay(const Stream &stream) {
  if (!exec)
    return Status::error("no captured graph to replay");
  return check(device->api(), device->api().cuGraphLaunch(exec, stream.get()),
               "cuGraphLaunch");
}

} // namespace cuda
} // namespace spmd
