//===- FuseElementwise.cpp - fuse elementwise/broadcast chains ------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDFUSEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {
struct FuseElementwisePass
    : spmd::impl::SPMDFuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Named ops other than contractions and fills become generics, so that
    // upstream fusion (which works on linalg.generic) sees them; matmuls stay
    // named to become library calls.
    IRRewriter rewriter(module.getContext());
    SmallVector<linalg::LinalgOp> toGeneralize;
    module.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::GenericOp, linalg::FillOp>(op) ||
          linalg::isaContractionOpInterface(op) || !op.hasPureTensorSemantics())
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
          auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
          return !consumer ||
                 consumer.getMatchingIndexingMap(operand).isPermutation();
        });
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    // Not converging within the iteration limit leaves correct (just less
    // fused) IR, so it is not an error.
    (void)applyPatternsGreedily(module, std::move(patterns));
  }
};
} // namespace
