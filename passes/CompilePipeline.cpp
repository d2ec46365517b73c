//===- CompilePipeline.cpp - spmd-compile: program to plan ----------------===//
//
// spmd-compile{partition=auto|on|off} takes a program to a plan. Whether the
// program is GLOBAL (partitioned here first) or already LOCAL (hand-written
// per-rank code, or spmd-partition's output) is decided in one place,
// spmd::isGlobalProgram:
//   * local: it has spmd collectives (or spmd.partial_from_replicated), or a
//     function argument carries spmd.global_type (spmd-partition's mark);
//   * global: otherwise, when it names a layout (spmd.layout on an argument,
//     result or op, or an spmd.constrain);
//   * neither (no layouts at all): compiled as is, on one device.
// partition=auto partitions global programs only; on always runs
// spmd-partition-pipeline (fold reshapes, propagate, partition, dedup, bucket)
// first; off compiles the program unpartitioned on one device (spmd.constrain
// is the identity on global values and is dropped): the reference of `spmd-run
// --check`.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/spmd/FunctionMesh.h"
#include "dialects/spmd/SPMDOps.h"
#include "dialects/spmd/SPMDPlanOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace spmd;

bool spmd::isGlobalProgram(ModuleOp module) {
  if (module->hasAttr(kPlanVersionAttrName))
    return false;
  bool hasLayouts = false, isLocal = false;
  module.walk([&](Operation *op) {
    if (isa<CollectiveOpInterface, PartialFromReplicatedOp>(op))
      isLocal = true;
    if (isa<ConstrainOp>(op) || op->hasAttr(SPMDDialect::kLayoutAttrName))
      hasLayouts = true;
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func)
      return;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      if (func.getArgAttr(i, SPMDDialect::kGlobalTypeAttrName))
        isLocal = true;
      if (func.getArgAttr(i, SPMDDialect::kLayoutAttrName))
        hasLayouts = true;
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (func.getResultAttr(i, SPMDDialect::kLayoutAttrName))
        hasLayouts = true;
  });
  return hasLayouts && !isLocal;
}

/// The canonicalizer with its default options, less MLIR 22's gpu
/// dialect's memref.dim pattern (registered with gpu.alloc, so it runs
/// wherever the gpu dialect is loaded, as in spmd-run): it checks a
/// constant dim index only against the rank and reads the shape at a
/// negative one (a segfault). passes/InputCheck.h rejects such an index
/// written as a constant; this covers one that folding makes (0 - 1).
static std::unique_ptr<Pass> createCompileCanonicalizer() {
  GreedyRewriteConfig config;
  config.setUseTopDownTraversal(true);
  return createCanonicalizerPass(
      config, {"(anonymous namespace)::SimplifyDimOfAllocOp"});
}

/// spmd-partition-pipeline's passes (passes/Pipelines.cpp), default caps.
static void addPartitionPasses(OpPassManager &pm, bool bucket) {
  spmd::buildPartitionPipeline(pm, bucket);
}

namespace {
/// The first step of spmd-compile: partitions a global program (mode on, or
/// auto and spmd::isGlobalProgram), or drops its spmd.constrain ops to
/// compile it on one device (mode off). A dynamic pipeline because the
/// choice depends on the module, not on the command line.
struct CompilePartitionStep
    : public PassWrapper<CompilePartitionStep, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CompilePartitionStep)
  CompilePartitionStep(std::string mode, bool bucket)
      : mode(std::move(mode)), bucket(bucket) {}
  CompilePartitionStep(const CompilePartitionStep &other)
      : PassWrapper(other), mode(other.mode), bucket(other.bucket) {}
  StringRef getArgument() const override {
    return "spmd-compile-partition-step";
  }
  StringRef getDescription() const override {
    return "partition a global program (spmd-compile's first step)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    OpPassManager pm(ModuleOp::getOperationName());
    addPartitionPasses(pm, bucket);
    pm.getDependentDialects(registry);
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A schedule runs on one mesh, whatever the mode: a local program (not
    // propagated) or mode off would otherwise compile to a plan that names
    // two meshes, rejected only when it is loaded.
    bool twoMeshes = false;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && failed(functionMesh(fn)))
        twoMeshes = true;
    if (twoMeshes)
      return signalPassFailure();
    if (mode == "off") {
      // One device: layouts mean nothing (an op's `spmd.layout`, as
      // spmd-auto-shard writes them, would reach bufferization).
      module.walk([](Operation *op) {
        if (auto c = dyn_cast<ConstrainOp>(op)) {
          c.getResult().replaceAllUsesWith(c.getInput());
          c.erase();
          return;
        }
        op->removeAttr(SPMDDialect::kLayoutAttrName);
      });
      return;
    }
    if (mode == "auto" && !isGlobalProgram(module))
      return markAllAnalysesPreserved();
    OpPassManager pm(ModuleOp::getOperationName());
    addPartitionPasses(pm, bucket);
    if (failed(runPipeline(pm, module)))
      return signalPassFailure();
    // The nested passes invalidated what they changed and were verified
    // after each (as under a pass adaptor): verifying the module again
    // would only repeat the last check.
    markAllAnalysesPreserved();
  }
  std::string mode;
  bool bucket;
};

