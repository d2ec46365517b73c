//===- CpuJit.cpp - a plan's kernels as native code -----------------------===//

#include "targets/cpu/CpuJit.h"

#include "dialects/spmd/SPMDPlanOps.h"
#include "runtime/DType.h"
#include "targets/cpu/OneHotLoops.h"
#include "targets/plan/PlanLoader.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstring>

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

/// f32 -> bf16 as compiler-rt's `__truncsfbf2` (runtime's floatToBF16:
/// nearest even, NaNs quiet): LLVM 22's x86 backend calls it for bf16
/// arithmetic (computed in f32, rounded after each op) and Debian 12's
/// libgcc does not have it, so the JIT resolves it here. The ABI returns a
/// bf16 in the low 16 bits of XMM0, where a float with those bits is.
extern "C" float spmdTruncSfBf2(float x) {
  uint32_t half = floatToBF16(x);
  float out;
  std::memcpy(&out, &half, sizeof out);
  return out;
}

/// The extent of `kernel`'s outermost loop and its iterations in all when
/// that loop can be split among threads: the body is one linalg op (after
/// constants) with static loop ranges whose loop 0 is parallel and indexes
/// every output through a projected permutation, so different ranges of it
/// write disjoint elements.
static plan::Schedule::KernelSplit splittable(func::FuncOp kernel) {
  linalg::LinalgOp op;
  for (Operation &o : kernel.getBody().front()) {
    if (isa<arith::ConstantOp, func::ReturnOp>(o))
      continue;
    auto linalg = dyn_cast<linalg::LinalgOp>(o);
    if (!linalg || op)
      return {};
    op = linalg;
  }
  if (!op || op.getNumLoops() == 0 ||
      op.getIteratorTypesArray()[0] != utils::IteratorType::parallel)
    return {};
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t iterations = 1;
  for (int64_t r : ranges) {
    if (ShapedType::isDynamic(r))
      return {};
    iterations *= r;
  }
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    if (!map.isProjectedPermutation() ||
        !llvm::is_contained(map.getResults(),
                            getAffineDimExpr(0, map.getContext())))
      return {};
  }
  if (ranges[0] < 2)
    return {};
  return {ranges[0], iterations};
}

/// Gives each kernel of `splits` two trailing index arguments [lb, ub) and
/// runs its outermost loop (the only top-level scf.for once lowered to
/// loops) over that range.
static LogicalResult
bindSplitRanges(ModuleOp module, ArrayRef<plan::Schedule::KernelSplit> splits,
                const plan::Schedule &schedule, std::string &error) {
  for (auto [name, split] : llvm::zip(schedule.kernels, splits)) {
    if (!split.extent)
      continue;
    auto func = module.lookupSymbol<func::FuncOp>(name);
    SmallVector<scf::ForOp> loops;
    for (Operation &o : func.getBody().front())
      if (auto loop = dyn_cast<scf::ForOp>(o))
        loops.push_back(loop);
    if (loops.size() != 1) {
      error = "internal error: kernel @" + name +
              " has no single outermost loop to split";
      return failure();
    }
    Type index = IndexType::get(module.getContext());
    unsigned n = func.getNumArguments();
    if (failed(func.insertArguments({n, n}, {index, index}, {{}, {}},
                                    {func.getLoc(), func.getLoc()})))
      return failure();
    loops[0].setLowerBound(func.getArgument(n));
    loops[0].setUpperBound(func.getArgument(n + 1));
  }
  return success();
}

