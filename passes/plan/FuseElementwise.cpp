//===- FuseElementwise.cpp - fuse elementwise/broadcast chains ------------===//

#include "passes/plan/GemmMatch.h"
#include "passes/plan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDFUSEELEMENTWISE
#include "passes/plan/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {
/// A linalg op that only copies its one input through a permuted map
/// (a transpose).
bool isPermutedCopy(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return false;
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  return body.getOperations().size() == 1 &&
         yield.getValues()[0] == body.getArgument(0) &&
         llvm::all_of(generic.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isPermutation(); });
}

/// Whether `consumer`, a contraction, still matches a GEMM after the
/// transpose `producer` of its operand is fused (read through the
/// composed map).
bool stillGemm(linalg::LinalgOp consumer, OpOperand *operand,
               Operation *producer) {
  auto copy = cast<linalg::GenericOp>(producer);
  SmallVector<AffineMap> maps = consumer.getIndexingMapsArray();
  AffineMap in = copy.getIndexingMapsArray()[0];
  AffineMap out = copy.getIndexingMapsArray()[1];
  AffineMap &fused = maps[operand->getOperandNumber()];
  fused = in.compose(inversePermutation(out)).compose(fused);
  return spmd::matchGemmLoops(maps).has_value();
}

/// Ops in the body of linalg op `op`, counted up to `limit`.
int64_t bodyOps(Operation *op, int64_t limit) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || op->getNumRegions() == 0 || op->getRegion(0).empty())
    return 0;
  int64_t n = 0;
  for (Operation &inner : op->getRegion(0).front()) {
    (void)inner;
    if (++n >= limit)
      break;
  }
  return n;
}

/// The largest fused body: each fusion copies the producer's body into the
/// consumer's, so along a chain of N elementwise ops unbounded fusion does
/// O(N^2) work (10,000 ops took 33 s). Capped, fusion is linear and a
/// kernel still holds hundreds of ops (a Philox draw is ~220).
constexpr int64_t kMaxFusedBodyOps = 512;

struct FuseElementwisePass
    : spmd::impl::SPMDFuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Named ops other than fills become generics, so that upstream fusion
    // (which works on linalg.generic) sees them; contractions stay
    // contractions (spmd-outline-plan makes GEMMs of generic ones too).
    IRRewriter rewriter(module.getContext());
    SmallVector<linalg::LinalgOp> toGeneralize;
    module.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::GenericOp, linalg::FillOp>(op) ||
          !op.hasPureTensorSemantics())
        return;
      toGeneralize.push_back(op);
    });
    for (linalg::LinalgOp op : toGeneralize) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return signalPassFailure();
    }

    RewritePatternSet patterns(module.getContext());
    // Fuse a producer into its consumer only when it has no other use and
    // the consumer reads it without broadcasting, so no work is duplicated:
    // a broadcast producer (AdamW's 0-d bias corrections 1 - beta^t, say)
    // fused into an elementwise consumer would be recomputed per element.
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *operand) {
          Operation *producer = operand->get().getDefiningOp();
          if (!producer || !producer->hasOneUse())
            return false;
          int64_t own = bodyOps(producer, kMaxFusedBodyOps + 1);
          if (own + bodyOps(operand->getOwner(), kMaxFusedBodyOps + 1) >
              kMaxFusedBodyOps)
            return false;
          auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
          if (!consumer)
            return true;
          // Into a contraction only a transpose (a copy through a permuted
          // map, which costs nothing fused) fuses: it becomes the GEMM's
          // transpose flag, while fused arithmetic would turn the GEMM into
          // a loop nest.
          if (linalg::isaContractionOpInterface(consumer))
            return isPermutedCopy(producer) &&
                   stillGemm(consumer, operand, producer);
          return consumer.getMatchingIndexingMap(operand).isPermutation();
        });
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    // Not converging within the iteration limit leaves correct (just less
    // fused) IR, so it is not an error.
    (void)applyPatternsGreedily(module, std::move(patterns));
  }
};
} // namespace
