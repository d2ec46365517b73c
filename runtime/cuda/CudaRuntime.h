//===- CudaRuntime.h - Devices, modules, memory and streams ----*- C++ -*-===//
//
// The device side of a plan run, over the driver API (Driver.h):
//  * Device: a GPU's primary context, its SM version and SM count;
//  * Module: a CompiledModule loaded with cuModuleLoadData (the image chosen
//    by selectImage: own cubin, compatible cubin, recompilation through the
//    caller's Recompiler or PTX), and its kernels by name;
//  * launch: cuLaunchKernel with a grid of zero skipped (empty tensors);
//  * DeviceArena: the static memory plan as one allocation;
//  * Stream / Event and StreamPair: a compute and a communication stream
//    with events, so a collective waits only for the kernels producing its
//    input and compute continues meanwhile;
//  * GraphCapture: a whole step captured once as a CUDA Graph and replayed.
// Every call returns a Status naming what failed.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_CUDARUNTIME_H
#define SPMD_RUNTIME_CUDA_CUDARUNTIME_H

#include "runtime/Status.h"
#include "runtime/cuda/CudaModule.h"
#include "runtime/cuda/Driver.h"
#include "runtime/cuda/LaunchConfig.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace spmd {
namespace cuda {

/// Number of visible devices; an error when there is no driver or device.
Status deviceCount(int &count);

class Device {
public:
  /// Retains device `ordinal`'s primary context and makes it current on the
  /// calling thread.
  static Status open(int ordinal, std::unique_ptr<Device> &device);
  ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  /// Makes the context current on the calling thread (one thread per GPU).
  Status makeCurrent() const;
  Status synchronize() const;
  int ordinal() const { return index; }
  int arch() const { return smVersion; } // e.g. 90
  int smCount() const { return sms; }
  const std::string &name() const { return deviceName; }
  size_t totalMemory() const { return memory; }
  const DriverApi &api() const { return *driver; }
  CUcontext context() const { return ctx; }

private:
  Device() = default;
  const DriverApi *driver = nullptr;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  int index = 0, smVersion = 0, sms = 0;
  std::string deviceName;
  size_t memory = 0;
};

class Module {
public:
  /// `recompile` (may be empty) compiles the source for a device the
  /// module has no cubin for (selectImage).
  static Status load(const Device &device, const CompiledModule &compiled,
                     const Recompiler &recompile,
                     std::unique_ptr<Module> &module);
  ~Module();
  /// The kernel `name` (an extern "C" entry point), cached.
  Status function(const std::string &name, CUfunction &fn);
  /// How the image was obtained ("cubin sm_90", "recompiled for sm_89").
  const std::string &imageSource() const { return how; }

private:
  Module() = default;
  const Device *device = nullptr;
  CUmodule mod = nullptr;
  std::string moduleName, how;
  std::map<std::string, CUfunction> functions;
};

class Stream {
public:
  static Status create(const Device &device, std::unique_ptr<Stream> &stream);
  ~Stream();
  CUstream get() const { return s; }
  Status synchronize() const;

private:
  Stream() = default;
  const Device *device = nullptr;
  CUstream s = nullptr;
};

class Event {
public:
  /// `timing` enables cuEventElapsedTime (costs a little when recording).
  static Status create(const Device &device, bool timing,
                       std::unique_ptr<Event> &event);
  ~Event();
  CUevent get() const { return e; }
  Status record(const Stream &stream);
  Status synchronize() const;
  /// Milliseconds from `start` to this event (both recorded and complete).
  Status elapsedSince(const Event &start, float &ms) const;

private:
  Event() = default;
  const Device *device = nullptr;
  CUevent e = nullptr;
};

/// Launches `fn` with kernel arguments `args` (pointers to each argument,
/// as cuLaunchKernel takes them). A grid of 0 launches nothing.
Status launch(const Device &device, CUfunction fn, LaunchDims dims,
              const Stream &stream, void **args, unsigned sharedBytes = 0,
              const std::string &what = "kernel");

/// The static memory plan's buffers in one allocation; offsets come from
/// the plan (aligned to 256 bytes, what cuBLASLt and vector loads like).
class DeviceArena {
public:
  static Status create(const Device &device, size_t bytes,
                       std::unique_ptr<DeviceArena> &arena);
  ~DeviceArena();
  CUdeviceptr base() const { return ptr; }
  size_t size() const { return bytes; }
  /// base + offset, or an error when [offset, offset + size) is outside.
  Status at(size_t offset, size_t size, CUdeviceptr &out) const;
  static size_t align(size_t offset) { return (offset + 255) / 256 * 256; }

private:
  DeviceArena() = default;
  const Device *device = nullptr;
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
};

/// The compute stream runs kernels and GEMMs; the communication stream runs
/// NCCL collectives. A collective waits on an event recorded after its
/// input's producer (commWaitsForCompute), and a consumer of its output
/// waits on one recorded after it (computeWaitsForComm).
class StreamPair {
public:
  static Status create(const Device &device, std::unique_ptr<StreamPair> &p);
  const Stream &compute() const { return *computeStream; }
  const Stream &comm() const { return *commStream; }
  Status commWaitsForCompute();
  Status computeWaitsForComm();
  Status synchronize() const;

private:
  StreamPair() = default;
  const Device *device = nullptr;
  std::unique_ptr<Stream> computeStream, commStream;
  std::unique_ptr<Event> computeDone, commDone;
};

/// Captures everything issued to `stream` between begin() and end() (and
/// to streams joined through events) as a graph, then replays it.
class GraphCapture {
public:
  explicit GraphCapture(const Device &device) : device(&device) {}
  ~GraphCapture();
  Status begin(const Stream &stream);
  Status end(const Stream &stream);
  Status replay(const Stream &stream);

private:
  const Device *device;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
};

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_CUDARUNTIME_H
