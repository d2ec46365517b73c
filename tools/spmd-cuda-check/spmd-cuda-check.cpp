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
// Prints one line per kernel and exits non-zero on any failure. The checks
// are targets/cuda/KernelCheck.h's; this is their command line.
//
//===----------------------------------------------------------------------===//

#include "dialects/spmd/SPMDOps.h"
#include "dialects/spmd/SPMDPlanOps.h"
#include "passes/Passes.h"
#include "targets/cuda/CudaEmitter.h"
#include "targets/cuda/KernelCheck.h"
#include "targets/cuda/Passes.h"
#include "targets/plan/EnsurePlan.h"

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

static int fail(const llvm::Twine &message) {
  llvm::errs() << "spmd-cuda-check: " << message << "\n";
  return 1;
}

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
      spmd::parseProgramFile(inputFile, sourceMgr, &context);
  if (!module)
    return fail("cannot parse " + inputFile);
  std::string error;
  if (failed(spmd::ensurePlan(*module, inputFile, error, partition)))
    return fail(error);

  std::string unit;
  std::vector<spmd::cudagen::CudaKernel> kernels;
  if (failed(
          spmd::cudagen::emitCudaModule(*module, unit, kernels, rowReductions)))
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
  spmd::Status status =
      spmd::checkEmbeddedModule(*module, unit, kernels, llvm::outs(), failures);
  if (status.ok() && doNvrtc)
    status = spmd::checkNvrtc(
        llvm::sys::path::filename(inputFile).str() + ".cu", unit, kernels,
        {archs.begin(), archs.end()}, llvm::outs(), failures);
  if (status.ok()) {
    spmd::KernelRunOptions options;
    options.emulate = doEmulate;
    options.gpu = doGpu;
    options.benchIters = benchIters;
    options.dimSize = dimSize;
    options.indexValue = indexValue;
    options.seed = seed;
    options.offsetBytes = offsetBytes;
    options.workDir = workDir;
    options.cxx = cxx;
    options.breakKernel = breakKernel;
    status = spmd::checkKernelRuns(*module, unit, kernels, options,
                                   llvm::outs(), failures);
  }
  if (!status.ok())
    return fail(status.message());
  if (failures)
    llvm::outs() << "FAILED: " << failures << " check(s)\n";
  else
    llvm::outs() << "all checks passed\n";
  return failures ? 1 : 0;
}
