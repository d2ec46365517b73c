//===- spmd-run.cpp - Run a plan on simulated ranks
//------------------------===//
//
//   spmd-run PROGRAM(.mlir|.plan) [--entry NAME] [--ranks N]
//            [--input-dir DIR | --seed S] [--output-dir DIR] [--check]
//            [--reference FILE] [--steps K] [--print-plan]
//
// Loads a plan (or compiles a program in process: a GLOBAL annotated program
// is partitioned first, see spmd::isGlobalProgram), JIT-compiles its
// kernels, gives every rank its shard of the global inputs (DIR/arg<i>.npy)
// by the arguments' layouts, runs all ranks as threads, and assembles the
// global results (result<i>.npy) by the results' layouts, reducing partial
// ones. --check runs the unpartitioned program on one device and compares
// every result: --reference when given, else the program itself (a global
// program compiled without partitioning, or a local one without
// collectives).
// --steps K feeds result i back to argument i between steps.
//
//===----------------------------------------------------------------------===//

#include "targets/cpu/CpuJit.h"
#include "targets/plan/PlanLoader.h"

#include "dialects/spmd/SPMDPlanOps.h"
#include "passes/Passes.h"
#include "runtime/Npy.h"
#include "targets/cuda/CudaBackend.h"
#include "runtime/Ranks.h"

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
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <thread>

using namespace mlir;
using namespace spmd;
using namespace spmd::plan;

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::desc("<program>"),
                                            llvm::cl::Required);
static llvm::cl::opt<std::string> entryName("entry",
                                            llvm::cl::desc("entry to run"));
static llvm::cl::opt<int64_t>
    ranksOpt("ranks", llvm::cl::desc("number of ranks (default: the mesh's)"),
             llvm::cl::init(0));
static llvm::cl::opt<std::string>
    inputDir("input-dir", llvm::cl::desc("directory with arg<i>.npy"));
static llvm::cl::opt<uint64_t>
    seed("seed", llvm::cl::desc("generate inputs from this seed"),
         llvm::cl::init(0));
static llvm::cl::opt<std::string>
    outputDir("output-dir", llvm::cl::desc("write result<i>.npy here"));
static llvm::cl::opt<bool>
    check("check", llvm::cl::desc("compare with the unpartitioned program"));
static llvm::cl::opt<double> atolOpt(
    "atol",
    llvm::cl::desc("--check: absolute tolerance (default by dtype: f32 "
                   "1e-4, f16 1e-2, bf16 5e-2, f64 1e-9, integers exact)"),
    llvm::cl::init(-1));
static llvm::cl::opt<double>
    rtolOpt("rtol",
            llvm::cl::desc("--check: relative tolerance (default as --atol)"),
            llvm::cl::init(-1));
static llvm::cl::opt<std::string> referenceFile(
    "reference",
    llvm::cl::desc("unpartitioned program for --check (default: PROGRAM)"));
static llvm::cl::opt<std::string> partitionMode(
    "partition",
    llvm::cl::desc("auto: partition a global annotated program (layouts, no "
                   "collectives, no spmd.global_type); on; off: run the "
                   "program as every rank's local program"),
    llvm::cl::init("auto"));
static llvm::cl::opt<int64_t> steps("steps", llvm::cl::desc("steps to run"),
                                    llvm::cl::init(1));
static llvm::cl::opt<bool> printPlan("print-plan",
                                     llvm::cl::desc("print the schedule"));
static llvm::cl::opt<std::string>
    commKind("comm",
             llvm::cl::desc("communicator: inproc (threads), mpi (one "
                            "process per rank under mpirun), or nccl "
                            "(--backend cuda: one thread per GPU)"),
             llvm::cl::init("inproc"));
static llvm::cl::opt<bool> verifyCollectives(
    "verify-collectives",
    llvm::cl::desc("compare a fingerprint of every collective across its "
                   "group before running it"));
static llvm::cl::opt<double>
    timeoutSeconds("timeout", llvm::cl::desc("seconds a collective may wait"),
                   llvm::cl::init(60));
// Fault injection for tests.
static llvm::cl::opt<int64_t>
    failRank("test-fail-rank", llvm::cl::Hidden, llvm::cl::init(-1),
             llvm::cl::desc("this rank fails before --test-fail-step"));
static llvm::cl::opt<int64_t> failStep("test-fail-step", llvm::cl::Hidden,
                                       llvm::cl::init(0));
static llvm::cl::opt<int64_t> mismatchRank(
    "test-mismatch-rank", llvm::cl::Hidden, llvm::cl::init(-1),
    llvm::cl::desc("this rank's collectives carry a different fingerprint"));
