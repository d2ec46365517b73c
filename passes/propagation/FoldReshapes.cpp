//===- FoldReshapes.cpp - spmd-fold-reshapes ------------------------------===//
//
// Folds tensor.collapse_shape producers and tensor.expand_shape consumers of
// linalg ops into the ops by expanding their iteration space (MLIR's
// fold-reshape-by-expansion), then cancels expand/collapse pairs. Why:
// spmd-propagate maps a reshape group to one factor carried by the group's
// outermost dim, so a sharding of an inner dim (the heads of [b, h, t, d]
// flattened to [b*h, t, d] for a batched matmul) could not pass the reshape
// and had to be gathered. After this pass every expanded dim is a loop of
// its own and keeps its sharding through the op.
//
//===----------------------------------------------------------------------===//

#include "passes/propagation/Passes.h"

#include "dialects/spmd/SPMDOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDFOLDRESHAPES
#include "passes/propagation/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {

static bool isStatic(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape();
}

/// Does `op` only insert or drop unit dims (every reassociation group has at
/// most one dim of another size)? Its sharding rule then maps each dim to
/// one dim, so folding it gains nothing, and folding such reshapes by
/// expansion can feed itself forever (a Qwen3 step grew [6, 16] into
/// [6, 1, 1, 16, 1, ...] until the rewrite budget ran out, for minutes).
static bool onlyUnitDims(Operation *op) {
  RankedTensorType expanded;
  SmallVector<ReassociationIndices> groups;
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    expanded = collapse.getSrcType();
    groups = collapse.getReassociationIndices();
  } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    expanded = expand.getResultType();
    groups = expand.getReassociationIndices();
  } else {
    return false;
  }
  return llvm::all_of(groups, [&](const ReassociationIndices &group) {
    return llvm::count_if(group, [&](int64_t d) {
             return expanded.getDimSize(d) != 1;
           }) <= 1;
  });
}

struct SPMDFoldReshapesPass
    : public ::spmd::impl::SPMDFoldReshapesBase<SPMDFoldReshapesPass> {
  using SPMDFoldReshapesBase::SPMDFoldReshapesBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    // Fold only static reshapes between ops on tensors; a reshape whose
    // producer/consumer is not a linalg op stays (and keeps its rule).
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      Operation *consumer = fused->getOwner();
      // A user-written layout on either op is kept: no folding there.
      StringRef layout = ::spmd::SPMDDialect::kLayoutAttrName;
      return producer && !producer->hasAttr(layout) &&
             !consumer->hasAttr(layout) && isStatic(fused->get()) &&
             !onlyUnitDims(producer) && !onlyUnitDims(consumer) &&
             llvm::all_of(producer->getOperands(),
                          [](Value v) {
                            return !isa<RankedTensorType>(v.getType()) ||
                                   isStatic(v);
                          }) &&
             llvm::all_of(consumer->getResults(), isStatic);
    };
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::EmptyOp::getCanonicalizationPatterns(patterns, ctx);
    // A reshape of tensor.empty is a tensor.empty of the new shape: keeps
    // inits contents-free (propagation reshards those for nothing).
    tensor::populateFoldTensorEmptyPatterns(patterns);
    linalg::FillOp::getCanonicalizationPatterns(patterns, ctx);
    // Bounded work: expansion can keep re-creating reshapes on some graphs
    // (a Llama step once ran for minutes and gigabytes here), so the driver
    // stops after a budget proportional to the program. Every rewrite keeps
    // the IR valid, so stopping early only folds less.
    int64_t ops = 0;
    getOperation()->walk([&](Operation *) { ++ops; });
    int64_t budget = maxRewrites > 0 ? maxRewrites : 16 * ops + 1024;
    GreedyRewriteConfig config;
    config.enableFolding(true);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    config.setMaxIterations(8);
    config.setMaxNumRewrites(budget);
    bool changed = false;
    LogicalResult converged = applyPatternsGreedily(
        getOperation(), std::move(patterns), config, &changed);
    if (!changed)
      markAllAnalysesPreserved();
    if (failed(converged))
      mlir::emitRemark(getOperation()->getLoc())
          << "spmd-fold-reshapes stopped before a fixpoint (budget of "
          << budget << " rewrites or 8 sweeps); reshapes left unfolded are "
          << "propagated as they are";
  }
};

} // namespace
