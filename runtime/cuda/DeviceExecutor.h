//===- DeviceExecutor.h - Runs a plan schedule on a GPU ---------*- C++ -*-===//
//
// The GPU step executor: one rank's Schedule on one device, behind a small
// DeviceBackend interface that the real GPU (GpuBackend.h: driver API,
// cuBLASLt, NCCL) and the host emulation of a GPU (EmuBackend.h: the same
// CUDA source compiled for the CPU, with a race checker for the two
// streams) both implement, so everything here is tested on machines
// without a GPU.
//
//  * Memory: the static memory plan's arena is one device allocation,
//    every argument one more (kept on the device across steps; --steps
//    feeds results into arguments there), and the runtime-sized buffers one
//    region placed per run (RankBuffers).
//  * Kernels: launched with the code generator's parameter ABI (every
//    parameter 8 bytes: element pointers, index scalars, then the dynamic
//    dims of each buffer argument; targets/cuda/CudaEmitter.h) and its launch
//    rule (grid-stride or warp-per-row, over the kernel's work).
//  * GEMMs: cuBLASLt (TF32 when allowed); copies and spmd.shard: 2-D device
//    copies.
//  * Streams: kernels, GEMMs and copies go to the compute stream,
//    collectives to the communication stream. A collective waits for the
//    compute work issued before it; a compute step waits for the latest
//    pending collective whose buffers it touches (reads or writes), and no
//    longer, so independent compute overlaps communication. The step ends
//    with both streams joined.
//  * Collectives are told every member's block shape up front (computed
//    from every rank's argument shapes and mesh coordinates), so none
//    synchronizes with the host to exchange them.
//  * CUDA Graphs (optional): the first run executes, the second is
//    captured, later runs replay the graph.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_DEVICEEXECUTOR_H
#define SPMD_RUNTIME_CUDA_DEVICEEXECUTOR_H

#include "runtime/Executor.h"
#include "runtime/Plan.h"
#include "runtime/RankBuffers.h"
#include "runtime/Status.h"
#include "runtime/cuda/GemmDesc.h"
#include "runtime/cuda/LaunchConfig.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace spmd {
namespace cuda {

/// A device address (CUdeviceptr on a GPU, a host address when emulated).
using DevicePtr = uint64_t;

/// How a plan kernel is launched and what it takes, as the code generator
/// printed it (targets/cuda/CudaEmitter.h, CudaKernel).
struct KernelSpec {
  std::string name;
  bool warpPerRow = false;
  /// work = workConstant * product of factors: (buffer argument, dim) sizes
  /// or (argument, -1) for an index argument's value.
  int64_t workConstant = 1;
  std::vector<std::pair<int64_t, int64_t>> workFactors;
  /// Per buffer argument: whether the kernel only reads it.
  std::vector<bool> readOnly;
  /// Per buffer argument: the dims passed after all arguments (the dynamic
  /// dims of the kernel's signature), in order.
  std::vector<std::vector<int64_t>> dynamicDims;
};

/// Grid and block of a kernel over `work` items on `smCount` SMs.
LaunchDims kernelLaunch(const KernelSpec &spec, int64_t work, int smCount);

enum class StreamId : uint8_t { Compute, Comm };
const char *streamName(StreamId id);

/// What one operation reads and writes, and what to call it in messages.
struct Access {
  DevicePtr begin = 0, end = 0;
  bool write = false;
};
struct OpInfo {
  std::string what; // "step 12 (kernel fused_3)"
  std::vector<Access> accesses;
};

/// One GPU as the executor sees it. Stream operations are enqueued (the
/// emulation runs them at once); upload and download are synchronous.
class DeviceBackend {
public:
  virtual ~DeviceBackend();
  /// "NVIDIA H100 80GB HBM3 (sm_90)", "emulated GPU (host)".
  virtual std::string describe() const = 0;
  virtual int smCount() const = 0;
  virtual Status allocate(size_t bytes, DevicePtr &ptr) = 0;
  virtual void release(DevicePtr ptr) = 0;
  virtual Status upload(DevicePtr dst, const void *src, size_t bytes) = 0;
  virtual Status download(void *dst, DevicePtr src, size_t bytes) = 0;

  /// Kernel `kernel` (an index into the schedule's kernels) with the
  /// cuLaunchKernel-style `params` (each points at one 8-byte value), on
  /// the compute stream.
  virtual Status launch(int64_t kernel, LaunchDims dims, void **params,
                        size_t numParams, const OpInfo &op) = 0;
  virtual Status gemm(const GemmDesc &desc, DevicePtr a, DevicePtr b,
                      DevicePtr c, const OpInfo &op) = 0;
  /// `height` rows of `width` bytes, `srcPitch` / `dstPitch` bytes apart.
  virtual Status copy2D(DevicePtr dst, size_t dstPitch, DevicePtr src,
                        size_t srcPitch, size_t width, size_t height,
                        const OpInfo &op) = 0;
  virtual Status zero(DevicePtr dst, size_t bytes, const OpInfo &op) = 0;
  /// Collective `step` (operand 0 in, operand 1 out) on the communication
  /// stream. `memberShapes`, when given, is every group member's input
  /// shape (group order), so the backend need not exchange them.
  virtual Status collective(const plan::Step &step, DevicePtr in,
                            const Shape &inShape, DevicePtr out,
                            const Shape &outShape,
                            const std::vector<Shape> *memberShapes,
                            const OpInfo &op) = 0;

  /// Events are numbered from 0; the backend creates them on first use.
  virtual Status record(StreamId stream, int64_t event) = 0;
  virtual Status wait(StreamId stream, int64_t event) = 0;
  /// Waits for both streams (and reports errors of enqueued work).
  virtual Status synchronize() = 0;

