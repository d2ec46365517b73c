//===- KernelCheck.cpp - A plan's CUDA kernels checked --------------------===//

#include "targets/cuda/KernelCheck.h"

#include "runtime/DType.h"
#include "runtime/Plan.h"
#include "runtime/cuda/EmuBackend.h"
#include "runtime/cuda/LaunchConfig.h"
#include "targets/cpu/CpuJit.h"
#include "targets/plan/PlanLoader.h"

#ifdef SPMD_HAVE_NVRTC
#include "targets/cuda/Nvrtc.h"
#endif
#ifdef SPMD_HAVE_CUDA_RUNTIME
#include "runtime/cuda/CudaRuntime.h"
#endif

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

using namespace mlir;
using namespace spmd;

namespace {

struct Buffer {
  Type elem;
  Shape shape;
  DType dtype;
  unsigned offset = 0;     // past the 16-byte boundary
  std::vector<char> bytes; // data() is 16-byte aligned plus `offset`
  char *data() {
    auto p = reinterpret_cast<uintptr_t>(bytes.data());
    return bytes.data() + ((16 - p % 16) % 16) + offset;
  }
  const char *data() const { return const_cast<Buffer *>(this)->data(); }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// Element i as a double (integers exactly up to 2^53).
double element(const Buffer &b, int64_t i) {
  return loadAsDouble(b.data(), b.dtype, i);
}

/// Tolerance for comparing the emulated and the CPU kernel: rounding order
/// differs in reductions (and 16-bit types are computed in f32 here).
double tolerance(Type t) {
  if (t.isF16())
    return 1e-2;
  if (t.isBF16())
    return 2e-2;
  if (t.isF32())
    return 1e-4;
  if (t.isF64())
    return 1e-10;
  return 0;
}

void fill(Buffer &b, std::mt19937_64 &rng) {
  int64_t n = b.count();
  size_t width = dtypeSize(b.dtype);
  b.bytes.assign(static_cast<size_t>(n) * width + 32, 0);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> small(0, 3);
  for (int64_t i = 0; i < n; ++i) {
    double v = isa<FloatType>(b.elem) ? real(rng)
               : b.elem.isInteger(1)  ? small(rng) & 1
                                      : small(rng);
    storeFromDouble(b.data(), b.dtype, i, v);
  }
}

/// Whether every memref argument of `got` matches `want` within the
/// element type's tolerance; the largest error in `maxErr`.
bool compare(func::FuncOp func, const std::vector<Buffer> &want,
             const std::vector<Buffer> &got, double &maxErr) {
  bool ok = true;
  maxErr = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!isa<MemRefType>(func.getArgumentTypes()[i]))
      continue;
    double tol = tolerance(want[i].elem);
    for (int64_t e = 0; e < want[i].count(); ++e) {
      double w = element(want[i], e), g = element(got[i], e);
      if (std::isnan(w) && std::isnan(g))
        continue;
      double err = std::fabs(w - g);
      if (std::isinf(w) && w == g)
        err = 0;
      maxErr = std::max(maxErr, err);
      if (!(err <= tol * (1.0 + std::fabs(w))))
        ok = false;
    }
  }
  return ok;
}

/// The launch rule the emitter recorded (targets/cuda/CudaEmitter.h), as the
/// GPU executor applies it.
cuda::LaunchDims launchDims(const cudagen::CudaKernel &k, int64_t work,
                            int smCount) {
  cuda::KernelSpec spec;
  spec.warpPerRow = k.launch == cudagen::CudaLaunchKind::WarpPerRow;
  return cuda::kernelLaunch(spec, work, smCount);
}

#ifdef SPMD_HAVE_CUDA_RUNTIME
/// Milliseconds per call of `body` (enqueued on `stream`), events-timed.
float timeLaunches(const cuda::Device &dev, const cuda::Stream &stream,
                   int iters, const std::function<void()> &body) {
  std::unique_ptr<cuda::Event> start, stop;
  if (!cuda::Event::create(dev, true, start).ok() ||
      !cuda::Event::create(dev, true, stop).ok())
    return 0;
  body(); // warm-up
  (void)start->record(stream);
  for (int i = 0; i < iters; ++i)
    body();
  (void)stop->record(stream);
  (void)stop->synchronize();
  float ms = 0;
  (void)stop->elapsedSince(*start, ms);
  return ms / std::max(iters, 1);
}

