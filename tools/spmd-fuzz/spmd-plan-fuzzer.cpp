//===- spmd-plan-fuzzer.cpp - libFuzzer target: the plan loader -----------===//
//
// Each input is MLIR source text of a plan (spmd-compile's output: a module
// with spmd.plan_version whose entries are functions of `spmd.plan_*`
// steps). It goes through what spmd-run does with a plan file before
// running it: the scan for text upstream's parser crashes on
// (core/ParseHazards.h), parsing with spmd-run's dialects and the
// verifiers (targets/plan/PlanLoader.h's parseProgramBuffer), the plan
// version check, the conversion of every entry into the runtime's plan
// model with its checks (loadSchedule, plan::Schedule::validate), the run's
// resource check (plan::checkRunResources) and --print-plan's listing. A
// module that is not a plan is rejected, never compiled (that would be
// spmd-parse-fuzzer's and the passes' business).
//
// Small entries (at most kRunRanks devices, kRunBytes of arena and of
// runtime-sized buffers per rank) are then run once as spmd-run --seed 1
// runs them: generated global inputs scattered by the argument layouts
// (runtime/GlobalIO.h), every rank a thread with in-process collectives, a
// failing rank aborting the others (a 5 s collective timeout as the
// backstop), on the CPU executor (runtime/RankSteps.h, runtime/Executor.h):
// GEMMs, copies, collectives and the run-time sizes of runtime-sized
// buffers. Kernels are no-op stand-ins (the JIT is the CPU target's, not
// the loader's), so only what the executor does around them runs. The
// results are assembled by their layouts, as spmd-run assembles them. The
// size bounds keep a run short (a GEMM at most ~512^3).
//
// A crash, an abort or an assertion is a finding; an error is the expected
// answer to most inputs.
//
// Built only with -DSPMD_FUZZERS=ON and clang (tools/spmd-fuzz/README.md):
//   build-fuzz/bin/spmd-plan-fuzzer -max_total_time=300 corpus-plan/
//
//===----------------------------------------------------------------------===//

#include "dialects/spmd/SPMDOps.h"
#include "dialects/spmd/SPMDPlanOps.h"
#include "runtime/CommCollectives.h"
#include "runtime/GlobalIO.h"
#include "runtime/InProcessComm.h"
#include "runtime/Plan.h"
#include "runtime/RankBuffers.h"
#include "runtime/RankSteps.h"
#include "runtime/Workers.h"
#include "targets/plan/PlanLoader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

/// spmd-run's dialects (its translations only matter to the JIT).
static mlir::DialectRegistry &registry() {
  static mlir::DialectRegistry *r = [] {
    auto *reg = new mlir::DialectRegistry();
    mlir::registerAllDialects(*reg);
    mlir::registerAllExtensions(*reg);
    reg->insert<spmd::SPMDDialect>();
    return reg;
  }();
  return *r;
}

/// The memory the resource check is given: fixed, so that a verdict does
/// not depend on the machine's free memory.
static constexpr int64_t kAvailableBytes = int64_t(1) << 30;

/// SPMD_PLAN_FUZZER_VERBOSE=1: one line per entry on stderr saying how far
/// it got (for looking at a corpus: `-runs=0 corpus/`).
static bool verbose() {
  static bool v = std::getenv("SPMD_PLAN_FUZZER_VERBOSE") != nullptr;
  return v;
}

static void note(llvm::StringRef entry, llvm::StringRef what,
                 llvm::StringRef detail = "") {
  if (verbose())
    llvm::errs() << "entry '" << entry << "': " << what
                 << (detail.empty() ? "" : ": ") << detail << "\n";
}

/// Runs of small entries: at most kRunRanks devices, each of arena and
/// runtime-sized buffers at most kRunBytes per rank, and the arguments
/// (global values and every rank's blocks) at most kRunRanks * kRunBytes.
static constexpr int64_t kRunBytes = int64_t(1) << 20;
static constexpr int64_t kRunRanks = 8;

