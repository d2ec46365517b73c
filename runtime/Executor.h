//===- Executor.h - Runs a plan schedule for one rank -----------*- C++ -*-===//
//
// Runs the steps of a Schedule in order on one rank: kernels are native
// functions (the MLIR ExecutionEngine's packed C interface: one void* per
// argument, each pointing at a pointer to a memref descriptor), GEMMs go to
// BLAS (f16/bf16 computed in f32), collectives to a Collectives, copies to
// memcpy. The arena is allocated once and reused across runs; buffers with
// rank-dependent dims are sized at the start of each run from the rank's
// argument shapes and mesh coordinates (Schedule::sizes).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_EXECUTOR_H
#define SPMD_RUNTIME_EXECUTOR_H

#include "runtime/Collectives.h"
#include "runtime/Plan.h"
#include "runtime/RankBuffers.h"

#include <memory>

namespace spmd::plan {

class Workers;

/// One executed step, for timelines (spmd-run --trace / --profile).
struct TraceEvent {
  int64_t step = 0;
  StepKind kind = StepKind::Kernel;
  std::string name;   // the kernel's name, "gemm", or the collective's kind
  std::string detail; // gemm "m=.. n=.. k=..", collective "[axes] N bytes"
  double startUs = 0, durationUs = 0; // on traceClockUs()
  int stream = 0; // the GPU executor's: 0 compute, 1 communication
};

/// Step `index`'s name and detail (GEMM m/n/k, collective axes and bytes)
/// on the rank whose sizes `rank` holds, for a TraceEvent.
TraceEvent describeStep(const Schedule &schedule, const RankBuffers &rank,
                        size_t index);

/// Microseconds since this process first asked: one clock for every rank
/// (thread) of the process, so their timelines line up.
double traceClockUs();

/// A kernel entry point: `args[i]` points at a pointer to argument i's
/// memref descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}.
using KernelFn = void (*)(void **args);

class Executor {
public:
  /// `kernels[i]` runs Schedule::kernels[i]. `comm` may be null when the
  /// schedule has no collective.
  Executor(const Schedule &schedule, std::vector<KernelFn> kernels,
           Collectives *comm);
  ~Executor();

  /// Runs every step once. `args[i]` holds argument i's local block (it may
  /// be written: a step may update an argument in place) of shape
  /// `argShapes[i]` (may be omitted when no argument has a dynamic dim).
  /// Returns an error message naming the step, or "".
  std::string run(const std::vector<void *> &args,
                  const std::vector<Shape> &argShapes = {});
  /// Result i's data and shape after run() (in the arena, a heap buffer or
  /// an argument).
  const void *result(size_t i, const std::vector<void *> &args) const;
  Shape resultShape(size_t i) const {
    return rank.resolve(schedule.resultRefs[i]);
  }
  /// Fault injection for tests: the next run fails before step `step`.
  void failBeforeStep(int64_t step) { failStep = step; }
  /// Appends a TraceEvent per step of every later run to `events` (null:
  /// no tracing, no clock reads).
  void setTrace(std::vector<TraceEvent> *events) { trace = events; }

private:
  void *address(const BufferRef &ref, const std::vector<void *> &args) const;
  std::string runStep(size_t index, const std::vector<void *> &args);
  /// Builds the memref descriptors of every kernel call once per run.
  void prepareKernelCalls(const std::vector<void *> &args);
  struct KernelCall;
  /// Whether kernel `kernel` takes a range of its outermost loop.
  bool isSplit(int64_t kernel) const;
  /// Runs a kernel step, in pieces on the rank's threads when it splits.
  void runKernel(const Step &step, KernelCall &call);

  const Schedule &schedule;
  std::vector<KernelFn> kernels;
  Collectives *comm;
  void *arena = nullptr;
  RankBuffers rank; // this run's sizes and Heap buffer offsets
  /// Runtime-sized buffers: one region, offsets by liveness (per run).
  std::vector<char> dynamicArena;
  struct KernelCall {
    std::vector<std::vector<int64_t>> descriptors;
    std::vector<void *> pointers, packed;
    int64_t range[2] = {0, 0}; // a split kernel's [lb, ub): all of it
  };
  std::vector<KernelCall> calls; // by step index
  int64_t failStep = -1;
  std::vector<TraceEvent> *trace = nullptr;
  /// This rank's helper threads (rankThreads() > 1), for GEMMs and kernels.
  std::unique_ptr<Workers> workers;
};

/// C += / = op(A) op(B) through BLAS on row-major blocks of the given shapes
/// (see Step); the second form takes the shapes from the step. `workers`
/// (may be null) split it: batch members or blocks of C.
std::string runGemm(const Step &step, const Shape &as, const Shape &bs,
                    const Shape &cs, const void *a, const void *b, void *c,
                    Workers *workers = nullptr);
std::string runGemm(const Step &step, const void *a, const void *b, void *c,
                    Workers *workers = nullptr);

} // namespace spmd::plan

#endif // SPMD_RUNTIME_EXECUTOR_H