/// Runs kernel `k` on the GPU over `bufs` (uploaded; downloaded back when
/// `iters` is 0, else timed over `iters` launches: `ms` per launch and the
/// `bytes` of its buffers).
bool gpuRun(const cuda::Device &dev, const cuda::Stream &stream,
            cuda::Module &module, const cudagen::CudaKernel &k,
            std::vector<Buffer> &bufs, std::vector<int64_t> &scalars,
            int64_t work, int iters, float &ms, int64_t &bytes,
            std::string &error) {
  auto check = [&](const Status &s) {
    if (!s.ok())
      error = s.message();
    return s.ok();
  };
  CUfunction fn;
  if (!check(module.function(k.name, fn)))
    return false;
  std::vector<size_t> offsets(bufs.size(), 0), sizes(bufs.size(), 0);
  size_t total = 0;
  bytes = 0;
  for (size_t i = 0; i < bufs.size(); ++i) {
    if (bufs[i].bytes.empty())
      continue;
    sizes[i] = bufs[i].count() * dtypeSize(bufs[i].dtype);
    offsets[i] = cuda::DeviceArena::align(total);
    total = offsets[i] + sizes[i];
    bytes += sizes[i];
  }
  std::unique_ptr<cuda::DeviceArena> arena;
  if (!check(
          cuda::DeviceArena::create(dev, std::max<size_t>(total, 256), arena)))
    return false;
  for (size_t i = 0; i < bufs.size(); ++i)
    if (sizes[i] &&
        !check(cuda::check(dev.api(),
                           dev.api().cuMemcpyHtoD(arena->base() + offsets[i],
                                                  bufs[i].data(), sizes[i]),
                           "cuMemcpyHtoD")))
      return false;
  std::vector<CUdeviceptr> ptrs(bufs.size(), 0);
  std::vector<int64_t> dims;
  dims.reserve(k.params.size());
  std::vector<void *> args;
  for (const auto &p : k.params) {
    if (p.kind == cudagen::CudaParam::Buffer) {
      ptrs[p.arg] = arena->base() + offsets[p.arg];
      args.push_back(&ptrs[p.arg]);
    } else if (p.kind == cudagen::CudaParam::Scalar) {
      args.push_back(&scalars[p.arg]);
    } else {
      dims.push_back(bufs[p.arg].shape[p.dim]);
      args.push_back(&dims.back());
    }
  }
  cuda::LaunchDims d = launchDims(k, work, dev.smCount());
  if (iters > 0) {
    Status last = Status::success();
    ms = timeLaunches(dev, stream, iters, [&] {
      last = cuda::launch(dev, fn, d, stream, args.data());
    });
    return check(last);
  }
  if (!check(cuda::launch(dev, fn, d, stream, args.data())) ||
      !check(stream.synchronize()))
    return false;
  for (size_t i = 0; i < bufs.size(); ++i)
    if (sizes[i] &&
        !check(cuda::check(dev.api(),
                           dev.api().cuMemcpyDtoH(bufs[i].data(),
                                                  arena->base() + offsets[i],
                                                  sizes[i]),
                           "cuMemcpyDtoH")))
      return false;
  return true;
}
#endif

} // namespace

