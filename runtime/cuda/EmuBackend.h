//===- EmuBackend.h - A GPU emulated on the host ---------------*- C++ -*-===//
//
// The DeviceBackend that `spmd-run --backend cuda-emu` and the tests use on
// machines without a GPU: it runs the very CUDA source NVRTC compiles for
// the GPU, compiled as C++ against HostEmu.h (EmuModule), with the same
// parameter ABI and launch configurations; GEMMs go to the CPU's BLAS and
// collectives to a host communicator. Device memory is host memory.
//
// Operations run when they are issued, so the emulation alone cannot show
// a missing event between the two streams. It checks for one instead:
// every operation carries the byte ranges it reads and writes, events and
// waits carry vector clocks, and an operation that conflicts with one on
// the other stream that is not ordered before it by an event fails the
// run, naming both ("race on the emulated GPU: ..."). Graph capture records
// the operations (kernel parameters by value, as cuLaunchKernel copies
// them) and replay runs the record.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_EMUBACKEND_H
#define SPMD_RUNTIME_CUDA_EMUBACKEND_H

#include "runtime/Collectives.h"
#include "runtime/cuda/DeviceExecutor.h"

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace spmd {
namespace cuda {

/// An emulated kernel: cuLaunchKernel's parameters (each points at its
/// value); returns an error text, empty on success.
using EmuEntry = const char *(*)(unsigned grid, unsigned block, void **params);

/// CUDA C++ built as a shared object for the host emulation.
class EmuModule {
public:
  /// Compiles `source` (a translation unit over spmd_kernels.cuh that also
  /// defines the `spmdemu_<kernel>` entries) with the host compiler `cxx`
  /// in `workDir` (a new temporary directory when empty), against the
  /// headers of the source tree `sourceRoot`, and loads it.
  static Status build(const std::string &source, const std::string &cxx,
                      const std::string &sourceRoot, const std::string &workDir,
                      std::unique_ptr<EmuModule> &module);
  ~EmuModule();
  /// The entry `spmdemu_<kernel>`.
  Status entry(const std::string &kernel, EmuEntry &fn) const;
  const std::string &path() const { return so; }

private:
  EmuModule() = default;
  void *handle = nullptr;
  std::string so;
};

class EmuBackend final : public DeviceBackend {
public:
  /// `kernels[i]` runs the schedule's kernel i; `comm` (may be null when
  /// the schedule has no collective) takes host pointers.
  EmuBackend(std::vector<EmuEntry> kernels, plan::Collectives *comm,
             int smCount = 2);
  ~EmuBackend() override;

  std::string describe() const override { return "emulated GPU (host)"; }
  int smCount() const override { return sms; }
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
  /// The emulation runs an operation when it is issued: a mark's time is
  /// the host clock's then.
  bool canTime() const override { return true; }
  Status timeMark(StreamId stream, int64_t mark) override;
  Status markTimes(int64_t count, std::vector<double> &us) override;
  Status wait(StreamId stream, int64_t event) override;
  Status synchronize() override;
  bool canCaptureCollectives() const override { return true; }
  Status beginCapture() override;
  Status endCapture() override;
  Status replay() override;

  /// How many operations ran (replays included), for tests.
  int64_t operationsRun() const { return executed; }
  /// Tests: appends one line per operation, event record and wait
  /// ("compute: step 3 (copy)", "comm records e1", "compute waits e1").
  void setTrace(std::vector<std::string> *lines) { trace = lines; }

private:
  std::vector<double> marks; // timeMark's host times
  /// Checks `op` on `stream` against the unordered operations of the other
  /// stream, then runs `body` now or, while capturing, records it.
  Status issue(StreamId stream, const OpInfo &op, std::function<Status()> body);

  std::vector<EmuEntry> kernels;
  plan::Collectives *comm;
  int sms;
  std::map<DevicePtr, void *> allocations;

  // Vector clocks: clocks[s][t] is how far stream s has seen stream t.
  int64_t clocks[2][2] = {{0, 0}, {0, 0}};
  struct EventState {
    std::array<int64_t, 2> clock{0, 0};
    bool inCapture = false; // recorded on the compute stream while capturing
  };
  std::vector<EventState> events;
  struct Issued {
    StreamId stream;
    int64_t seq;
    OpInfo op;
  };
  std::vector<Issued> history; // since the last synchronize

  bool capturing = false;
  bool commJoined = false; // the comm stream waited on a captured event
  std::vector<std::function<Status()>> graph;
  int64_t executed = 0;
  std::vector<std::string> *trace = nullptr;
};

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_EMUBACKEND_H