static llvm::cl::opt<std::string> backendKind(
    "backend", llvm::cl::init("cpu"),
    llvm::cl::desc("cpu (JIT-compiled kernels), cuda (the kernels printed as "
                   "CUDA, NVRTC-compiled, GEMMs through cuBLASLt, on GPUs), "
                   "or cuda-emu (the same CUDA kernels and GPU executor on "
                   "the CPU, with a race check of its streams)"));
static llvm::cl::opt<bool>
    cudaGraph("cuda-graph",
              llvm::cl::desc("--backend cuda/cuda-emu: capture the second "
                             "step as a CUDA graph, replay it after"));
static llvm::cl::opt<bool>
    allowTF32("tf32", llvm::cl::desc("--backend cuda: f32 GEMMs may use TF32 "
                                     "tensor cores"));
static llvm::cl::opt<std::string>
    emuCxx("emu-cxx", llvm::cl::init("c++"),
           llvm::cl::desc("--backend cuda-emu: the host C++ compiler"));
static llvm::cl::opt<std::string>
    emuDir("emu-dir", llvm::cl::desc("--backend cuda-emu: build the emulated "
                                     "kernels here (default: a temporary "
                                     "folder)"));

namespace {
[[noreturn]] void die(const std::string &message) {
  llvm::errs() << "spmd-run: " << message << "\n";
  std::exit(1);
}

struct Program {
  OwningOpRef<ModuleOp> module;
  bool global = false; // a global annotated program, partitioned here
  Schedule schedule;
  CompiledKernels kernels;
};

void loadProgram(MLIRContext &ctx, const std::string &file, Program &program,
                 StringRef partition) {
  std::string error;
  {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::SourceMgr sourceMgr;
    SourceMgrDiagnosticHandler handler(sourceMgr, &ctx, os);
    program.module = parseSourceFile<ModuleOp>(file, sourceMgr, &ctx);
    if (!program.module)
      die(file + ": cannot parse the program\n" + text);
  }
  program.global = isGlobalProgram(*program.module);
  if (failed(ensurePlan(*program.module, file, error, partition)))
    die(error);
  if (failed(loadSchedule(*program.module, entryName, program.schedule, error)))
    die(file + ": " + error);
  if (failed(compileKernels(*program.module, program.schedule, program.kernels,
                            error)))
    die(file + ": " + error);
}

/// The global shape of a tensor: spmd.global_type's when the plan has it,
/// else from the local shape assuming even shards (the layout's shard counts
/// divide the dims).
Shape globalShapeOf(const Mesh &mesh, const TensorInfo &info) {
  if (info.globalShape)
    return *info.globalShape;
  Shape global = info.localShape;
  if (!info.layout)
    return global;
  for (size_t a = 0; a < info.layout->placements.size(); ++a)
    if (info.layout->placements[a].isShard())
      global[info.layout->placements[a].dim] *= mesh.axisSizes[a];
  return global;
}

NpyArray generate(const TensorInfo &info, const Shape &shape, uint64_t s) {
  NpyArray array;
  array.dtype = info.type == DType::BF16 ? DType::F32 : info.type;
  array.shape = shape;
  array.data.assign(numElements(shape) * dtypeSize(array.dtype), 0);
  std::mt19937_64 rng(s);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> integer(0, 9);
  for (int64_t i = 0; i < numElements(shape); ++i)
    storeFromDouble(array.data.data(), array.dtype, i,
                    isFloat(array.dtype) ? real(rng) : integer(rng));
  return array;
}

/// Converts an array to `type` (inputs may come as f32 for f16/bf16 args).
std::vector<char> convert(const NpyArray &array, DType type) {
  int64_t n = numElements(array.shape);
  std::vector<char> out(n * dtypeSize(type));
  if (array.dtype == type) {
    std::memcpy(out.data(), array.data.data(), out.size());
    return out;
  }
  for (int64_t i = 0; i < n; ++i)
    storeFromDouble(out.data(), type, i,
                    loadAsDouble(array.data.data(), array.dtype, i));
  return out;
}

/// Writes a result; bf16 (which NumPy lacks) widened to f32.
Status writeResult(const std::string &path, const NpyArray &array) {
  if (array.dtype != DType::BF16)
    return writeNpy(path, array.dtype, array.shape, array.data.data());
  std::vector<char> wide = convert(array, DType::F32);
  return writeNpy(path, DType::F32, array.shape, wide.data());
}

/// Whether `device` is the one representative among ranks holding the same
/// block: coordinate 0 on every replicated axis.
bool isRepresentative(const Mesh &mesh, const std::optional<Layout> &layout,
                      int64_t device) {
  std::vector<int64_t> coords = mesh.coords(device);
  for (size_t a = 0; a < coords.size(); ++a)
    if ((!layout || layout->placements[a].isReplicate()) && coords[a] != 0)
      return false;
  return true;
}

struct Tolerance {
  double atol, rtol;
};
std::string formatTolerance(double t) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", t);
  return buf;
}
Tolerance toleranceFor(DType type) {
  switch (type) {
  case DType::F64:
    return {1e-9, 1e-9};
  case DType::F32:
    return {1e-4, 1e-4};
  case DType::F16:
    return {1e-2, 1e-2};
  case DType::BF16:
    return {5e-2, 5e-2};
  default:
    return {0, 0};
  }
}
} // namespace