  /// Timelines: mark `mark` (numbered from 0 each run) recorded on
  /// `stream`; after synchronize, every mark's time (traceClockUs()
  /// microseconds). Backends that cannot time say so in canTime().
  virtual bool canTime() const { return false; }
  virtual Status timeMark(StreamId stream, int64_t mark) {
    return Status::error("this device cannot time its streams");
  }
  virtual Status markTimes(int64_t count, std::vector<double> &us) {
    return Status::error("this device cannot time its streams");
  }

  /// Graph capture of everything issued to both streams between
  /// beginCapture and endCapture; replay runs it again. Collectives can be
  /// captured only where they are enqueued without the host.
  virtual bool canCaptureCollectives() const { return false; }
  virtual Status beginCapture() {
    return Status::error("this device cannot capture graphs");
  }
  virtual Status endCapture() {
    return Status::error("this device cannot capture graphs");
  }
  virtual Status replay() {
    return Status::error("this device cannot capture graphs");
  }
};

/// How much compute a step issues while collectives are in flight: the
/// overlap the plan's order allows (what the GPU then achieves depends on
/// the kernels' sizes).
struct OverlapStats {
  int64_t collectives = 0;
  /// Collectives with at least one compute step issued behind them before
  /// the compute stream had to wait for them.
  int64_t overlapped = 0;
  int64_t computeSteps = 0;
  /// Compute steps issued while some collective was pending.
  int64_t computeWhilePending = 0;
};

struct DeviceExecutorOptions {
  bool allowTF32 = false;
  /// Capture the second run as a CUDA Graph and replay it afterwards.
  bool cudaGraph = false;
  /// Give collectives every member's shapes from the plan (when every
  /// rank's argument shapes are known) instead of their exchanging and
  /// verifying them; off for --verify-collectives.
  bool planShapes = true;
};

class DeviceExecutor {
public:
  /// `specs[i]` describes Schedule::kernels[i]. `device` is this rank's mesh
  /// device.
  DeviceExecutor(const plan::Schedule &schedule, std::vector<KernelSpec> specs,
                 DeviceBackend &backend, int64_t device,
                 DeviceExecutorOptions options = {});
  ~DeviceExecutor();

  /// Copies the arguments to the device (`hostArgs[i]`, of shape
  /// `shapes[i]`) and places every buffer. `allShapes[d]` are the argument
  /// shapes of mesh device d (for graph capture; may be empty otherwise).
  /// Returns an error message or "".
  std::string setArguments(const std::vector<const void *> &hostArgs,
                           const std::vector<Shape> &shapes,
                           const std::vector<std::vector<Shape>> &allShapes);
  /// Runs every step once and waits for it.
  std::string run();
  /// Result i becomes argument i, for i < count (on the device).
  std::string feedResults(size_t count);
  /// Result i's shape and bytes (downloaded).
  Shape resultShape(size_t i) const;
  std::string downloadResult(size_t i, std::vector<char> &bytes);
  /// Argument i's block replaced from / copied to the host (between runs).
  std::string uploadArgument(size_t i, const void *data);
  std::string downloadArgument(size_t i, std::vector<char> &bytes);
  /// Fault injection for tests: the next run fails before step `step`.
  void failBeforeStep(int64_t step) { failStep = step; }
  /// How the last run went: "executed", "captured" or "replayed".
  const char *lastRunMode() const { return mode; }
  /// Overlap of the last executed or captured run.
  const OverlapStats &overlap() const { return stats; }
  /// Appends a TraceEvent per step of every later executed run (a span
  /// on its stream, timed on the device) to `events`; false where the
  /// backend cannot time (replayed graphs are not traced).
  bool setTrace(std::vector<plan::TraceEvent> *events) {
    if (events && !backend.canTime())
      return false;
    trace = events;
    return true;
  }

private:
  DevicePtr address(const plan::BufferRef &ref) const;
  std::string issue(size_t index);
  std::string issueKernel(const plan::Step &step, const OpInfo &op);
  std::string issueGemm(const plan::Step &step, const OpInfo &op);
  std::string issueLocal(const plan::Step &step, const OpInfo &op);
  std::string issueCollective(size_t index, const OpInfo &op);
  /// Makes the compute stream wait for the pending collectives `op`
  /// touches.
  std::string computeWaitsFor(const OpInfo &op);
  std::string joinStreams();
  void release();

  const plan::Schedule &schedule;
  std::vector<KernelSpec> specs;
  DeviceBackend &backend;
  int64_t device;
  DeviceExecutorOptions options;

  plan::RankBuffers rank;
  std::vector<plan::RankBuffers> members; // every mesh device's, for graphs
  DevicePtr arena = 0, heap = 0;
  size_t heapCapacity = 0;
  std::vector<DevicePtr> args;
  std::vector<size_t> argBytes;

  /// Collectives issued and not yet waited for by the compute stream.
  struct Pending {
    int64_t event;
    std::vector<Access> accesses;
    int64_t computeBehind = 0;
  };
  /// Drops pending[0..end), counting the ones compute overlapped.
  void retire(size_t end);
  OverlapStats stats;
  std::vector<Pending> pending;
  bool computeSinceCollective = false;
  int64_t nextEvent = 0;
  int64_t runs = 0;
  int64_t failStep = -1;
  const char *mode = "executed";
  bool capture = false; // this run is being captured
  std::vector<plan::TraceEvent> *trace = nullptr;
};

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_DEVICEEXECUTOR_H