/// Inlines helper functions into the entries (a schedule is one
/// straight-line sequence of steps) and drops the helpers. A program
/// without calls or private functions, the common case, only gets the
/// inliner's own clean-up, the canonicalizer on each function: the call
/// graph, SymbolDCE and their two verifications of the whole module are
/// skipped.
struct CompileInlineStep
    : public PassWrapper<CompileInlineStep, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CompileInlineStep)
  StringRef getArgument() const override { return "spmd-compile-inline-step"; }
  StringRef getDescription() const override {
    return "inline helper functions (spmd-compile's step after partitioning)";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool helpers = llvm::any_of(module.getOps<func::FuncOp>(),
                                [](func::FuncOp fn) { return fn.isPrivate(); });
    if (!helpers)
      helpers =
          module.walk([](CallOpInterface) { return WalkResult::interrupt(); })
              .wasInterrupted();
    OpPassManager pm(ModuleOp::getOperationName());
    if (helpers) {
      pm.addPass(createInlinerPass());
      pm.addPass(createSymbolDCEPass());
    } else {
      pm.addNestedPass<func::FuncOp>(createCompileCanonicalizer());
    }
    if (failed(runPipeline(pm, module)))
      return signalPassFailure();
    markAllAnalysesPreserved(); // as CompilePartitionStep
  }
};

enum class PartitionMode { Auto, On, Off };

struct CompilePipelineOptions
    : public PassPipelineOptions<CompilePipelineOptions> {
  Option<PartitionMode> partition{
      *this, "partition",
      llvm::cl::desc("whether to partition the program first"),
      llvm::cl::init(PartitionMode::Auto),
      llvm::cl::values(
          clEnumValN(PartitionMode::Auto, "auto",
                     "partition global annotated programs (layouts, no "
                     "collectives, no spmd.global_type)"),
          clEnumValN(PartitionMode::On, "on", "always partition"),
          clEnumValN(PartitionMode::Off, "off",
                     "compile unpartitioned (one device; a hand-written "
                     "local program as every rank's program)"))};
  Option<bool> scheduleCollectives{
      *this, "schedule-collectives",
      llvm::cl::desc("issue collectives as early as their operands allow "
                     "(spmd-schedule-collectives)"),
      llvm::cl::init(true)};
  Option<bool> bucket{*this, "bucket",
                      llvm::cl::desc("bucket the partitioned program's "
                                     "collectives (spmd-bucket-collectives)"),
                      llvm::cl::init(true)};
};
} // namespace

void spmd::buildCompilePipeline(OpPassManager &pm, StringRef partition,
                                bool scheduleCollectives, bool bucket) {
  // Random ops become index-based Philox generics on every path
  // (partitioned or not): the reference of --check draws the same values.
  pm.addPass(createSPMDExpandRandom());
  pm.addPass(std::make_unique<CompilePartitionStep>(partition.str(), bucket));
  pm.addPass(std::make_unique<CompileInlineStep>());
  // Embeddings' one-hot contractions become GEMMs (before fusion, which
  // would fuse into them what makes them elementwise chains again).
  pm.addPass(createSPMDOneHotMatmul());
  // Elementwise arith/math on tensors become linalg.generic, then fuse.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createSPMDFuseElementwise());
  pm.addPass(createCompileCanonicalizer());
  // After fusion (which places fused ops at their consumers): collectives
  // start as early as their data allows, for the GPU's streams to overlap.
  if (scheduleCollectives)
    pm.addNestedPass<func::FuncOp>(createSPMDScheduleCollectives());
  pm.addPass(createSPMDBufferize());
  pm.addPass(createCompileCanonicalizer());
  pm.addPass(createSPMDOutlinePlan());
  pm.addPass(createSPMDPlanMemory());
}

void spmd::registerCompilePipeline() {
  PassPipelineRegistration<CompilePipelineOptions>(
      "spmd-compile",
      "Compile a program to a plan: partition a global program (see "
      "partition=), fuse, bufferize, outline kernels, GEMMs and collectives, "
      "plan memory",
      [](OpPassManager &pm, const CompilePipelineOptions &options) {
        PartitionMode mode = options.partition;
        buildCompilePipeline(pm,
                             mode == PartitionMode::On    ? "on"
                             : mode == PartitionMode::Off ? "off"
                                                          : "auto",
                             options.scheduleCollectives, options.bucket);
      });
}
