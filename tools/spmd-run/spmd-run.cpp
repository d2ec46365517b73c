//===- spmd-run.cpp - Run a plan on simulated ranks ---------------------===//
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
// --steps K feeds result i back to argument i between steps; --warmup W
// leaves the first W of them out of the ms/step it prints.
//
// The work is in the libraries: targets/cpu/CpuProgram (load and compile),
// targets/cuda/CudaBackend (GPU preparation), runtime/GlobalIO (inputs,
// scatter, assembly), runtime/RankSteps and runtime/cuda/DeviceSteps (a
// rank's steps), runtime/Ranks (threads or mpirun), runtime/Check (--check).
//
//===----------------------------------------------------------------------===//

#include "targets/cpu/CpuProgram.h"
#include "targets/cuda/CudaBackend.h"

#include "dialects/spmd/SPMDDialect.h"
#include "runtime/BlasCore.h"
#include "runtime/Check.h"
#include "runtime/GlobalIO.h"
#include "runtime/RankSteps.h"
#include "runtime/Ranks.h"
#include "runtime/Trace.h"
#include "runtime/Workers.h"
#include "runtime/cuda/DeviceSteps.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>

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
static llvm::cl::opt<int64_t> warmup(
    "warmup",
    llvm::cl::desc("of the --steps, how many run before the timer starts "
                   "(the first pays for set-up: GEMM algorithm choice, "
                   "kernel loading, graph capture)"),
    llvm::cl::init(0));
static llvm::cl::opt<int64_t> threadsPerRank(
    "threads-per-rank",
    llvm::cl::desc("compute threads per rank for GEMMs and kernels (default: "
                   "this machine's cores divided among its ranks; "
                   "SPMD_THREADS_PER_RANK overrides)"),
    llvm::cl::init(0));
static llvm::cl::opt<bool> printPlan("print-plan",
                                     llvm::cl::desc("print the schedule"));
static llvm::cl::opt<bool>
    printBlas("print-blas",
              llvm::cl::desc("print the BLAS library and the CPU core its "
                             "kernels are for"));
static llvm::cl::opt<std::string>
    traceFile("trace",
              llvm::cl::desc("write a Chrome trace (JSON trace events; opens "
                             "in Perfetto) of every rank's steps to this file "
                             "(under mpirun: FILE.rank<R> per process)"));
static llvm::cl::opt<bool>
    profile("profile", llvm::cl::desc("print where rank 0's time went: by "
                                      "step kind, and the top kernels"));
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
static llvm::cl::opt<int64_t> exitRank(
    "test-exit-rank", llvm::cl::Hidden, llvm::cl::init(-1),
    llvm::cl::desc("under mpirun, this process calls exit(1) after reading "
                   "its inputs, as library code may, bypassing die()"));
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
/// Set once this process's ranks have run: an mpirun process that exits
/// before (through exit() in code that does not know about MPI, such as
/// LLVM's fatal errors) must stop the job rather than wait in MPI_Finalize
/// for the others, which wait for it.
bool ranksHaveRun = false;

void finalizeMpiAtExit() {
  if (!ranksHaveRun && MpiRun::active())
    MpiRun::abortJob("spmd-run: exited before its rank ran; stopping the job");
  MpiRun::finalize();
}

[[noreturn]] void die(const std::string &message) {
  // Under mpirun an error of one rank stops the whole job: exiting alone
  // would leave this rank in MPI_Finalize and the others waiting for it.
  if (MpiRun::active())
    MpiRun::abortJob("spmd-run: " + message);
  llvm::errs() << "spmd-run: " << message << "\n";
  std::exit(1);
}

void parseOptions(int argc, char **argv) {
  // --help lists spmd-run's options, not the hundreds libLLVM registers.
  static llvm::cl::OptionCategory runCategory("spmd-run options");
  for (llvm::cl::Option *opt : std::initializer_list<llvm::cl::Option *>{
           &inputFile,      &entryName,     &ranksOpt,      &inputDir,
           &seed,           &outputDir,     &check,         &atolOpt,
           &rtolOpt,        &referenceFile, &partitionMode, &steps,
           &printPlan,      &printBlas,     &commKind,      &verifyCollectives,
           &timeoutSeconds, &backendKind,   &cudaGraph,     &allowTF32,
           &emuCxx,         &emuDir,        &traceFile,     &profile,
           &warmup})
    opt->addCategory(runCategory);
  llvm::cl::HideUnrelatedOptions(runCategory);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "spmd-run: run a global program or a plan on simulated ranks "
      "(threads) or MPI processes, optionally checked against the "
      "unpartitioned program\n");
}

