//===- gemm_bench.cpp - cuBLASLt GEMM throughput
//---------------------------===//
//
//   spmd-cuda-gemm-bench [m n k]   (default: a sweep of square and
//                                   transformer-shaped GEMMs)
//
// TFLOP/s = 2 m n k / time, per element type (f32, f32 with TF32, bf16,
// f16), through GemmRunner exactly as a plan calls it.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "runtime/cuda/Gemm.h"

#include <array>
#include <vector>

using namespace spmd;
using namespace spmd::cuda;
using namespace spmd::cuda::bench;

int main(int argc, char **argv) {
  std::vector<std::array<int64_t, 3>> shapes;
  if (argc > 3)
    shapes.push_back(
        {std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3])});
  else
    shapes = {{1024, 1024, 1024},  {4096, 4096, 4096},   {8192, 8192, 8192},
              {16384, 4096, 4096}, {16384, 16384, 4096}, {16384, 4096, 16384}};
  std::unique_ptr<Device> dev;
  orDie(Device::open(0, dev), "device");
  std::unique_ptr<Stream> stream;
  orDie(Stream::create(*dev, stream), "stream");
  std::unique_ptr<GemmRunner> gemm;
  orDie(GemmRunner::create(*dev, 64 << 20, gemm), "cublasLt");
  std::printf("# %s (sm_%d)\n%-8s %-22s %10s %10s\n", dev->name().c_str(),
              dev->arch(), "type", "m x n x k", "time_ms", "TFLOP/s");
  for (auto [m, n, k] : shapes) {
    size_t maxBytes = 4 * std::max({m * k, k * n, m * n});
    std::unique_ptr<DeviceArena> arena;
    orDie(DeviceArena::create(*dev, 3 * DeviceArena::align(maxBytes), arena),
          "arena");
    dev->api().cuMemsetD8Async(arena->base(), 0, arena->size(), stream->get());
    CUdeviceptr a = arena->base(), b = a + DeviceArena::align(maxBytes),
                c = b + DeviceArena::align(maxBytes);
    struct Variant {
      const char *name;
      DType t;
      bool tf32;
    };
    for (Variant v :
         {Variant{"f32", DType::F32, false}, Variant{"tf32", DType::F32, true},
          Variant{"bf16", DType::BF16, false},
          Variant{"f16", DType::F16, false}}) {
      GemmDesc d;
      d.dtype = v.t;
      d.allowTF32 = v.tf32;
      d.m = m, d.n = n, d.k = k;
      d.transB = true; // a linear layer: x @ W^T
      double ms = timeMs(*dev, *stream, [&] {
        orDie(gemm->run(d, a, b, c, 0, *stream), "gemm");
      });
      char shape[64];
      std::snprintf(shape, sizeof shape, "%lld x %lld x %lld", (long long)m,
                    (long long)n, (long long)k);
      std::printf("%-8s %-22s %10.3f %10.1f\n", v.name, shape, ms,
                  2.0 * m * n * k / (ms * 1e-3) / 1e12);
    }
  }
  return 0;
}