/// Runs a small `schedule` once the way spmd-run does (see the file
/// comment).
static void runSchedule(const spmd::plan::Schedule &schedule) {
  using namespace spmd::plan;
  int64_t numRanks = schedule.mesh.numDevices();
  if (numRanks > kRunRanks || schedule.arenaBytes > kRunBytes ||
      !checkRunResources(schedule, /*ranksAsThreads=*/false,
                         kRunRanks * kRunBytes)
           .empty())
    return note(schedule.name, "loaded, not run (size)");
  // spmd-run --seed 1: generated global inputs, every rank's block of them.
  std::vector<spmd::NpyArray> globals;
  if (spmd::Status s = loadInputs(schedule, "", 1, globals); !s.ok())
    return note(schedule.name, "inputs", s.message());
  RankBlocks local;
  RankShapes localShapes;
  scatterInputs(schedule, globals, local, localShapes);
  // What the executors will allocate for the runtime-sized buffers.
  for (int64_t d = 0; d < numRanks; ++d) {
    RankBuffers probe;
    if (std::string err = probe.bind(schedule, d, localShapes[d], 64);
        !err.empty())
      return note(schedule.name, "sizes", err);
    if (probe.heapBytes() > kRunBytes)
      return note(schedule.name, "loaded, not run (runtime-sized buffers)");
  }
  std::vector<KernelFn> kernels(schedule.kernels.size(), [](void **) {});
  spmd::InProcessOptions options;
  options.timeoutSeconds = 5;
  spmd::InProcessWorld world(schedule.mesh, options);
  std::vector<std::string> errors(numRanks);
  RankBlocks outputs(numRanks);
  RankShapes outShapes(numRanks);
  std::string err = world.run([&](spmd::InProcessComm &comm) {
    int64_t d = comm.device();
    CommCollectives collectives(comm);
    CpuSteps rank(schedule, kernels, &collectives, local[d], localShapes[d]);
    errors[d] = rank.run();
    if (errors[d].empty())
      errors[d] = rank.results(outputs[d], outShapes[d]);
    // A failing rank stops the others' collectives (spmd-run's abort).
    if (!errors[d].empty())
      comm.abort(errors[d]);
  });
  for (const std::string &e : errors)
    if (err.empty())
      err = e;
  // The global results from every rank's blocks (partial ones reduced).
  std::vector<spmd::NpyArray> results;
  if (err.empty())
    if (spmd::Status s = assembleResults(schedule, outputs, outShapes, results);
        !s.ok())
      err = s.message();
  note(schedule.name, err.empty() ? "ran" : "run failed", err);
}

static void loadEntry(mlir::ModuleOp module, llvm::StringRef entry) {
  spmd::plan::Schedule schedule;
  std::string error;
  if (mlir::failed(spmd::loadSchedule(module, entry, schedule, error)))
    return note(entry, "not loaded", error);
  // spmd-run: threads (in-process ranks) and MPI ranks.
  for (bool threads : {true, false})
    if (std::string err =
            spmd::plan::checkRunResources(schedule, threads, kAvailableBytes);
        !err.empty())
      return note(entry, "resources", err);
  (void)schedule.str(); // --print-plan
  runSchedule(schedule);
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  spmd::plan::setRankThreads(1, 1); // and OpenBLAS on one thread
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef source(reinterpret_cast<const char *>(data), size);
  mlir::MLIRContext context(registry(), mlir::MLIRContext::Threading::DISABLED);
  // Diagnostics are the expected outcome; printing them would only slow
  // the fuzzer down.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::SourceMgr sourceMgr;
  mlir::OwningOpRef<mlir::ModuleOp> module = spmd::parseProgramBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "input.mlir"), sourceMgr,
      &context);
  // Not a plan: spmd-run would compile it; this target does not.
  if (!module || !spmd::isPlan(*module)) {
    note("", module ? "not a plan" : "not parsed");
    return 0;
  }
  std::string error;
  if (mlir::failed(spmd::checkPlanVersion(*module, "input.mlir", error))) {
    note("", "version", error);
    return 0;
  }
  // spmd-run without --entry (one entry, or an error), then every entry.
  loadEntry(*module, "");
  for (auto func : module->getOps<mlir::func::FuncOp>())
    if (func->hasAttr(spmd::kPlanArenaAttrName))
      loadEntry(*module, func.getSymName());
  return 0;
}