void checkOptions() {
  if (!inputDir.empty() && seed.getNumOccurrences())
    die("--input-dir and --seed exclude each other");
  if (steps < 1)
    die("--steps must be at least 1");
  if (warmup < 0 || warmup >= steps)
    die("--warmup must be at least 0 and less than --steps (" +
        std::to_string(steps) + ")");
  if (commKind != "inproc" && commKind != "mpi" && commKind != "nccl")
    die("--comm must be inproc, mpi or nccl, not '" + commKind + "'");
  if (backendKind != "cpu" && backendKind != "cuda" &&
      backendKind != "cuda-emu")
    die("--backend must be cpu, cuda or cuda-emu, not '" + backendKind + "'");
  if (commKind == "nccl" && backendKind != "cuda")
    die("--comm nccl needs --backend cuda");
  if ((cudaGraph || allowTF32) && backendKind == "cpu")
    die(std::string(cudaGraph ? "--cuda-graph" : "--tf32") +
        " needs --backend cuda or cuda-emu");
  if (partitionMode != "auto" && partitionMode != "on" &&
      partitionMode != "off")
    die("--partition must be auto, on or off, not '" + partitionMode + "'");
}

void registerEverything(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registry.insert<SPMDDialect>();
  registerAllPasses();
}

void loadProgram(MLIRContext &ctx, const std::string &file, StringRef partition,
                 CpuProgram &program) {
  std::string error;
  if (failed(loadCpuProgram(ctx, file, entryName, partition, program, error)))
    die(error);
}

/// --backend cuda/cuda-emu: the plan prepared for the GPU executor.
std::unique_ptr<CudaProgram> prepareDevice(CpuProgram &program) {
  CudaRunOptions options;
  options.emulate = backendKind == "cuda-emu";
  options.cxx = emuCxx;
  options.workDir = emuDir;
  options.comm = commKind;
  std::unique_ptr<CudaProgram> cudaProgram;
  if (std::string err =
          prepareCuda(*program.module, program.schedule, options, cudaProgram);
      !err.empty())
    die("--backend " + backendKind + ": " + err);
  return cudaProgram;
}

/// --steps: says which results feed which arguments, and the first pair
/// that does not, rather than feeding a mismatched tensor. (Under mpirun,
/// only the first process says it.)
void reportFeeding(const Schedule &schedule, size_t fed) {
  const char *mpiRank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (steps <= 1 ||
      (commKind == "mpi" && mpiRank && std::string(mpiRank) != "0"))
    return;
  if (fed == 0)
    llvm::errs() << "spmd-run: --steps: no result feeds an argument";
  else
    llvm::errs() << "spmd-run: --steps: results 0.." << fed - 1
                 << " feed arguments 0.." << fed - 1;
  size_t pairs = std::min(schedule.results.size(), schedule.args.size());
  if (fed < pairs)
    llvm::errs() << "; result " << fed << " ("
                 << describeTensor(schedule.mesh, schedule.results[fed])
                 << ") does not match argument " << fed << " ("
                 << describeTensor(schedule.mesh, schedule.args[fed]) << ")";
  llvm::errs() << "\n";
}

/// --print-plan: what a rank holds, by the memory plan (the arena of
/// intermediates, the same on every rank) and its argument blocks (which
/// differ across ranks with uneven shards).
void printMemory(const Schedule &schedule, const RankBlocks &local) {
  int64_t least = INT64_MAX, most = 0;
  for (const auto &blocks : local) {
    int64_t bytes = 0;
    for (const std::vector<char> &block : blocks)
      bytes += static_cast<int64_t>(block.size());
    least = std::min(least, bytes);
    most = std::max(most, bytes);
  }
  llvm::outs() << "memory per rank: arena " << schedule.arenaBytes
               << " bytes + arguments " << least;
  if (most != least)
    llvm::outs() << ".." << most;
  llvm::outs() << " bytes = peak " << schedule.arenaBytes + most
               << " bytes (runtime-sized buffers of uneven shards apart)\n";
}

