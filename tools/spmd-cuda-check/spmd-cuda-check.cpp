//===- spmd-cuda-check.cpp - generated CUDA kernels checked without a GPU -===//
//
// Compiles a program to a plan (or reads one), prints its kernels as CUDA
// C++ (targets/cuda/CudaEmitter.h) and checks them on a machine without a GPU:
//
//   --nvrtc     compiles the translation unit with NVRTC for every --arch
//               and checks each cubin's architecture and that it defines
//               every kernel;
//   --emulate   compiles the same text as C++ against the host emulation
//               (runtime/cuda/HostEmu.h, with the host compiler into a
//               shared object), runs every kernel on random buffers and
//               compares the results with the CPU backend's kernel (MLIR
//               linalg -> loops -> LLVM JIT, as spmd-run runs it).
//
// Prints one line per kernel and exits non-zero on any failure.
//
//===----------------------------------------------------------------------===//

#include "dialects/spmd/SPMDOps.h"
#include "dialects/spmd/SPMDPlanOps.h"
#include "passes/Passes.h"
#include "runtime/DType.h"
#include "runtime/Plan.h"
#include "runtime/cuda/EmuBackend.h"
#include "runtime/cuda/LaunchConfig.h"
#include "targets/cuda/CudaEmitter.h"
#include "targets/cuda/Passes.h"
#include "targets/plan/PlanLoader.h"

#ifdef SPMD_HAVE_NVRTC
#include "targets/cuda/Nvrtc.h"
#endif
#ifdef SPMD_HAVE_CUDA_RUNTIME
#include "runtime/cuda/CudaRuntime.h"
#endif

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<program or plan .mlir>"));
static cl::opt<std::string>
    partition("partition", cl::init("auto"),
              cl::desc("spmd-compile partition mode for a program"));
static cl::opt<bool> doNvrtc("nvrtc", cl::desc("compile with NVRTC"));
static cl::list<int> archs("arch", cl::desc("SM versions for --nvrtc"),
                           cl::CommaSeparated);
static cl::opt<bool> doEmulate("emulate",
                               cl::desc("run through the host emulation "
                                        "against the CPU backend"));
static cl::opt<std::string> emitFile("emit",
                                     cl::desc("write the translation unit"));
static cl::opt<bool> rowReductions("row-reductions", cl::init(true),
                                   cl::desc("warp-per-row reductions"));
static cl::opt<int64_t> dimSize("dim-size", cl::init(5),
                                cl::desc("size of every dynamic dim"));
static cl::opt<int64_t> indexValue("index-value", cl::init(0),
                                   cl::desc("value of index arguments"));
static cl::opt<unsigned> seed("seed", cl::init(1));
static cl::opt<unsigned>
    offsetBytes("offset-bytes", cl::init(0),
                cl::desc("place every buffer this many bytes past a 16-byte "
                         "boundary (4: no float4 path can be taken)"));
static cl::opt<std::string> workDir("work-dir",
                                    cl::desc("where the shared object is "
                                             "built (default: a temp dir)"));
static cl::opt<std::string> cxx("cxx", cl::init("c++"),
                                cl::desc("host C++ compiler for --emulate"));
static cl::opt<bool> doGpu("gpu",
                           cl::desc("also run every kernel on GPU 0 (after "
                                    "--emulate) against the CPU backend"));
static cl::opt<int> benchIters("bench",
                               cl::desc("with --gpu: time every kernel over "
                                        "this many launches (GB/s)"),
                               cl::init(0));
static cl::opt<std::string>
    breakKernel("test-break-kernel",
                cl::desc("(tests) change one output element of this kernel "
                         "after its emulated run, to show a mismatch fails"));

