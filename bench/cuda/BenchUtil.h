//===- BenchUtil.h - Shared bits of the CUDA benchmarks --------*- C++ -*-===//

#ifndef SPMD_BENCH_CUDA_BENCHUTIL_H
#define SPMD_BENCH_CUDA_BENCHUTIL_H

#include "runtime/cuda/CudaRuntime.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace spmd {
namespace cuda {
namespace bench {

inline void orDie(const Status &s, const char *what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

/// Average milliseconds of `body` (which enqueues on `stream`) over `iters`
/// runs after `warmup` runs, timed with events.
inline double timeMs(const Device &dev, const Stream &stream,
                     const std::function<void()> &body, int warmup = 5,
                     int iters = 20) {
  std::unique_ptr<Event> start, stop;
  orDie(Event::create(dev, true, start), "event");
  orDie(Event::create(dev, true, stop), "event");
  for (int i = 0; i < warmup; ++i)
    body();
  orDie(start->record(stream), "record");
  for (int i = 0; i < iters; ++i)
    body();
  orDie(stop->record(stream), "record");
  orDie(stop->synchronize(), "sync");
  float ms = 0;
  orDie(stop->elapsedSince(*start, ms), "elapsed");
  return ms / iters;
}

/// Theoretical DRAM bandwidth from the device attributes (GB/s).
inline double peakBandwidthGBs(const Device &dev) {
  int clockKHz = 0, busBits = 0;
  CUdevice d;
  dev.api().cuDeviceGet(&d, dev.ordinal());
  dev.api().cuDeviceGetAttribute(&clockKHz,
                                 CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, d);
  dev.api().cuDeviceGetAttribute(
      &busBits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, d);
  return 2.0 * clockKHz * 1e3 * (busBits / 8.0) / 1e9;
}

} // namespace bench
} // namespace cuda
} // namespace spmd

#endif // SPMD_BENCH_CUDA_BENCHUTIL_H