/// Every rank's run: its inputs, and what it gave back.
struct Run {
  const CpuProgram &program;
  CudaProgram *cudaProgram; // null on the CPU
  RankBlocks local;
  RankShapes localShapes;
  size_t fed = 0;
  RankBlocks outputs;
  RankShapes outShapes;
  std::vector<std::string> errors;
  double stepSeconds = 0;   // rank 0's mean time per step
  std::string deviceReport; // rank 0's overlap on a device backend
  std::vector<std::vector<TraceEvent>> traces; // per rank, --trace/--profile

  /// Rank `d`'s steps; on failure records the error and calls `abort`.
  void runRank(int64_t d, Collectives *comm, const AbortFn &abort);
  /// Runs every rank; false in an mpirun job's processes other than rank
  /// 0's, which have no more to do.
  bool runRanks();
  /// The --trace file of `ranks` (a track each) and, for rank 0, the
  /// --profile summary.
  void writeTrace(const std::string &path, const std::vector<int64_t> &ranks);
};

void Run::writeTrace(const std::string &path,
                     const std::vector<int64_t> &ranks) {
  if (!path.empty())
    if (std::string err = writeChromeTrace(path, traces, ranks); !err.empty())
      die("--trace: " + err);
  if (profile && llvm::is_contained(ranks, 0))
    llvm::errs() << "spmd-run: " << profileSummary(traces[0], steps, 0);
}

void Run::runRank(int64_t d, Collectives *comm, const AbortFn &abort) {
  auto fail = [&](const std::string &err) {
    errors[d] = "rank " + std::to_string(d) + ": " + err;
    abort(err);
  };
  const Schedule &schedule = program.schedule;
  std::unique_ptr<RankSteps> rank;
  if (cudaProgram) {
    cuda::DeviceExecutorOptions options;
    options.cudaGraph = cudaGraph;
    options.allowTF32 = allowTF32;
    // Verification needs the collectives' own exchange.
    options.planShapes = !verifyCollectives;
    std::unique_ptr<cuda::DeviceBackend> backend;
    if (std::string err = cudaProgram->openRank(d, comm, backend); !err.empty())
      return fail(err);
    std::string err;
    rank = cuda::DeviceSteps::create(std::move(backend), schedule,
                                     cudaProgram->specs(), d, options, local[d],
                                     localShapes, err);
    if (!rank)
      return fail(err);
  } else {
    rank = std::make_unique<CpuSteps>(schedule, program.kernels.functions, comm,
                                      local[d], localShapes[d]);
  }
  if (d == failRank)
    rank->failBeforeStep(failStep);
  if ((!traceFile.empty() || profile) && !rank->setTrace(&traces[d]) && d == 0)
    llvm::errs() << "spmd-run: --trace/--profile: the " << backendKind
                 << " backend does not record steps yet\n";
  // Progress: about ten lines however many steps.
  auto progress = [&](int64_t done) {
    if (d == 0 && done % std::max<int64_t>(1, steps / 10) == 0)
      llvm::errs() << "spmd-run: step " << done << "/" << steps << " done\n";
  };
  double seconds = 0;
  if (std::string err = runSteps(*rank, steps, fed, progress, seconds, warmup);
      !err.empty())
    return fail(err);
  if (d == 0) {
    deviceReport = rank->report();
    stepSeconds = seconds;
  }
  if (std::string err = rank->results(outputs[d], outShapes[d]); !err.empty())
    return fail(err);
}