/// The function argument a memref view is of.
static Value rootMemref(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<memref::SubViewOp, memref::CollapseShapeOp, memref::ExpandShapeOp,
             memref::ReinterpretCastOp, memref::CastOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// A reduction along the innermost loop, lowered to loops, loads and stores
/// its accumulator out[i] on every iteration; LLVM cannot keep it in a
/// register (out might alias what the loop reads) and so vectorizes nothing.
/// Where the loop's only store is to loop-invariant indices of a memref
/// that nothing else in the loop reads (a kernel's output never aliases
/// its inputs: the memory plan keeps an op's operands live across it), the
/// accumulator becomes a loop-carried value, and its combining op may be
/// reassociated: LLVM then sums in vector lanes (like PyTorch's CPU
/// reductions; the result differs from a sequential sum by rounding).
static void promoteAccumulators(func::FuncOp func) {
  SmallVector<scf::ForOp> innermost;
  func.walk([&](scf::ForOp loop) {
    if (loop.getInitArgs().empty() &&
        loop.getBody()->getOps<scf::ForOp>().empty())
      innermost.push_back(loop);
  });
  IRRewriter rewriter(func.getContext());
  for (scf::ForOp loop : innermost) {
    memref::StoreOp store;
    SmallVector<memref::LoadOp> loads;
    bool other = false;
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto s = dyn_cast<memref::StoreOp>(op))
        other |= static_cast<bool>(std::exchange(store, s));
      else if (auto l = dyn_cast<memref::LoadOp>(op))
        loads.push_back(l);
      else if (!isMemoryEffectFree(&op) || op.getNumRegions())
        other = true;
    }
    if (other || !store ||
        llvm::any_of(
            store.getIndices(),
            [&](Value i) { return !loop.isDefinedOutsideOfLoop(i); }) ||
        !loop.isDefinedOutsideOfLoop(store.getMemRef()))
      continue;
    memref::LoadOp acc;
    Value root = rootMemref(store.getMemRef());
    for (memref::LoadOp load : loads) {
      if (load.getMemRef() == store.getMemRef() &&
          load.getIndices() == store.getIndices() && !acc)
        acc = load;
      else if (rootMemref(load.getMemRef()) == root)
        other = true;
    }
    Operation *combine = store.getValueToStore().getDefiningOp();
    if (other || !acc || !combine || combine->getBlock() != loop.getBody() ||
        !llvm::is_contained(combine->getOperands(), acc.getResult()))
      continue;
    if (auto fm = dyn_cast<arith::ArithFastMathInterface>(combine))
      combine->setAttr(
          fm.getFastMathAttrName(),
          arith::FastMathFlagsAttr::get(func.getContext(),
                                        arith::FastMathFlags::reassoc |
                                            arith::FastMathFlags::contract));
    rewriter.setInsertionPoint(loop);
    Value init = memref::LoadOp::create(rewriter, acc.getLoc(),
                                        store.getMemRef(), store.getIndices());
    Value stored = store.getValueToStore();
    FailureOr<LoopLikeOpInterface> promoted = loop.replaceWithAdditionalYields(
        rewriter, init, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &, Location, ArrayRef<BlockArgument> args) {
          rewriter.replaceAllUsesWith(acc.getResult(), args[0]);
          return SmallVector<Value>{stored};
        });
    if (failed(promoted))
      continue;
    auto result =
        cast<scf::ForOp>(promoted->getOperation()).getResults().back();
    rewriter.setInsertionPointAfter(promoted->getOperation());
    memref::StoreOp::create(rewriter, store.getLoc(), result, store.getMemRef(),
                            store.getIndices());
    rewriter.eraseOp(store);
    rewriter.eraseOp(acc);
  }
}

LogicalResult spmd::compileKernels(ModuleOp plan, plan::Schedule &schedule,
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
  kernels.splits.clear();
  for (const std::string &name : schedule.kernels)
    kernels.splits.push_back(
        splittable(module->lookupSymbol<func::FuncOp>(name)));
  schedule.kernelSplits = kernels.splits;
  PassManager loops(ctx);
  if (failed(parsePassPipeline("func.func(convert-linalg-to-loops)", loops))) {
    error = "internal error: bad kernel lowering pipeline";
    return failure();
  }
  if (failed(
          captureDiagnostics(ctx, error, [&] { return loops.run(*module); })) ||
      failed(bindSplitRanges(*module, kernels.splits, schedule, error))) {
    error = "lowering the kernels to loops failed:\n" + error;
    return failure();
  }
  for (auto func : module->getOps<func::FuncOp>())
    promoteAccumulators(func);
  PassManager pm(ctx);
  if (failed(parsePassPipeline(
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
  std::function<llvm::Error(llvm::Module *)> optimizeAndDump =
      [&](llvm::Module *m) -> llvm::Error {
    if (llvm::Error e = optimize(m))
      return e;
    // For looking at what LLVM made of the kernels (docs/design.md).
    if (const char *path = std::getenv("SPMD_DUMP_LL")) {
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      m->print(os, nullptr);
    }
    return llvm::Error::success();
  };
  options.transformer = optimizeAndDump;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto engine = ExecutionEngine::create(*module, options);
  if (!engine) {
    error = "JIT compilation of the kernels failed: " +
            llvm::toString(engine.takeError());
    return failure();
  }
  kernels.engine = std::move(*engine);
  kernels.engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner("__truncsfbf2")] = {
        llvm::orc::ExecutorAddr::fromPtr(&spmdTruncSfBf2),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });
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
