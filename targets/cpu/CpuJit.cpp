//===- CpuJit.cpp - a plan's kernels as native code -----------------------===//

#include "targets/cpu/CpuJit.h"

#include "dialects/spmd/SPMDPlanOps.h"
#include "targets/cpu/OneHotLoops.h"
#include "targets/plan/PlanLoader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"

using namespace mlir;
using namespace spmd;

/// erf, tanh, exp, log and their kin as polynomials (MLIR's f32
/// approximations, a few ULP) instead of libm calls, which keep LLVM from
/// vectorizing the loops around them (GELU's erf, softmax's exp).
static void approximateMath(ModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
    name.consume_front("math.");
    return llvm::is_contained(
        {"erf", "tanh", "exp", "expm1", "log", "log1p", "log2"}, name);
  });
  GreedyRewriteConfig config;
  config.enableFolding(false);
  (void)applyPatternsGreedily(module, std::move(patterns), config);
}

LogicalResult spmd::compileKernels(ModuleOp plan,
                                   const plan::Schedule &schedule,
                                   CompiledKernels &kernels,
                                   std::string &error) {
  MLIRContext *ctx = plan.getContext();
  // Only the kernels go to LLVM; each gets a C interface taking descriptor
  // pointers (see runtime/Executor.h).
  OwningOpRef<ModuleOp> module = ModuleOp::create(plan.getLoc());
  OpBuilder builder(ctx);
  builder.setInsertionPointToEnd(module->getBody());
  for (const std::string &name : schedule.kernels) {
    auto func = plan.lookupSymbol<func::FuncOp>(name);
    if (!func || !func->hasAttr(kPlanKernelAttrName)) {
      error = "plan has no kernel function @" + name;
      return failure();
    }
    auto clone = cast<func::FuncOp>(builder.clone(*func));
    clone->removeAttr(kPlanKernelAttrName);
    clone->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                   builder.getUnitAttr());
  }
  // Embedding lookups and their backward as gathers and scatter-adds, not
  // loops over the vocabulary.
  ctx->getOrLoadDialect<scf::SCFDialect>();
  rewriteOneHotContractions(*module);
  approximateMath(*module);
  PassManager pm(ctx);
  if (failed(parsePassPipeline(
          "func.func(convert-linalg-to-loops),"
          "expand-strided-metadata,lower-affine,convert-scf-to-cf,"
          "convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,"
          "convert-index-to-llvm,finalize-memref-to-llvm,convert-func-to-llvm,"
          "convert-cf-to-llvm,reconcile-unrealized-casts",
          pm))) {
    error = "internal error: bad kernel lowering pipeline";
    return failure();
  }
  if (failed(captureDiagnostics(ctx, error, [&] { return pm.run(*module); }))) {
    error = "lowering the kernels to LLVM failed:\n" + error;
    return failure();
  }
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  ExecutionEngineOptions options;
  // Optimize for this CPU: without a target machine LLVM's vectorizers see
  // no vector registers and every kernel stays a scalar loop.
  std::unique_ptr<llvm::TargetMachine> host;
  if (auto builder = llvm::orc::JITTargetMachineBuilder::detectHost()) {
    if (auto machine = builder->createTargetMachine())
      host = std::move(*machine);
    else
      llvm::consumeError(machine.takeError());
  } else {
    llvm::consumeError(builder.takeError());
  }
  // O2: the vectorizers at a lower compile time than O3 (the same step
  // time on the GPT of bench/step/gpt_step.py).
  // ExecutionEngineOptions::transformer is a function_ref: the function it
  // refers to must outlive ExecutionEngine::create. (Assigned the temporary
  // makeOptimizingTransformer returns, it dangled: the O3 pipeline ran, if
  // at all, without the host's target machine, and no kernel loop was ever
  // vectorized — scalar vaddss even for x * 2 + 1.)
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(2, 0, host.get());
  options.transformer = optimize;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto engine = ExecutionEngine::create(*module, options);
  if (!engine) {
    error = "JIT compilation of the kernels failed: " +
            llvm::toString(engine.takeError());
    return failure();
  }
  kernels.engine = std::move(*engine);
  for (const std::string &name : schedule.kernels) {
    auto fn = kernels.engine->lookupPacked("_mlir_ciface_" + name);
    if (!fn) {
      error = "kernel " + name +
              " not found after JIT: " + llvm::toString(fn.takeError());
      return failure();
    }
    kernels.functions.push_back(reinterpret_cast<plan::KernelFn>(*fn));
  }
  return success();
}