bool Run::runRanks() {
  const Mesh &mesh = program.schedule.mesh;
  outputs.assign(mesh.numDevices(), {});
  outShapes.assign(mesh.numDevices(), {});
  errors.assign(mesh.numDevices(), "");
  traces.assign(mesh.numDevices(), {});
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
    writeTrace(traceFile.empty() ? "" : traceFile + ".rank" + std::to_string(d),
               {d});
    // Rank 0 assembles and checks: every rank's results come to it.
    if (std::string e =
            mpi->gatherResults(program.schedule, outputs, outShapes);
        !e.empty())
      mpi->abort(e);
    return d == 0;
  }
  // --comm nccl: the ranks' collectives go through NCCL (one GPU each); the
  // in-process communicators only carry a failing rank's abort.
  if (commKind == "nccl")
    if (std::string err = cudaProgram->createNcclRanks(mesh, timeoutSeconds);
        !err.empty())
      die("--comm nccl: " + err);
  if (std::string err =
          runInProcess(mesh, timeoutSeconds, verifyCollectives, mismatchRank,
                       [&](int64_t d, Collectives &comm, const AbortFn &abort) {
                         runRank(d, &comm, [&](const std::string &reason) {
                           if (commKind == "nccl")
                             cudaProgram->abortNccl(
                                 "rank " + std::to_string(d) + ": " + reason);
                           abort(reason);
                         });
                       });
      !err.empty())
    die(err);
  if (std::all_of(errors.begin(), errors.end(),
                  [](const std::string &e) { return e.empty(); })) {
    std::vector<int64_t> all(mesh.numDevices());
    for (int64_t d = 0; d < mesh.numDevices(); ++d)
      all[d] = d;
    writeTrace(traceFile, all);
  }
  return true;
}

void writeOutputs(const std::vector<NpyArray> &results) {
  if (outputDir.empty())
    return;
  // Like other tools' -o, the output folder is made when it is missing.
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    die(outputDir + ": cannot create the output folder: " + ec.message());
  if (Status s = writeResults(outputDir, results); !s.ok())
    die(s.message());
}

/// --check's reference: the unpartitioned program (`--reference`, or the
/// same global program compiled without partitioning).
std::string referencePath() {
  return referenceFile.empty() ? inputFile : referenceFile;
}

/// Whether this process checks the results (--check; under mpirun, the
/// first process): it compiles the reference before the run, for the
/// memory check to count it.
bool checksHere() {
  const char *mpiRank = std::getenv("OMPI_COMM_WORLD_RANK");
  return check &&
         (commKind != "mpi" || !mpiRank || std::string(mpiRank) == "0");
}

/// --check: `program` (the reference, one device) from the same global
/// inputs, against every result; the exit code.
int checkResults(CpuProgram &program, const Run &run,
                 const std::vector<NpyArray> &globals,
                 const std::vector<NpyArray> &results) {
  const Schedule &schedule = run.program.schedule;
  std::string refPath = referencePath();
  Schedule &ref = program.schedule;
  // The reference runs alone: every core is its.
  setRankThreads(1, threadsPerRank);
  Reference reference;
  if (Status s = reference.run(ref, program.kernels.functions, globals,
                               results.size(), steps, run.fed, refPath);
      !s.ok())
    die(s.message());
  bool ok = true;
  for (size_t i = 0; i < results.size(); ++i) {
    if (ref.results[i].localShape != results[i].shape)
      die("result " + std::to_string(i) + ": global shape " +
          shapeStr(results[i].shape) + " but the reference returns " +
          shapeStr(ref.results[i].localShape));
    ResultCheck c =
        compareResult(schedule, i, results[i], run.outputs, run.outShapes,
                      reference.result(i), ref.results[i].type,
                      toleranceFor(schedule.results[i].type, atolOpt, rtolOpt));
    llvm::outs() << "result" << i << ": max abs err " << c.maxAbs
                 << ", max rel err " << c.maxRel;
    if (c.nanInBoth)
      llvm::outs() << ", " << c.nanInBoth << " NaN as in the reference";
    llvm::outs() << (c.firstBad.empty() ? " ok" : " MISMATCH") << "\n";
    if (!c.firstBad.empty()) {
      llvm::errs() << "spmd-run: " << c.firstBad << "\n";
      ok = false;
    }
  }
  llvm::outs() << (ok ? "check passed" : "check FAILED") << " ("
               << schedule.mesh.numDevices() << " ranks, " << steps
               << " step(s))\n";
  return ok ? 0 : 1;
}
} // namespace

