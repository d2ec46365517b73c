//===- spmd-cuda-check.cpp - generated CUDA kernels checked without a GPU -===//
//
// Compiles a program to a plan (or reads one), prints its kernels as CUDA
// C++ (codegen/CudaEmitter.h) and checks them on a machine without a GPU:
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

#include "codegen/CudaEmitter.h"
#include "dialects/spmd/SPMDOps.h"
#include "dialects/spmd/SPMDPlanOps.h"
#include "passes/Passes.h"
#include "runtime/Plan.h"
#include "runtime/cuda/LaunchConfig.h"
#include "tools/spmd-run/PlanLoader.h"

#ifdef SPMD_HAVE_NVRTC
#include "runtime/cuda/Nvrtc.h"
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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <dlfcn.h>
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
static cl::opt<std::string>
    breakKernel("test-break-kernel",
                cl::desc("(tests) change one output element of this kernel "
                         "after its emulated run, to show a mismatch fails"));

namespace {

struct Buffer {
  mlir::Type elem;
  spmd::plan::Shape shape;
  spmd::plan::ElemType dtype;
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

std::optional<spmd::plan::ElemType> dtypeOf(Type t) {
  using E = spmd::plan::ElemType;
  if (t.isF32())
    return E::F32;
  if (t.isF64())
    return E::F64;
  if (t.isF16())
    return E::F16;
  if (t.isBF16())
    return E::BF16;
  if (t.isInteger(32))
    return E::I32;
  if (t.isInteger(64) || t.isIndex())
    return E::I64;
  if (t.isInteger(8) || t.isInteger(1))
    return E::I8;
  return std::nullopt;
}

/// Element i as a double (integers exactly up to 2^53).
double element(const Buffer &b, int64_t i) {
  return spmd::plan::loadElement(b.data(), b.dtype, i);
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
  size_t width = spmd::plan::elemSize(b.dtype);
  b.bytes.assign(static_cast<size_t>(n) * width + 32, 0);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> small(0, 3);
  for (int64_t i = 0; i < n; ++i) {
    double v = isa<FloatType>(b.elem) ? real(rng)
               : b.elem.isInteger(1)  ? small(rng) & 1
                                      : small(rng);
    spmd::plan::storeElement(b.data(), b.dtype, i, v);
  }
}

std::string wrapperSource(const spmd::codegen::CudaKernel &k) {
  std::string s = "extern \"C\" const char *spmdemu_" + k.name +
                  "(unsigned grid, unsigned block, void **p) {\n"
                  "  static std::string error;\n"
                  "  error = spmd_emu::launch(" +
                  k.name + ", dim3(grid), dim3(block)";
  for (auto [i, p] : llvm::enumerate(k.params)) {
    std::string idx = std::to_string(i);
    if (p.kind == spmd::codegen::CudaParam::Buffer)
      s += ", (" + p.cType + ")p[" + idx + "]";
    else
      s += ", *(" + p.cType + " *)p[" + idx + "]";
  }
  s += ");\n  return error.c_str();\n}\n";
  return s;
}

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

  if (doEmulate && !kernels.empty()) {
    // The shared object: the unit, plus one C wrapper per kernel.
    llvm::SmallString<128> dir(workDir);
    if (dir.empty()) {
      if (llvm::sys::fs::createUniqueDirectory("spmd-cuda-check", dir))
        return fail("cannot create a temporary directory");
    } else {
      llvm::sys::fs::create_directories(dir);
    }
    std::string src = (dir + "/kernels.cpp").str();
    std::string so = (dir + "/kernels.so").str();
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(src, ec);
      if (ec)
        return fail("cannot write " + src);
      os << "#include <string>\n" << unit << "\n";
      for (const auto &k : kernels)
        os << wrapperSource(k);
    }
    std::string srcRoot = SPMD_SOURCE_DIR;
    llvm::ErrorOr<std::string> compiler = llvm::sys::findProgramByName(cxx);
    if (!compiler)
      return fail("host compiler '" + cxx + "' not found");
    std::vector<std::string> args = {*compiler,
                                     "-std=c++17",
                                     "-O1",
                                     "-fPIC",
                                     "-shared",
                                     "-w",
                                     "-I" + srcRoot,
                                     "-I" + srcRoot + "/runtime/cuda/kernels",
                                     src,
                                     srcRoot + "/runtime/cuda/HostEmu.cpp",
                                     srcRoot + "/runtime/DType.cpp",
                                     "-o",
                                     so};
    std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
    std::string errMsg;
    if (llvm::sys::ExecuteAndWait(*compiler, argRefs, std::nullopt, {}, 0, 0,
                                  &errMsg) != 0)
      return fail("host compilation of " + src + " failed " + errMsg);
    void *lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return fail(std::string("dlopen: ") + dlerror());

    // The CPU backend's kernels.
    spmd::plan::Schedule schedule;
    for (const auto &k : kernels)
      schedule.kernels.push_back(k.name);
    spmd::CompiledKernels cpu;
    if (failed(spmd::compileKernels(*module, schedule, cpu, error)))
      return fail(error);

    std::mt19937_64 rng(seed);
    for (auto [ki, k] : llvm::enumerate(kernels)) {
      auto func = module->lookupSymbol<func::FuncOp>(k.name);
      std::vector<Buffer> buffers;
      std::vector<int64_t> scalars(func.getNumArguments(), indexValue);
      for (Type t : func.getArgumentTypes()) {
        Buffer b;
        if (auto m = dyn_cast<MemRefType>(t)) {
          b.elem = m.getElementType();
          std::optional<spmd::plan::ElemType> d = dtypeOf(b.elem);
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
      std::vector<Buffer> emu = buffers;
      for (size_t i = 0; i < emu.size(); ++i)
        if (!emu[i].bytes.empty())
          std::memmove(emu[i].data(), buffers[i].data(),
                       emu[i].count() * spmd::plan::elemSize(emu[i].dtype));

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

      // Emulation: the printed parameters.
      std::vector<void *> params;
      std::vector<int64_t> dims;
      dims.reserve(k.params.size());
      for (const auto &p : k.params) {
        if (p.kind == spmd::codegen::CudaParam::Buffer)
          params.push_back(emu[p.arg].data());
        else if (p.kind == spmd::codegen::CudaParam::Scalar)
          params.push_back(&scalars[p.arg]);
        else {
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
      using Entry = const char *(*)(unsigned, unsigned, void **);
      auto entry =
          reinterpret_cast<Entry>(dlsym(lib, ("spmdemu_" + k.name).c_str()));
      if (!entry)
        return fail("no entry for " + k.name + " in " + so);
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
            spmd::plan::storeElement(emu[p.arg].data(), emu[p.arg].dtype, 0,
                                     element(emu[p.arg], 0) + 1.0);
            break;
          }
      }

      // Every buffer (inputs must stay, outputs must match).
      double maxErr = 0;
      bool ok = true;
      int64_t elements = 0;
      for (size_t i = 0; i < buffers.size(); ++i) {
        if (!isa<MemRefType>(func.getArgumentTypes()[i]))
          continue;
        double tol = tolerance(buffers[i].elem);
        for (int64_t e = 0; e < buffers[i].count(); ++e) {
          double want = element(buffers[i], e), got = element(emu[i], e);
          ++elements;
          if (std::isnan(want) && std::isnan(got))
            continue;
          double err = std::fabs(want - got);
          if (std::isinf(want) && want == got)
            err = 0;
          maxErr = std::max(maxErr, err);
          if (!(err <= tol * (1.0 + std::fabs(want))))
            ok = false;
        }
      }
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