Status
spmd::checkEmbeddedModule(ModuleOp plan, const std::string &unit,
                          const std::vector<cudagen::CudaKernel> &kernels,
                          llvm::raw_ostream &os, int &failures) {
  auto embedded = plan->getAttrOfType<StringAttr>(cudagen::kCudaModuleAttrName);
  if (!embedded)
    return Status::success();
#ifdef SPMD_HAVE_NVRTC
  cuda::CompiledModule m;
  Status status = cuda::deserializeModule(embedded.getValue().str(), m);
  if (!status.ok())
    return Status::error("embedded module: " + status.message());
  bool same = m.source == unit;
  os << "embedded: source " << (same ? "matches" : "DIFFERS FROM")
     << " the printed kernels";
  failures += same ? 0 : 1;
  for (const auto &[arch, cubin] : m.cubins) {
    int got = 0;
    bool ok = cuda::cubinArch(cubin, got).ok() && got == arch;
    for (const auto &k : kernels)
      ok = ok && cubin.find(k.name + '\0') != std::string::npos;
    os << ", sm_" << arch << (ok ? "" : " BAD");
    failures += ok ? 0 : 1;
  }
  if (m.ptxArch)
    os << ", ptx compute_" << m.ptxArch;
  os << "\n";
  return Status::success();
#else
  return Status::error(
      "the plan embeds a CUDA module; this build has no NVRTC");
#endif
}

Status spmd::checkNvrtc(const std::string &name, const std::string &unit,
                        const std::vector<cudagen::CudaKernel> &kernels,
                        const std::vector<int> &archs, llvm::raw_ostream &os,
                        int &failures) {
#ifdef SPMD_HAVE_NVRTC
  cuda::CompileOptions options;
  if (!archs.empty())
    options.archs = archs;
  cuda::CompiledModule compiled;
  Status status = cuda::compileModule(name, unit, options, compiled);
  if (!status.ok())
    return status;
  for (int arch : options.archs) {
    auto it = compiled.cubins.find(arch);
    int got = 0;
    if (it == compiled.cubins.end() || !cuda::cubinArch(it->second, got).ok() ||
        got != arch) {
      os << "nvrtc sm_" << arch << ": no cubin for the arch\n";
      ++failures;
      continue;
    }
    // Every extern "C" entry point is a symbol of the cubin.
    int missing = 0;
    for (const auto &k : kernels)
      if (it->second.find(k.name + '\0') == std::string::npos)
        ++missing;
    os << "nvrtc sm_" << arch << ": " << it->second.size() << " bytes, "
       << kernels.size() - missing << "/" << kernels.size() << " kernels\n";
    failures += missing;
  }
  return Status::success();
#else
  return Status::error("--nvrtc: this build has no CUDA toolkit");
#endif
}