int main(int argc, char **argv) {
  // Before anything else: OpenBLAS reads OPENBLAS_CORETYPE only when it
  // loads, so a better core than its fallback needs a fresh start.
  spmd::reexecForBlasCore(argv);
  llvm::InitLLVM init(argc, argv);
  parseOptions(argc, argv);
  if (printBlas)
    llvm::outs() << "blas: " << spmd::describeBlas() << "\n";
  DialectRegistry registry;
  registerEverything(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  if (commKind == "mpi") {
    if (std::string err = MpiRun::initialize(&argc, &argv); !err.empty())
      die("--comm mpi: " + err);
    // Rank 0 goes on to assemble and check; it finalizes however it exits.
    std::atexit(finalizeMpiAtExit);
  }
  checkOptions();

  CpuProgram program;
  loadProgram(ctx, inputFile, partitionMode, program);
  const Schedule &schedule = program.schedule;
  int64_t numRanks = schedule.mesh.numDevices();
  if (ranksOpt.getNumOccurrences() && ranksOpt != numRanks)
    die("--ranks " + std::to_string(ranksOpt) + " does not match the mesh of " +
        std::to_string(numRanks) + " devices");
  // The cores are shared among the ranks this machine runs.
  setRankThreads(commKind == "mpi" ? localRanks() : numRanks, threadsPerRank);
  std::unique_ptr<CpuProgram> reference;
  if (checksHere()) {
    reference = std::make_unique<CpuProgram>();
    loadProgram(ctx, referencePath(), "off", *reference);
  }
  if (std::string err =
          checkRunResources(schedule, commKind != "mpi", availableMemoryBytes(),
                            reference ? &reference->schedule : nullptr);
      !err.empty())
    die(inputFile + ": " + err);
  if (printPlan)
    llvm::outs() << schedule.str();
  std::unique_ptr<CudaProgram> cudaProgram;
  if (backendKind != "cpu")
    cudaProgram = prepareDevice(program);

  std::vector<NpyArray> globals;
  if (Status s = loadInputs(schedule, inputDir, seed, globals); !s.ok())
    die(s.message());
  Run run{program, cudaProgram.get()};
  scatterInputs(schedule, globals, run.local, run.localShapes);
  if (printPlan)
    printMemory(schedule, run.local);
  run.fed = feedablePrefix(schedule);
  reportFeeding(schedule, run.fed);
  if (const char *r = std::getenv("OMPI_COMM_WORLD_RANK");
      exitRank >= 0 && commKind == "mpi" && r && std::to_string(exitRank) == r)
    std::exit(1);

  // All ranks as threads of this process (inproc), or this process's rank
  // of an mpirun job (mpi).
  bool assembles = run.runRanks();
  ranksHaveRun = true;
  if (!assembles) {
    MpiRun::finalize();
    return 0;
  }
  // Every rank's error: a failure on one rank stops the others, each
  // saying why.
  bool failed = false;
  for (const std::string &err : run.errors)
    if (!err.empty()) {
      llvm::errs() << "spmd-run: " << err << "\n";
      failed = true;
    }
  if (failed)
    return 1;
  if (cudaProgram)
    llvm::errs() << "spmd-run: --backend " << backendKind << ": "
                 << cudaProgram->summary()
                 << "; rank 0's step: " << run.deviceReport << "\n";

  std::vector<NpyArray> results;
  if (Status s = assembleResults(schedule, run.outputs, run.outShapes, results);
      !s.ok())
    die(s.message());
  writeOutputs(results);
  if (!check) {
    llvm::errs() << "spmd-run: " << schedule.name << " ran on " << numRanks
                 << " rank(s), " << steps << " step(s), "
                 << llvm::format("%.3f", run.stepSeconds * 1e3) << " ms/step"
                 << (warmup
                         ? " (the last " + std::to_string(steps - warmup) + ")"
                         : std::string())
                 << "\n";
    return 0;
  }
  if (!reference) {
    reference = std::make_unique<CpuProgram>();
    loadProgram(ctx, referencePath(), "off", *reference);
  }
  return checkResults(*reference, run, globals, results);
}