namespace {

struct Buffer {
  mlir::Type elem;
  spmd::Shape shape;
  spmd::DType dtype;
  std::vector<char> bytes; // data() is 16-byte aligned plus --offset-bytes
  char *data() {
    auto p = reinterpret_cast<uintptr_t>(bytes.data());
    return bytes.data() + ((16 - p % 16) % 16) + offsetBytes;
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
  return spmd::loadAsDouble(b.data(), b.dtype, i);
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
  size_t width = spmd::dtypeSize(b.dtype);
  b.bytes.assign(static_cast<size_t>(n) * width + 32, 0);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> small(0, 3);
  for (int64_t i = 0; i < n; ++i) {
    double v = isa<FloatType>(b.elem) ? real(rng)
               : b.elem.isInteger(1)  ? small(rng) & 1
                                      : small(rng);
    spmd::storeFromDouble(b.data(), b.dtype, i, v);
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
spmd::cuda::LaunchDims launchDims(const spmd::codegen::CudaKernel &k,
                                  int64_t work, int smCount) {
  spmd::cuda::KernelSpec spec;
  spec.warpPerRow = k.launch == spmd::codegen::CudaLaunchKind::WarpPerRow;
  return spmd::cuda::kernelLaunch(spec, work, smCount);
}

#ifdef SPMD_HAVE_CUDA_RUNTIME
/// Milliseconds per call of `body` (enqueued on `stream`), events-timed.
float timeLaunches(const spmd::cuda::Device &dev,
                   const spmd::cuda::Stream &stream, int iters,
                   const std::function<void()> &body) {
  std::unique_ptr<spmd::cuda::Event> start, stop;
  if (!spmd::cuda::Event::create(dev, true, start).ok() ||
      !spmd::cuda::Event::create(dev, true, stop).ok())
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
bool gpuRun(const spmd::cuda::Device &dev, const spmd::cuda::Stream &stream,
            spmd::cuda::Module &module, const spmd::codegen::CudaKernel &k,
            std::vector<Buffer> &bufs, std::vector<int64_t> &scalars,
            int64_t work, int iters, float &ms, int64_t &bytes,
            std::string &error) {
  auto check = [&](const spmd::Status &s) {
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
    sizes[i] = bufs[i].count() * spmd::dtypeSize(bufs[i].dtype);
    offsets[i] = spmd::cuda::DeviceArena::align(total);
    total = offsets[i] + sizes[i];
    bytes += sizes[i];
  }
  std::unique_ptr<spmd::cuda::DeviceArena> arena;
  if (!check(spmd::cuda::DeviceArena::create(dev, std::max<size_t>(total, 256),
                                             arena)))
    return false;
  for (size_t i = 0; i < bufs.size(); ++i)
    if (sizes[i] && !check(spmd::cuda::check(
                        dev.api(),
                        dev.api().cuMemcpyHtoD(arena->base() + offsets[i],
                                               bufs[i].data(), sizes[i]),
                        "cuMemcpyHtoD")))
      return false;
  std::vector<CUdeviceptr> ptrs(bufs.size(), 0);
  std::vector<int64_t> dims;
  dims.reserve(k.params.size());
  std::vector<void *> args;
  for (const auto &p : k.params) {
    if (p.kind == spmd::codegen::CudaParam::Buffer) {
      ptrs[p.arg] = arena->base() + offsets[p.arg];
      args.push_back(&ptrs[p.arg]);
    } else if (p.kind == spmd::codegen::CudaParam::Scalar) {
      args.push_back(&scalars[p.arg]);
    } else {
      dims.push_back(bufs[p.arg].shape[p.dim]);
      args.push_back(&dims.back());
    }
  }
  spmd::cuda::LaunchDims d = launchDims(k, work, dev.smCount());
  if (iters > 0) {
    spmd::Status last = spmd::Status::success();
    ms = timeLaunches(dev, stream, iters, [&] {
      last = spmd::cuda::launch(dev, fn, d, stream, args.data());
    });
    return check(last);
  }
  if (!check(spmd::cuda::launch(dev, fn, d, stream, args.data())) ||
      !check(stream.synchronize()))
    return false;
  for (size_t i = 0; i < bufs.size(); ++i)
    if (sizes[i] &&
        !check(spmd::cuda::check(
            dev.api(),
            dev.api().cuMemcpyDtoH(bufs[i].data(), arena->base() + offsets[i],
                                   sizes[i]),
            "cuMemcpyDtoH")))
      return false;
  return true;
}
#endif

int fail(const llvm::Twine &message) {
  llvm::errs() << "spmd-cuda-check: " << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "spmd generated CUDA kernels: NVRTC and host "
                              "emulation checks\n");
  registerAllPasses();
  spmd::registerAllSPMDPasses();
  spmd::registerCudaPasses();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registry.insert<spmd::SPMDDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  if (!module)
    return fail("cannot parse " + inputFile);
  std::string error;
  if (failed(spmd::ensurePlan(*module, inputFile, error, partition)))
    return fail(error);

  std::string unit;
  std::vector<spmd::codegen::CudaKernel> kernels;
  if (failed(
          spmd::codegen::emitCudaModule(*module, unit, kernels, rowReductions)))
    return fail("the plan's kernels cannot be printed as CUDA");
  llvm::outs() << "kernels: " << kernels.size() << "\n";
  if (!emitFile.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(emitFile, ec);
    if (ec)
      return fail("cannot write " + emitFile + ": " + ec.message());
    os << unit;
  }

  int failures = 0;
  // A plan compiled with spmd-emit-cuda{embed=true}: the embedded module
  // must hold this very source and a cubin per arch defining every kernel.
  if (auto embedded = (*module)->getAttrOfType<StringAttr>(
          spmd::codegen::kCudaModuleAttrName)) {
#ifdef SPMD_HAVE_NVRTC
    spmd::cuda::CompiledModule m;
    spmd::Status status =
        spmd::cuda::deserializeModule(embedded.getValue().str(), m);
    if (!status.ok())
      return fail("embedded module: " + status.message());
    bool same = m.source == unit;
    llvm::outs() << "embedded: source " << (same ? "matches" : "DIFFERS FROM")
                 << " the printed "
                 << "kernels";
    failures += same ? 0 : 1;
    for (const auto &[arch, cubin] : m.cubins) {
      int got = 0;
      bool ok = spmd::cuda::cubinArch(cubin, got).ok() && got == arch;
      for (const auto &k : kernels)
        ok = ok && cubin.find(k.name + '\0') != std::string::npos;
      llvm::outs() << ", sm_" << arch << (ok ? "" : " BAD");
      failures += ok ? 0 : 1;
    }
    if (m.ptxArch)
      llvm::outs() << ", ptx compute_" << m.ptxArch;
    llvm::outs() << "\n";
#else
    return fail("the plan embeds a CUDA module; this build has no NVRTC");
#endif
  }
  if (doNvrtc) {
#ifdef SPMD_HAVE_NVRTC
    spmd::cuda::CompileOptions options;
    if (!archs.empty())
      options.archs.assign(archs.begin(), archs.end());
    spmd::cuda::CompiledModule compiled;
    spmd::Status status = spmd::cuda::compileModule(
        llvm::sys::path::filename(inputFile).str() + ".cu", unit, options,
        compiled);
    if (!status.ok())
      return fail(status.message());
    for (int arch : options.archs) {
      auto it = compiled.cubins.find(arch);
      int got = 0;
      if (it == compiled.cubins.end() ||
          !spmd::cuda::cubinArch(it->second, got).ok() || got != arch) {
        llvm::outs() << "nvrtc sm_" << arch << ": no cubin for the arch\n";
        ++failures;
        continue;
      }
      // Every extern "C" entry point is a symbol of the cubin.
      int missing = 0;
      for (const auto &k : kernels)
        if (it->second.find(k.name + '\0') == std::string::npos)
          ++missing;
      llvm::outs() << "nvrtc sm_" << arch << ": " << it->second.size()
                   << " bytes, " << kernels.size() - missing << "/"
                   << kernels.size() << " kernels\n";
      failures += missing;
    }
#else
    return fail("--nvrtc: this build has no CUDA toolkit");
#endif
  }

  if ((doEmulate || doGpu) && !kernels.empty()) {
    std::unique_ptr<spmd::cuda::EmuModule> emuModule;
    if (doEmulate) {
      // The shared object: the unit, plus one entry per kernel.
      std::string source = unit;
      for (const auto &k : kernels)
        source += spmd::codegen::cudaEmulationEntry(k);
      if (spmd::Status s = spmd::cuda::EmuModule::build(
              source, cxx, SPMD_SOURCE_DIR, workDir, emuModule);
          !s.ok())
        return fail(s.message());
    }

    // The CPU backend's kernels.
    spmd::plan::Schedule schedule;
    for (const auto &k : kernels)
      schedule.kernels.push_back(k.name);
    spmd::CompiledKernels cpu;
    if (failed(spmd::compileKernels(*module, schedule, cpu, error)))
      return fail(error);

#ifdef SPMD_HAVE_CUDA_RUNTIME
    // --gpu: the same source through NVRTC onto GPU 0.
    std::unique_ptr<spmd::cuda::Device> gpu;
    std::unique_ptr<spmd::cuda::Stream> gpuStream;
    std::unique_ptr<spmd::cuda::Module> gpuModule;
    double copyGBs = 0;
    if (doGpu) {
      spmd::cuda::CompileOptions options;
      spmd::cuda::CompiledModule compiled;
      spmd::Status status;
      if (!(status = spmd::cuda::Device::open(0, gpu)).ok() ||
          !(status = spmd::cuda::Stream::create(*gpu, gpuStream)).ok() ||
          !(status = spmd::cuda::compileModule("kernels.cu", unit, options,
                                               compiled))
               .ok() ||
          !(status = spmd::cuda::Module::load(
                *gpu, compiled, spmd::cuda::nvrtcRecompiler(options),
                gpuModule))
               .ok())
        return fail("--gpu: " + status.message());
      llvm::outs() << "gpu: " << gpu->name() << ", sm_" << gpu->arch() << ", "
                   << gpuModule->imageSource() << "\n";
      if (benchIters > 0) {
        // The achievable bound: a device-to-device copy of 256 MiB.
        size_t big = size_t(256) << 20;
        std::unique_ptr<spmd::cuda::DeviceArena> arena;
        if (!(status = spmd::cuda::DeviceArena::create(*gpu, 2 * big, arena))
                 .ok())
          return fail("--gpu: " + status.message());
        float ms = timeLaunches(*gpu, *gpuStream, benchIters, [&] {
          gpu->api().cuMemcpyDtoDAsync(arena->base() + big, arena->base(), big,
                                       gpuStream->get());
        });
        copyGBs = 2.0 * big / (ms * 1e-3) / 1e9;
        llvm::outs() << "gpu: device copy " << llvm::format("%.0f", copyGBs)
                     << " GB/s\n";
      }
    }
#else
    if (doGpu)
      return fail("--gpu: this build has no CUDA runtime");
#endif

    std::mt19937_64 rng(seed);
    for (auto [ki, k] : llvm::enumerate(kernels)) {
      auto func = module->lookupSymbol<func::FuncOp>(k.name);
      std::vector<Buffer> buffers;
      std::vector<int64_t> scalars(func.getNumArguments(), indexValue);
      for (Type t : func.getArgumentTypes()) {
        Buffer b;
        if (auto m = dyn_cast<MemRefType>(t)) {
          b.elem = m.getElementType();
          std::optional<spmd::DType> d = spmd::dtypeOfElementType(b.elem);
          if (!d)
            return fail("kernel " + k.name + ": element type not supported");
          b.dtype = *d;
          for (int64_t s : m.getShape())
            b.shape.push_back(ShapedType::isDynamic(s) ? dimSize : s);
          fill(b, rng);
        }
        buffers.push_back(std::move(b));
      }
      // The same values at the same alignment (vector copies realign).
      std::vector<Buffer> emu = buffers, onGpu = buffers;
      for (size_t i = 0; i < emu.size(); ++i)
        if (!emu[i].bytes.empty()) {
          size_t n = emu[i].count() * spmd::dtypeSize(emu[i].dtype);
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
      cpu.functions[ki](packed.data());

      // Emulation: the printed parameters, as cuLaunchKernel takes them
      // (each points at its value).
      std::vector<void *> params, addresses;
      std::vector<int64_t> dims;
      dims.reserve(k.params.size());
      addresses.reserve(k.params.size());
      for (const auto &p : k.params) {
        if (p.kind == spmd::codegen::CudaParam::Buffer) {
          addresses.push_back(emu[p.arg].data());
          params.push_back(&addresses.back());
        } else if (p.kind == spmd::codegen::CudaParam::Scalar) {
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
      int64_t perBlock =
          k.launch == spmd::codegen::CudaLaunchKind::WarpPerRow ? 2 : 64;
      if (work > 0)
        grid = static_cast<unsigned>(
            std::min<int64_t>((work + perBlock - 1) / perBlock, 3));
      double maxErr = 0;
      bool ok = true;
      int64_t elements = 0;
      if (doEmulate) {
        spmd::cuda::EmuEntry entry = nullptr;
        if (spmd::Status s = emuModule->entry(k.name, entry); !s.ok())
          return fail(s.message());
        if (grid > 0) {
          const char *err = entry(grid, block, params.data());
          if (err && *err) {
            llvm::outs() << "kernel " << k.name << ": emulation error: " << err
                         << "\n";
            ++failures;
            continue;
          }
        }
        if (k.name == breakKernel) {
          // The first buffer the kernel writes (not a const parameter).
          for (const auto &p : k.params)
            if (p.kind == spmd::codegen::CudaParam::Buffer &&
                !llvm::StringRef(p.cType).starts_with("const ") &&
                emu[p.arg].count() > 0) {
              spmd::storeFromDouble(emu[p.arg].data(), emu[p.arg].dtype, 0,
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
          llvm::outs() << "gpu kernel " << k.name << ": " << gpuError << "\n";
        double gpuErr = 0;
        bool gpuOk = gpuError.empty() && compare(func, buffers, onGpu, gpuErr);
        llvm::outs() << "gpu kernel " << k.name << ": max abs err " << gpuErr
                     << (gpuOk ? " ok" : " MISMATCH") << "\n";
        failures += gpuOk ? 0 : 1;
        if (gpuOk && benchIters > 0) {
          float ms = 0;
          int64_t bytes = 0;
          std::string benchError;
          if (gpuRun(*gpu, *gpuStream, *gpuModule, k, onGpu, scalars, work,
                     benchIters, ms, bytes, benchError)) {
            double gbs = bytes / (ms * 1e-3) / 1e9;
            llvm::outs() << "gpu kernel " << k.name << ": "
                         << llvm::format("%.2f", ms * 1e3) << " us, " << bytes
                         << " bytes, " << llvm::format("%.0f", gbs) << " GB/s ("
                         << llvm::format(
                                "%.0f", copyGBs > 0 ? 100 * gbs / copyGBs : 0.0)
                         << "% of device copy)\n";
          }
        }
      }
#endif
      if (!doEmulate)
        continue;
      llvm::outs() << "kernel " << k.name << " ("
                   << (k.launch == spmd::codegen::CudaLaunchKind::WarpPerRow
                           ? "warp_per_row"
                           : "grid_stride")
                   << ", work " << work << ", " << elements
                   << " elements): max abs err " << maxErr
                   << (ok ? " ok" : " MISMATCH") << "\n";
      if (!ok)
        ++failures;
    }
  }
  if (failures)
    llvm::outs() << "FAILED: " << failures << " check(s)\n";
  else
    llvm::outs() << "all checks passed\n";
  return failures ? 1 : 0;
}