Status spmd::checkKernelRuns(ModuleOp plan, const std::string &unit,
                             const std::vector<cudagen::CudaKernel> &kernels,
                             const KernelRunOptions &options,
                             llvm::raw_ostream &os, int &failures) {
  if ((!options.emulate && !options.gpu) || kernels.empty())
    return Status::success();
  std::unique_ptr<cuda::EmuModule> emuModule;
  if (options.emulate) {
    // The shared object: the unit, plus one entry per kernel.
    std::string source = unit;
    for (const auto &k : kernels)
      source += cudagen::cudaEmulationEntry(k);
    if (Status s = cuda::EmuModule::build(source, options.cxx, SPMD_SOURCE_DIR,
                                          options.workDir, emuModule);
        !s.ok())
      return s;
  }

  // The CPU backend's kernels.
  plan::Schedule schedule;
  for (const auto &k : kernels)
    schedule.kernels.push_back(k.name);
  CompiledKernels cpu;
  std::string error;
  if (failed(compileKernels(plan, schedule, cpu, error)))
    return Status::error(error);

#ifdef SPMD_HAVE_CUDA_RUNTIME
  // --gpu: the same source through NVRTC onto GPU 0.
  std::unique_ptr<cuda::Device> gpu;
  std::unique_ptr<cuda::Stream> gpuStream;
  std::unique_ptr<cuda::Module> gpuModule;
  double copyGBs = 0;
  if (options.gpu) {
    cuda::CompileOptions compileOptions;
    cuda::CompiledModule compiled;
    Status status;
    if (!(status = cuda::Device::open(0, gpu)).ok() ||
        !(status = cuda::Stream::create(*gpu, gpuStream)).ok() ||
        !(status =
              cuda::compileModule("kernels.cu", unit, compileOptions, compiled))
             .ok() ||
        !(status = cuda::Module::load(
              *gpu, compiled, cuda::nvrtcRecompiler(compileOptions), gpuModule))
             .ok())
      return Status::error("--gpu: " + status.message());
    os << "gpu: " << gpu->name() << ", sm_" << gpu->arch() << ", "
       << gpuModule->imageSource() << "\n";
    if (options.benchIters > 0) {
      // The achievable bound: a device-to-device copy of 256 MiB.
      size_t big = size_t(256) << 20;
      std::unique_ptr<cuda::DeviceArena> arena;
      if (!(status = cuda::DeviceArena::create(*gpu, 2 * big, arena)).ok())
        return Status::error("--gpu: " + status.message());
      float ms = timeLaunches(*gpu, *gpuStream, options.benchIters, [&] {
        gpu->api().cuMemcpyDtoDAsync(arena->base() + big, arena->base(), big,
                                     gpuStream->get());
      });
      copyGBs = 2.0 * big / (ms * 1e-3) / 1e9;
      os << "gpu: device copy " << llvm::format("%.0f", copyGBs) << " GB/s\n";
    }
  }
#else
  if (options.gpu)
    return Status::error("--gpu: this build has no CUDA runtime");
#endif

  std::mt19937_64 rng(options.seed);
  for (auto [ki, k] : llvm::enumerate(kernels)) {
    auto func = plan.lookupSymbol<func::FuncOp>(k.name);
    std::vector<Buffer> buffers;
    std::vector<int64_t> scalars(func.getNumArguments(), options.indexValue);
    for (Type t : func.getArgumentTypes()) {
      Buffer b;
      b.offset = options.offsetBytes;
      if (auto m = dyn_cast<MemRefType>(t)) {
        b.elem = m.getElementType();
        std::optional<DType> d = dtypeOfElementType(b.elem);
        if (!d)
          return Status::error("kernel " + k.name +
                               ": element type not supported");
        b.dtype = *d;
        for (int64_t s : m.getShape())
          b.shape.push_back(ShapedType::isDynamic(s) ? options.dimSize : s);
        fill(b, rng);
      }
      buffers.push_back(std::move(b));
    }
    // The same values at the same alignment (vector copies realign).
    std::vector<Buffer> emu = buffers, onGpu = buffers;
    for (size_t i = 0; i < emu.size(); ++i)
      if (!emu[i].bytes.empty()) {
        size_t n = emu[i].count() * dtypeSize(emu[i].dtype);
        std::memmove(emu[i].data(), buffers[i].data(), n);
        std::memmove(onGpu[i].data(), buffers[i].data(), n);
      }

    // CPU: C interface, one descriptor per memref.
    std::vector<std::vector<int64_t>> descriptors(buffers.size());
    std::vector<void *> pointers(buffers.size()), packed(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (!isa<MemRefType>(func.getArgumentTypes()[i])) {
        packed[i] = &scalars[i];
        continue;
      }
      const auto &shape = buffers[i].shape;
      size_t rank = shape.size();
      auto &w = descriptors[i];
      w.assign(3 + 2 * rank, 0);
      w[0] = w[1] = reinterpret_cast<int64_t>(buffers[i].data());
      int64_t stride = 1;
      for (size_t d = rank; d-- > 0;) {
        w[3 + d] = shape[d];
        w[3 + rank + d] = stride;
        stride *= shape[d];
      }
      pointers[i] = w.data();
      packed[i] = &pointers[i];
    }
    // A kernel split for a rank's threads takes its loop range: all of it.
    int64_t range[2] = {0, cpu.splits[ki].extent};
    if (range[1]) {
      packed.push_back(&range[0]);
      packed.push_back(&range[1]);
    }
    cpu.functions[ki](packed.data());

    // Emulation: the printed parameters, as cuLaunchKernel takes them
    // (each points at its value).
    std::vector<void *> params, addresses;
    std::vector<int64_t> dims;
    dims.reserve(k.params.size());
    addresses.reserve(k.params.size());
    for (const auto &p : k.params) {
      if (p.kind == cudagen::CudaParam::Buffer) {
        addresses.push_back(emu[p.arg].data());
        params.push_back(&addresses.back());
      } else if (p.kind == cudagen::CudaParam::Scalar) {
        params.push_back(&scalars[p.arg]);
      } else {
        dims.push_back(emu[p.arg].shape[p.dim]);
        params.push_back(&dims.back());
      }
    }
    int64_t work = k.workConstant;
    for (auto [arg, dim] : k.workFactors)
      work *= dim < 0 ? scalars[arg] : emu[arg].shape[dim];
    // Small blocks and grids: the grid-stride loops wrap around.
    unsigned block = 64, grid = 0;
    int64_t perBlock = k.launch == cudagen::CudaLaunchKind::WarpPerRow ? 2 : 64;
    if (work > 0)
      grid = static_cast<unsigned>(
          std::min<int64_t>((work + perBlock - 1) / perBlock, 3));
    double maxErr = 0;
    bool ok = true;
    int64_t elements = 0;
    if (options.emulate) {
      cuda::EmuEntry entry = nullptr;
      if (Status s = emuModule->entry(k.name, entry); !s.ok())
        return s;
      if (grid > 0) {
        const char *err = entry(grid, block, params.data());
        if (err && *err) {
          os << "kernel " << k.name << ": emulation error: " << err << "\n";
          ++failures;
          continue;
        }
      }
      if (k.name == options.breakKernel) {
        // The first buffer the kernel writes (not a const parameter).
        for (const auto &p : k.params)
          if (p.kind == cudagen::CudaParam::Buffer &&
              !llvm::StringRef(p.cType).starts_with("const ") &&
              emu[p.arg].count() > 0) {
            storeFromDouble(emu[p.arg].data(), emu[p.arg].dtype, 0,
                            element(emu[p.arg], 0) + 1.0);
            break;
          }
      }

      // Every buffer (inputs must stay, outputs must match).
      ok = compare(func, buffers, emu, maxErr);
      for (size_t i = 0; i < buffers.size(); ++i)
        if (isa<MemRefType>(func.getArgumentTypes()[i]))
          elements += buffers[i].count();
    }
#ifdef SPMD_HAVE_CUDA_RUNTIME
    if (gpu) {
      std::string gpuError;
      float unusedMs = 0;
      int64_t unusedBytes = 0;
      if (!gpuRun(*gpu, *gpuStream, *gpuModule, k, onGpu, scalars, work, 0,
                  unusedMs, unusedBytes, gpuError))
        os << "gpu kernel " << k.name << ": " << gpuError << "\n";
      double gpuErr = 0;
      bool gpuOk = gpuError.empty() && compare(func, buffers, onGpu, gpuErr);
      os << "gpu kernel " << k.name << ": max abs err " << gpuErr
         << (gpuOk ? " ok" : " MISMATCH") << "\n";
      failures += gpuOk ? 0 : 1;
      if (gpuOk && options.benchIters > 0) {
        float ms = 0;
        int64_t bytes = 0;
        std::string benchError;
        if (gpuRun(*gpu, *gpuStream, *gpuModule, k, onGpu, scalars, work,
                   options.benchIters, ms, bytes, benchError)) {
          double gbs = bytes / (ms * 1e-3) / 1e9;
          os << "gpu kernel " << k.name << ": "
             << llvm::format("%.2f", ms * 1e3) << " us, " << bytes << " bytes, "
             << llvm::format("%.0f", gbs) << " GB/s ("
             << llvm::format("%.0f", copyGBs > 0 ? 100 * gbs / copyGBs : 0.0)
             << "% of device copy)\n";
        }
      }
    }
#endif
    if (!options.emulate)
      continue;
    os << "kernel " << k.name << " ("
       << (k.launch == cudagen::CudaLaunchKind::WarpPerRow ? "warp_per_row"
                                                           : "grid_stride")
       << ", work " << work << ", " << elements << " elements): max abs err "
       << maxErr << (ok ? " ok" : " MISMATCH") << "\n";
    if (!ok)
      ++failures;
  }
  return Status::success();
}
