//===- kernel_bench.cpp - Fused kernels against the bandwidth bound -------===//
//
// Times every reference kernel (the library's kernel kinds) on GPU 0 and
// compares the bytes it must move with the device-to-device copy bandwidth
// measured in the same run (the achievable bound) and the theoretical peak.
//
//   spmd-cuda-kernel-bench [rows cols]     (default 16384 x 4096)
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "runtime/cuda/KernelSources.h"
#include "targets/cuda/Nvrtc.h"

#include <vector>

using namespace spmd;
using namespace spmd::cuda;
using namespace spmd::cuda::bench;

int main(int argc, char **argv) {
  long long rows = argc > 2 ? std::atoll(argv[1]) : 16384;
  long long cols = argc > 2 ? std::atoll(argv[2]) : 4096;
  std::unique_ptr<Device> dev;
  orDie(Device::open(0, dev), "device");
  std::unique_ptr<Stream> stream;
  orDie(Stream::create(*dev, stream), "stream");
  CompileOptions opts;
  CompiledModule compiled;
  orDie(compileModule("reference_kernels.cu", referenceKernelsSource(), opts,
                      compiled),
        "nvrtc");
  std::unique_ptr<Module> mod;
  orDie(Module::load(*dev, compiled, nvrtcRecompiler(opts), mod), "module");

  const long long n = rows * cols;
  // Buffers big enough for f32; every kernel uses a prefix of them.
  size_t big = n * 4;
  std::unique_ptr<DeviceArena> arena;
  size_t off[8], total = 0;
  size_t sizes[8] = {big,
                     big,
                     big,
                     big,
                     size_t(cols) * 4,
                     size_t(cols) * 4,
                     size_t(rows) * 8,
                     size_t(rows) * 8};
  for (int i = 0; i < 8; ++i) {
    off[i] = total;
    total = DeviceArena::align(total + sizes[i]);
  }
  orDie(DeviceArena::create(*dev, total, arena), "arena");
  CUdeviceptr x = arena->base() + off[0], y = arena->base() + off[1],
              dy = arena->base() + off[2], dx = arena->base() + off[3],
              g = arena->base() + off[4], b = arena->base() + off[5],
              mean = arena->base() + off[6], rstd = arena->base() + off[7];
  dev->api().cuMemsetD8Async(arena->base(), 0, total, stream->get());
  // Targets: zeros are valid class indices.
  CUdeviceptr target = mean, loss = rstd, lossTotal = rstd;

  double copyMs = timeMs(*dev, *stream, [&] {
    dev->api().cuMemcpyDtoDAsync(y, x, big, stream->get());
  });
  double copyGBs = 2.0 * big / (copyMs * 1e-3) / 1e9;
  double peak = peakBandwidthGBs(*dev);
  std::printf("# %s (sm_%d, %d SMs); %lld x %lld\n", dev->name().c_str(),
              dev->arch(), dev->smCount(), rows, cols);
  std::printf("# device copy %.0f GB/s (read+write), theoretical peak %.0f "
              "GB/s\n",
              copyGBs, peak);
  std::printf("%-32s %10s %10s %8s %8s\n", "kernel", "time_us", "GB/s", "%copy",
              "%peak");

  float eps = 1e-5f, scale = 1.0f / rows;
  for (const char *t : {"f32", "bf16"}) {
    size_t es = std::string(t) == "f32" ? 4 : 2;
    struct Case {
      std::string kernel;
      std::vector<void *> args;
      LaunchDims dims;
      double bytes;
    };
    std::vector<Case> cases = {
        {"spmd_affine_gelu_",
         {&x, &g, &b, &y, &rows, &cols},
         elementwiseLaunch(n, dev->smCount()),
         2.0 * n * es},
        {"spmd_softmax_fwd_",
         {&x, &y, &rows, &cols},
         rowLaunch(rows, cols),
         2.0 * n * es},
        {"spmd_softmax_bwd_",
         {&y, &dy, &dx, &rows, &cols},
         rowLaunch(rows, cols),
         3.0 * n * es},
        {"spmd_layer_norm_fwd_",
         {&x, &g, &b, &y, &mean, &rstd, &rows, &cols, &eps},
         rowLaunch(rows, cols),
         2.0 * n * es},
        {"spmd_layer_norm_bwd_input_",
         {&x, &dy, &g, &mean, &rstd, &dx, &rows, &cols},
         rowLaunch(rows, cols),
         3.0 * n * es},
        {"spmd_layer_norm_bwd_params_",
         {&x, &dy, &mean, &rstd, &g, &b, &rows, &cols},
         elementwiseLaunch(cols, dev->smCount()),
         2.0 * n * es},
        {"spmd_layer_norm_bwd_params_partial_",
         {&x, &dy, &mean, &rstd, &dx, &y, &rows, &cols},
         columnPartialLaunch(rows, cols, dev->smCount()),
         2.0 * n * es},
        {"spmd_rms_norm_fwd_",
         {&x, &g, &y, &rstd, &rows, &cols, &eps},
         rowLaunch(rows, cols),
         2.0 * n * es},
        {"spmd_cross_entropy_fwd_",
         {&x, &target, &loss, &lossTotal, &y, &rows, &cols, &scale},
         rowLaunch(rows, cols),
         2.0 * n * es},
    };
    if (es == 4)
      cases.push_back({"spmd_affine_gelu_f32_vec4",
                       {&x, &g, &b, &y, &rows, &cols},
                       elementwiseLaunch(n / 4, dev->smCount()),
                       2.0 * n * es});
    for (Case &c : cases) {
      std::string name =
          c.kernel.back() == '_' ? c.kernel + t : c.kernel; // vec4 is named
      CUfunction fn;
      orDie(mod->function(name, fn), name.c_str());
      double ms = timeMs(*dev, *stream, [&] {
        orDie(launch(*dev, fn, c.dims, *stream, c.args.data()), name.c_str());
      });
      double gbs = c.bytes / (ms * 1e-3) / 1e9;
      std::printf("%-32s %10.1f %10.0f %7.0f%% %7.0f%%\n", name.c_str(),
                  ms * 1e3, gbs, 100 * gbs / copyGBs, 100 * gbs / peak);
    }
  }
  return 0;
}