namespace {
/// One rank's steps on its backend: the CPU executor over the host blocks,
/// or the GPU executor over device copies of them.
class RankSteps {
public:
  virtual ~RankSteps() = default;
  virtual std::string run() = 0;
  /// Results 0..count-1 become arguments 0..count-1.
  virtual std::string feed(size_t count) = 0;
  virtual std::string results(std::vector<std::vector<char>> &data,
                              std::vector<Shape> &shapes) = 0;
  virtual void failBeforeStep(int64_t step) = 0;
  /// What the backend has to say about the last step ("" for the CPU).
  virtual std::string report() const { return ""; }
};

class CpuSteps final : public RankSteps {
public:
  CpuSteps(const Schedule &schedule, std::vector<KernelFn> kernels,
           Collectives *comm, std::vector<std::vector<char>> &blocks,
           const std::vector<Shape> &shapes)
      : executor(schedule, std::move(kernels), comm), schedule(schedule),
        shapes(shapes) {
    for (std::vector<char> &block : blocks)
      args.push_back(block.data());
  }
  std::string run() override { return executor.run(args, shapes); }
  std::string feed(size_t count) override {
    for (size_t i = 0; i < count; ++i) {
      if (executor.resultShape(i) != shapes[i])
        return "result " + std::to_string(i) + " has local shape " +
               shapeStr(executor.resultShape(i)) + ", argument " +
               std::to_string(i) + " " + shapeStr(shapes[i]) +
               ": cannot feed it back";
      std::memmove(args[i], executor.result(i, args),
                   static_cast<size_t>(numElements(shapes[i])) *
                       dtypeSize(schedule.args[i].type));
    }
    return "";
  }
  std::string results(std::vector<std::vector<char>> &data,
                      std::vector<Shape> &outShapes) override {
    for (size_t i = 0; i < schedule.results.size(); ++i) {
      const auto *p = static_cast<const char *>(executor.result(i, args));
      Shape shape = executor.resultShape(i);
      outShapes.push_back(shape);
      data.emplace_back(p, p + numElements(shape) *
                                   dtypeSize(schedule.results[i].type));
    }
    return "";
  }
  void failBeforeStep(int64_t step) override { executor.failBeforeStep(step); }

private:
  Executor executor;
  const Schedule &schedule;
  std::vector<Shape> shapes;
  std::vector<void *> args;
};

class DeviceSteps final : public RankSteps {
public:
  /// Rank `d`'s device from `program`, its arguments uploaded; null and
  /// `error` on failure. `allShapes[r]` are rank r's argument shapes.
  static std::unique_ptr<DeviceSteps>
  create(CudaProgram &program, const Schedule &schedule, int64_t d,
         Collectives *comm, cuda::DeviceExecutorOptions options,
         const std::vector<std::vector<char>> &blocks,
         const std::vector<std::vector<Shape>> &allShapes, std::string &error) {
    auto steps = std::unique_ptr<DeviceSteps>(new DeviceSteps());
    if ((error = program.openRank(d, comm, steps->backend)), !error.empty())
      return nullptr;
    steps->executor = std::make_unique<cuda::DeviceExecutor>(
        schedule, program.specs(), *steps->backend, d, options);
    std::vector<const void *> args;
    for (const std::vector<char> &block : blocks)
      args.push_back(block.data());
    error = steps->executor->setArguments(args, allShapes[d], allShapes);
    if (!error.empty())
      return nullptr;
    steps->resultCount = schedule.results.size();
    return steps;
  }
  std::string run() override { return executor->run(); }
  std::string feed(size_t count) override {
    return executor->feedResults(count);
  }
  std::string results(std::vector<std::vector<char>> &data,
                      std::vector<Shape> &shapes) override {
    for (size_t i = 0; i < resultCount; ++i) {
      shapes.push_back(executor->resultShape(i));
      data.emplace_back();
      if (std::string err = executor->downloadResult(i, data.back());
          !err.empty())
        return err;
    }
    return "";
  }
  void failBeforeStep(int64_t step) override { executor->failBeforeStep(step); }
  std::string report() const override {
    const cuda::OverlapStats &s = executor->overlap();
    return std::to_string(s.collectives) + " collective(s), " +
           std::to_string(s.overlapped) + " with compute issued behind them; " +
           std::to_string(s.computeWhilePending) + " of " +
           std::to_string(s.computeSteps) +
           " compute steps issued while a collective was in flight";
  }

private:
  DeviceSteps() = default;
  std::unique_ptr<cuda::DeviceBackend> backend;
  std::unique_ptr<cuda::DeviceExecutor> executor;
  size_t resultCount = 0;
};
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --help lists spmd-run's options, not the hundreds libLLVM registers.
  static llvm::cl::OptionCategory runCategory("spmd-run options");
  for (llvm::cl::Option *opt : std::initializer_list<llvm::cl::Option *>{
           &inputFile,      &entryName,     &ranksOpt,
           &inputDir,       &seed,          &outputDir,
           &check,          &atolOpt,       &rtolOpt,
           &referenceFile,  &partitionMode, &steps,
           &printPlan,      &commKind,      &verifyCollectives,
           &timeoutSeconds, &backendKind,   &cudaGraph,
           &allowTF32,      &emuCxx,        &emuDir})
    opt->addCategory(runCategory);
  llvm::cl::HideUnrelatedOptions(runCategory);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "spmd-run: run a global program or a plan on simulated ranks "
      "(threads) or MPI processes, optionally checked against the "
      "unpartitioned program\n");
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registry.insert<SPMDDialect>();
  registerAllPasses();
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  if (commKind == "mpi") {
    if (std::string err = MpiRun::initialize(&argc, &argv); !err.empty())
      die("--comm mpi: " + err);
    // Rank 0 goes on to assemble and check; it finalizes however it exits.
    std::atexit(MpiRun::finalize);
  }
  if (!inputDir.empty() && seed.getNumOccurrences())
    die("--input-dir and --seed exclude each other");
  if (steps < 1)
    die("--steps must be at least 1");
  if (commKind != "inproc" && commKind != "mpi" && commKind != "nccl")
    die("--comm must be inproc, mpi or nccl, not '" + commKind + "'");
  if (backendKind != "cpu" && backendKind != "cuda" &&
      backendKind != "cuda-emu")
    die("--backend must be cpu, cuda or cuda-emu, not '" + backendKind + "'");
  bool onDevice = backendKind != "cpu";
  if (commKind == "nccl" && backendKind != "cuda")
    die("--comm nccl needs --backend cuda");
  if ((cudaGraph || allowTF32) && !onDevice)
    die(std::string(cudaGraph ? "--cuda-graph" : "--tf32") +
        " needs --backend cuda or cuda-emu");

  if (partitionMode != "auto" && partitionMode != "on" &&
      partitionMode != "off")
    die("--partition must be auto, on or off, not '" + partitionMode + "'");
  Program program;
  loadProgram(ctx, inputFile, program, partitionMode);
  const Schedule &schedule = program.schedule;
  const Mesh &mesh = schedule.mesh;
  int64_t numRanks = mesh.numDevices();
  if (ranksOpt.getNumOccurrences() && ranksOpt != numRanks)
    die("--ranks " + std::to_string(ranksOpt) + " does not match the mesh of " +
        std::to_string(numRanks) + " devices");
  if (std::string err = checkRunResources(schedule, commKind != "mpi");
      !err.empty())
    die(inputFile + ": " + err);
  if (printPlan)
    llvm::outs() << schedule.str();
  std::unique_ptr<CudaProgram> cudaProgram;
  if (onDevice) {
    CudaRunOptions options;
    options.emulate = backendKind == "cuda-emu";
    options.cxx = emuCxx;
    options.workDir = emuDir;
    options.comm = commKind;
    if (std::string err =
            prepareCuda(*program.module, schedule, options, cudaProgram);
        !err.empty())
      die("--backend " + backendKind + ": " + err);
  }

  // Global inputs.
  std::vector<NpyArray> globals(schedule.args.size());
  for (size_t i = 0; i < schedule.args.size(); ++i) {
    const TensorInfo &arg = schedule.args[i];
    if (inputDir.empty()) {
      for (int64_t d : arg.localShape)
        if (d < 0 && !arg.globalShape)
          die("argument " + std::to_string(i) + " of " + schedule.name +
              " has rank-dependent dims and no spmd.global_type; give its "
              "global value with --input-dir");
      globals[i] = generate(arg, globalShapeOf(mesh, arg), seed + i);
      continue;
    }
    std::string path = inputDir + "/arg" + std::to_string(i) + ".npy";
    if (Status s = readNpy(path, globals[i]); !s.ok())
      die(s.message());
    bool typeOk = globals[i].dtype == arg.type ||
                  (globals[i].dtype == DType::F32 &&
                   (arg.type == DType::BF16 || arg.type == DType::F16));
    if (!typeOk)
      die(path + ": dtype " + dtypeName(globals[i].dtype) + " but argument " +
          std::to_string(i) + " of " + schedule.name + " is " +
          dtypeName(arg.type));
    for (int64_t d = 0; d < numRanks; ++d) {
      Layout layout =
          arg.layout ? *arg.layout : Layout::replicated(mesh.rank());
      bool fits = globals[i].shape.size() == arg.localShape.size();
      if (fits) {
        Shape mine = localShape(mesh, layout, globals[i].shape, mesh.coords(d));
        for (size_t k = 0; k < mine.size(); ++k)
          fits =
              fits && (arg.localShape[k] < 0 || arg.localShape[k] == mine[k]);
      }
      if (!fits)
        die(path + ": shape " + shapeStr(globals[i].shape) +
            " does not give argument " + std::to_string(i) + " of " +
            schedule.name + " its local shape " + shapeStr(arg.localShape) +
            " on rank " + std::to_string(d) + " (layout " + layout.str() + ")");
    }
  }

  // Every rank's local inputs: its box of the global value; a partial
  // input is held by group index 0 and zero elsewhere.
  std::vector<std::vector<std::vector<char>>> local(numRanks);
  std::vector<std::vector<Shape>> localShapes(numRanks);
  for (int64_t d = 0; d < numRanks; ++d) {
    for (size_t i = 0; i < schedule.args.size(); ++i) {
      const TensorInfo &arg = schedule.args[i];
      Layout layout =
          arg.layout ? *arg.layout : Layout::replicated(mesh.rank());
      std::vector<char> global = convert(globals[i], arg.type);
      Shape shape = localShape(mesh, layout, globals[i].shape, mesh.coords(d));
      localShapes[d].push_back(shape);
      std::vector<char> block(numElements(shape) * dtypeSize(arg.type), 0);
      std::vector<int64_t> coords = mesh.coords(d);
      // A partial input: for sum, group index 0 holds the value and the
      // others zero; for avg/max/min every member holds it.
      bool holder = true;
      for (size_t a = 0; a < coords.size(); ++a)
        if (layout.placements[a].isPartial() &&
            layout.placements[a].reduce == ReduceKind::Sum && coords[a] != 0)
          holder = false;
      if (holder) {
        std::vector<Range> ranges =
            localRanges(mesh, layout, globals[i].shape, coords);
        Shape offset;
        for (const Range &r : ranges)
          offset.push_back(r.offset);
        copyBox(global.data(), globals[i].shape, offset, block.data(), shape,
                Shape(offset.size(), 0), shape, dtypeSize(arg.type));
      }
      local[d].push_back(std::move(block));
    }
  }

  // --steps: result i feeds argument i for the longest prefix of pairs with
  // the same element type, global shape and layout (a training step exported
  // with its updated state first); the first pair that differs ends the
  // feeding, and says so, rather than feeding a mismatched tensor.
  size_t fed = 0;
  size_t pairs = std::min(schedule.results.size(), schedule.args.size());
  auto describe = [&](const TensorInfo &t) {
    return std::string(dtypeName(t.type)) + shapeStr(globalShapeOf(mesh, t)) +
           " " +
           (t.layout ? t.layout->str() : Layout::replicated(mesh.rank()).str());
  };
  for (; fed < pairs; ++fed) {
    const TensorInfo &r = schedule.results[fed], &a = schedule.args[fed];
    Layout rl = r.layout ? *r.layout : Layout::replicated(mesh.rank());
    Layout al = a.layout ? *a.layout : Layout::replicated(mesh.rank());
    // Global shapes where the plan knows them (spmd.global_type); a
    // hand-written local program's dynamic dims are compared per rank
    // when fed.
    // (Dynamic dims: any negative value.)
    bool sameLocal =
        r.localShape.size() == a.localShape.size() &&
        llvm::all_of(llvm::seq<size_t>(0, r.localShape.size()), [&](size_t k) {
          return r.localShape[k] == a.localShape[k] ||
                 (r.localShape[k] < 0 && a.localShape[k] < 0);
        });
    if (r.type != a.type || rl != al || !sameLocal ||
        (r.globalShape && a.globalShape && *r.globalShape != *a.globalShape))
      break;
  }
  // (Under mpirun, only the first process says it.)
  const char *mpiRank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (steps > 1 &&
      (commKind != "mpi" || !mpiRank || std::string(mpiRank) == "0")) {
    if (fed == 0)
      llvm::errs() << "spmd-run: --steps: no result feeds an argument";
    else
      llvm::errs() << "spmd-run: --steps: results 0.." << fed - 1
                   << " feed arguments 0.." << fed - 1;
    if (fed < pairs)
      llvm::errs() << "; result " << fed << " ("
                   << describe(schedule.results[fed])
                   << ") does not match argument " << fed << " ("
                   << describe(schedule.args[fed]) << ")";
    llvm::errs() << "\n";
  }

  // Run the ranks: all as threads of this process (inproc), or this
  // process's rank of an mpirun job (mpi).
  std::vector<std::vector<std::vector<char>>> outputs(numRanks);
  std::vector<std::vector<Shape>> outShapes(numRanks);
  std::vector<std::string> errors(numRanks);
  double stepSeconds = 0;   // rank 0's mean time per step
  std::string deviceReport; // rank 0's overlap on a device backend
  // One rank's steps; on failure records the error and calls `abort`.
  auto runRank = [&](int64_t d, Collectives *comm,
                     const std::function<void(const std::string &)> &abort) {
    auto fail = [&](const std::string &err) {
      errors[d] = "rank " + std::to_string(d) + ": " + err;
      abort(err);
    };
    std::unique_ptr<RankSteps> rank;
    if (cudaProgram) {
      cuda::DeviceExecutorOptions options;
      options.cudaGraph = cudaGraph;
      options.allowTF32 = allowTF32;
      // Verification needs the collectives' own exchange.
      options.planShapes = !verifyCollectives;
      std::string err;
      rank = DeviceSteps::create(*cudaProgram, schedule, d, comm, options,
                                 local[d], localShapes, err);
      if (!rank)
        return fail(err);
    } else {
      rank = std::make_unique<CpuSteps>(schedule, program.kernels.functions,
                                        comm, local[d], localShapes[d]);
    }
    if (d == failRank)
      rank->failBeforeStep(failStep);
    auto start = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < steps; ++s) {
      if (std::string err = rank->run(); !err.empty())
        return fail(err);
      if (s + 1 < steps) {
        // Result i becomes argument i of the next step.
        if (std::string err = rank->feed(fed); !err.empty())
          return fail(err);
        // Progress: about ten lines however many steps.
        if (d == 0 && (s + 1) % std::max<int64_t>(1, steps / 10) == 0)
          llvm::errs() << "spmd-run: step " << (s + 1) << "/" << steps
                       << " done\n";
      }
    }
    if (d == 0)
      deviceReport = rank->report();
    if (d == 0)
      stepSeconds = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count() /
                    static_cast<double>(steps);
    if (std::string err = rank->results(outputs[d], outShapes[d]); !err.empty())
      return fail(err);
  };
  if (commKind == "mpi") {
    std::string err;
    std::unique_ptr<MpiRun> mpi =
        MpiRun::create(mesh, timeoutSeconds, verifyCollectives, err);
    if (!mpi)
      die("--comm mpi: " + err);
    int64_t d = mpi->device();
    // MpiRun::abort prints the reason and stops every process of the job.
    runRank(d, &mpi->collectives(), [&](const std::string &e) {
      mpi->abort("rank " + std::to_string(d) + ": " + e);
    });
    // Rank 0 assembles and checks: every rank's results come to it.
    if (std::string e = mpi->gatherResults(schedule, outputs, outShapes);
        !e.empty())
      mpi->abort(e);
    mpi.reset();
    if (d != 0) {
      MpiRun::finalize();
      return 0;
    }
  } else {
    // --comm nccl: the ranks' collectives go through NCCL (one GPU each);
    // the in-process communicators only carry a failing rank's abort.
    if (commKind == "nccl")
      if (std::string err = cudaProgram->createNcclRanks(mesh, timeoutSeconds);
          !err.empty())
        die("--comm nccl: " + err);
    runInProcess(mesh, timeoutSeconds, verifyCollectives, mismatchRank,
                 [&](int64_t d, Collectives &comm, const AbortFn &abort) {
                   runRank(d, &comm, [&](const std::string &reason) {
                     if (commKind == "nccl")
                       cudaProgram->abortNccl("rank " + std::to_string(d) +
                                              ": " + reason);
                     abort(reason);
                   });
                 });
  }
  // Every rank's error: a failure on one rank stops the others, each
  // saying why.
  bool failed = false;
  for (const std::string &err : errors)
    if (!err.empty()) {
      llvm::errs() << "spmd-run: " << err << "\n";
      failed = true;
    }
  if (failed)
    return 1;
  if (cudaProgram)
    llvm::errs() << "spmd-run: --backend " << backendKind << ": "
                 << cudaProgram->summary()
                 << "; rank 0's step: " << deviceReport << "\n";

  // Assemble global results.
  std::vector<NpyArray> results(schedule.results.size());
  for (size_t i = 0; i < schedule.results.size(); ++i) {
    const TensorInfo &res = schedule.results[i];
    Layout layout = res.layout ? *res.layout : Layout::replicated(mesh.rank());
    // The global shape: a sharded dim sums the distinct chunks (devices at
    // coordinate 0 on every other axis), other dims are rank 0's.
    Shape global = outShapes[0][i];
    for (size_t k = 0; k < global.size(); ++k) {
      std::vector<int64_t> axes = layout.shardAxes(static_cast<int64_t>(k));
      if (axes.empty())
        continue;
      global[k] = 0;
      for (int64_t d = 0; d < numRanks; ++d) {
        std::vector<int64_t> coords = mesh.coords(d);
        bool distinct = true;
        for (size_t a = 0; a < coords.size(); ++a)
          if (coords[a] != 0 &&
              std::find(axes.begin(), axes.end(), int64_t(a)) == axes.end())
            distinct = false;
        if (distinct)
          global[k] += outShapes[d][i][k];
      }
    }
    NpyArray &out = results[i];
    out.dtype = res.type;
    out.shape = global;
    out.data.assign(numElements(global) * dtypeSize(res.type), 0);
    std::vector<ReduceKind> partialKinds;
    for (const Placement &p : layout.placements)
      if (p.isPartial())
        partialKinds.push_back(p.reduce);
    for (ReduceKind k : partialKinds)
      if (k != partialKinds[0])
        die("result " + std::to_string(i) + " is partial (" + layout.str() +
            ") with different reductions; it cannot be assembled");
    std::set<Shape> seenBoxes; // the first term of a partial box is copied
    int64_t partialCount = 1;
    for (size_t a = 0; a < layout.placements.size(); ++a)
      if (layout.placements[a].isPartial())
        partialCount *= mesh.axisSizes[a];
    for (int64_t d = 0; d < numRanks; ++d) {
      if (!isRepresentative(mesh, res.layout ? res.layout : layout, d))
        continue;
      std::vector<Range> ranges =
          localRanges(mesh, layout, global, mesh.coords(d));
      Shape offset, extent;
      for (const Range &r : ranges) {
        offset.push_back(r.offset);
        extent.push_back(r.size);
      }
      if (extent != outShapes[d][i])
        die("result " + std::to_string(i) + ": rank " + std::to_string(d) +
            " holds " + shapeStr(outShapes[d][i]) + " but the layout gives " +
            shapeStr(extent));
      if (partialKinds.empty() || seenBoxes.insert(offset).second) {
        copyBox(outputs[d][i].data(), extent, Shape(offset.size(), 0),
                out.data.data(), global, offset, extent, dtypeSize(res.type));
        continue;
      }
      // Partial: reduce this rank's term into the box.
      std::vector<char> box(outputs[d][i].size());
      copyBox(out.data.data(), global, offset, box.data(), extent,
              Shape(offset.size(), 0), extent, dtypeSize(res.type));
      reduceInto(box.data(), outputs[d][i].data(), numElements(extent),
                 res.type,
                 partialKinds[0] == ReduceKind::Avg ? ReduceKind::Sum
                                                    : partialKinds[0]);
      copyBox(box.data(), extent, Shape(offset.size(), 0), out.data.data(),
              global, offset, extent, dtypeSize(res.type));
    }
    if (!partialKinds.empty() && partialKinds[0] == ReduceKind::Avg)
      scaleBy(out.data.data(), numElements(global), res.type,
              static_cast<double>(partialCount));
  }

  if (!outputDir.empty()) {
    // Like other tools' -o, the output folder is made when it is missing.
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
      die(outputDir + ": cannot create the output folder: " + ec.message());
  }
  if (!outputDir.empty())
    for (size_t i = 0; i < results.size(); ++i)
      if (Status s = writeResult(
              outputDir + "/result" + std::to_string(i) + ".npy", results[i]);
          !s.ok())
        die(s.message());

  if (!check) {
    llvm::errs() << "spmd-run: " << schedule.name << " ran on " << numRanks
                 << " rank(s), " << steps << " step(s), "
                 << llvm::format("%.3f", stepSeconds * 1e3) << " ms/step\n";
    return 0;
  }

  // The unpartitioned program on one device, from the same global inputs.
  // A partitioned program's reference is the same global program compiled
  // without partitioning.
  std::string refPath = referenceFile.empty() ? inputFile : referenceFile;
  Program reference;
  loadProgram(ctx, refPath, reference, "off");
  Schedule &ref = reference.schedule;
  for (const Step &step : ref.steps)
    if (step.kind != StepKind::Kernel && step.kind != StepKind::Gemm &&
        step.kind != StepKind::Copy)
      die(refPath + ": --check needs an unpartitioned reference without "
                    "collectives (pass one with --reference)");
  ref.mesh = Mesh{{"world"}, {1}};
  if (ref.args.size() != globals.size() || ref.results.size() != results.size())
    die(refPath + ": reference " + ref.name + " takes " +
        std::to_string(ref.args.size()) + " arguments and returns " +
        std::to_string(ref.results.size()) + " results; the program has " +
        std::to_string(globals.size()) + " and " +
        std::to_string(results.size()));
  std::vector<std::vector<char>> refArgs;
  std::vector<void *> refPtrs;
  for (size_t i = 0; i < globals.size(); ++i) {
    if (ref.args[i].localShape != globals[i].shape)
      die(refPath + ": reference argument " + std::to_string(i) + " is " +
          shapeStr(ref.args[i].localShape) + ", the global input is " +
          shapeStr(globals[i].shape));
    refArgs.push_back(convert(globals[i], ref.args[i].type));
  }
  for (std::vector<char> &a : refArgs)
    refPtrs.push_back(a.data());
  Executor refExec(ref, reference.kernels.functions, nullptr);
  for (int64_t s = 0; s < steps; ++s) {
    if (std::string err = refExec.run(refPtrs); !err.empty())
      die(refPath + ": reference run: " + err);
    if (s + 1 < steps)
      for (size_t i = 0; i < fed && i < ref.results.size(); ++i)
        std::memmove(refPtrs[i], refExec.result(i, refPtrs), refArgs[i].size());
  }

  bool ok = true;
  for (size_t i = 0; i < results.size(); ++i) {
    const TensorInfo &res = schedule.results[i];
    if (ref.results[i].localShape != results[i].shape)
      die("result " + std::to_string(i) + ": global shape " +
          shapeStr(results[i].shape) + " but the reference returns " +
          shapeStr(ref.results[i].localShape));
    const void *expected = refExec.result(i, refPtrs);
    DType refType = ref.results[i].type;
    Tolerance tol = toleranceFor(res.type);
    if (atolOpt >= 0)
      tol.atol = atolOpt;
    if (rtolOpt >= 0)
      tol.rtol = rtolOpt;
    Layout layout = res.layout ? *res.layout : Layout::replicated(mesh.rank());
    double maxAbs = 0, maxRel = 0;
    int64_t nanInBoth = 0; // NaN where the reference has NaN too: a match
    std::string firstBad;
    // Per rank, so a mismatch names the rank; partial results are compared
    // assembled (no single rank holds the value).
    bool partial = layout.hasPartial();
    for (int64_t d = 0; d < (partial ? 1 : numRanks); ++d) {
      const Shape &shape = partial ? results[i].shape : outShapes[d][i];
      Shape offset(shape.size(), 0);
      if (!partial) {
        std::vector<Range> ranges =
            localRanges(mesh, layout, results[i].shape, mesh.coords(d));
        for (size_t k = 0; k < ranges.size(); ++k)
          offset[k] = ranges[k].offset;
      }
      std::vector<char> want(numElements(shape) * dtypeSize(refType));
      copyBox(expected, results[i].shape, offset, want.data(), shape,
              Shape(shape.size(), 0), shape, dtypeSize(refType));
      const char *got = partial ? results[i].data.data() : outputs[d][i].data();
      for (int64_t k = 0; k < numElements(shape); ++k) {
        double a = loadAsDouble(got, res.type, k);
        double b = loadAsDouble(want.data(), refType, k);
        if (std::isnan(a) && std::isnan(b)) {
          ++nanInBoth;
          continue;
        }
        if (a == b) // infinities included
          continue;
        double abs = std::fabs(a - b);
        double rel = abs / std::max(std::fabs(b), 1e-30);
        bool bad = !(abs <= tol.atol + tol.rtol * std::fabs(b));
        maxAbs = std::max(maxAbs, abs);
        if (std::fabs(b) > tol.atol)
          maxRel = std::max(maxRel, rel);
        if (bad && firstBad.empty())
          firstBad = "result " + std::to_string(i) + " mismatches on " +
                     (partial ? std::string("the assembled partial value")
                              : "rank " + std::to_string(d)) +
                     " at local element " + std::to_string(k) + ": got " +
                     std::to_string(a) + ", expected " + std::to_string(b) +
                     " (atol " + formatTolerance(tol.atol) + ", rtol " +
                     formatTolerance(tol.rtol) + ")";
      }
    }
    llvm::outs() << "result" << i << ": max abs err " << maxAbs
                 << ", max rel err " << maxRel;
    if (nanInBoth)
      llvm::outs() << ", " << nanInBoth << " NaN as in the reference";
    llvm::outs() << (firstBad.empty() ? " ok" : " MISMATCH") << "\n";
    if (!firstBad.empty()) {
      llvm::errs() << "spmd-run: " << firstBad << "\n";
      ok = false;
    }
  }
  llvm::outs() << (ok ? "check passed" : "check FAILED") << " (" << numRanks
               << " ranks, " << steps << " step(s))\n";
  return ok ? 0 : 1;
}
