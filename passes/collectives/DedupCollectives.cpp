//===- DedupCollectives.cpp - remove redundant collectives ----------------===//
//
// Four rewrites on the explicit collectives of a local program, repeated to
// a fixpoint because each can expose the others (two identical shards of one
// all_reduce become one shard, which then fuses into a reduce_scatter):
//   * identical collectives on the same value become one,
//   * shard(all_gather(x)) and all_to_all(all_to_all(x)) round trips become x,
//   * shard(all_reduce(x)) becomes reduce_scatter(x),
//   * reduce(x * c) becomes reduce(x) * c for c the same on the whole group.
// Everything is done by an explicit walk, not by CSE or the greedy driver: the
// pass must stay right if collectives stop being side-effect free, and it must
// not touch the rest of the program.
//
//===----------------------------------------------------------------------===//

#include "dialects/spmd/SPMDOps.h"
#include "passes/collectives/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDDEDUPCOLLECTIVES
#include "passes/collectives/Passes.h.inc"
} // namespace spmd

using namespace mlir;
using namespace spmd;

namespace {

/// Same op kind, operand, result type and inherent attributes (mesh, axes in
/// order, dims, reduction kind). Discardable attributes do not matter.
bool sameCollective(Operation *a, Operation *b) {
  if (a->getName() != b->getName() ||
      !llvm::equal(a->getOperands(), b->getOperands()) ||
      a->getResultTypes() != b->getResultTypes())
    return false;
  for (StringAttr name : a->getName().getAttributeNames())
    if (a->getInherentAttr(name) != b->getInherentAttr(name))
      return false;
  return true;
}

/// Whether `kept`'s result may stand in for every use of `dup`.
bool canReplace(DominanceInfo &dom, Operation *kept, Operation *dup) {
  Value value = kept->getResult(0);
  if (dom.properlyDominates(value, dup))
    return true;
  // Only a used duplicate is worth replacing when `kept` does not dominate it.
  if (dup->use_empty())
    return false;
  return llvm::all_of(dup->getUses(), [&](OpOperand &use) {
    return dom.properlyDominates(value, use.getOwner());
  });
}

template <typename OpA, typename OpB> bool sameGroup(OpA a, OpB b) {
  // ArrayAttrs are uniqued: equal means the same axes in the same order.
  return a.getMeshAttr() == b.getMeshAttr() &&
         a.getMeshAxes() == b.getMeshAxes();
}

class Deduplicator {
public:
  Deduplicator(DominanceInfo &dom) : dom(dom) {}

  /// Runs all rewrites until none applies; returns whether anything changed.
  bool run(Operation *root) {
    bool changed = false;
    while (dedup(root) | simplify(root) | hoistScales(root))
      changed = true;
    return changed;
  }

private:
  /// Replaces each collective by an identical earlier one that dominates its
  /// uses; the first in program order is kept.
  bool dedup(Operation *root) {
    SmallVector<Operation *> collectives;
    root->walk<WalkOrder::PreOrder>([&](Operation *op) {
      // A plan's collectives (spmd.plan_*) have no result to share.
      if (isa<CollectiveOpInterface>(op) && op->getNumResults() == 1)
        collectives.push_back(op);
    });
    DenseMap<Value, SmallVector<Operation *, 2>> keptByInput;
    bool changed = false;
    for (Operation *op : collectives) {
      SmallVector<Operation *, 2> &kept = keptByInput[op->getOperand(0)];
      auto match = llvm::find_if(kept, [&](Operation *candidate) {
        return sameCollective(candidate, op) && canReplace(dom, candidate, op);
      });
      if (match == kept.end()) {
        kept.push_back(op);
        continue;
      }
      op->getResult(0).replaceAllUsesWith((*match)->getResult(0));
      op->erase();
      changed = true;
    }
    return changed;
  }

  /// Round trips and all_reduce + shard.
  bool simplify(Operation *root) {
    SmallVector<Operation *> candidates;
    root->walk([&](Operation *op) {
      if (isa<ShardOp, AllToAllOp>(op))
        candidates.push_back(op);
    });
    erased.clear();
    bool changed = false;
    for (Operation *op : candidates) {
      if (erased.contains(op))
        continue;
      if (auto shard = dyn_cast<ShardOp>(op))
        changed |= simplifyShard(shard);
      else
        changed |= simplifyAllToAll(cast<AllToAllOp>(op));
    }
    return changed;
  }

  bool simplifyShard(ShardOp shard) {
    // shard(all_gather(x, A, d), A, d) -> x: each member gets back its piece.
    if (auto gather = shard.getInput().getDefiningOp<AllGatherOp>()) {
      if (!sameGroup(gather, shard) || gather.getDim() != shard.getDim() ||
          shard.getType() != gather.getInput().getType())
        return false;
      replaceAndErase(shard, gather.getInput());
      eraseIfDead(gather);
      return true;
    }
    // shard(all_reduce(x, A, kind), A, d) -> reduce_scatter(x, A, d, kind),
    // only when nothing else needs the full reduction.
    if (auto reduce = shard.getInput().getDefiningOp<AllReduceOp>()) {
      if (!sameGroup(reduce, shard) || !reduce->hasOneUse())
        return false;
      // At the all_reduce's position: the order of collectives is unchanged.
      OpBuilder builder(reduce);
      auto scatter = ReduceScatterOp::create(
          builder, shard.getLoc(), shard.getType(), reduce.getInput(),
          shard.getMeshAttr(), shard.getMeshAxes(), shard.getDimAttr(),
          reduce.getKindAttr());
      scatter->setDiscardableAttrs(shard->getDiscardableAttrDictionary());
      replaceAndErase(shard, scatter.getResult());
      eraseIfDead(reduce);
      return true;
    }
    return false;
  }

  // all_to_all(all_to_all(x, A, split s, concat c), A, split c, concat s) -> x.
  bool simplifyAllToAll(AllToAllOp second) {
    auto first = second.getInput().getDefiningOp<AllToAllOp>();
    if (!first || !sameGroup(first, second) ||
        first.getSplitDim() != second.getConcatDim() ||
        first.getConcatDim() != second.getSplitDim() ||
        second.getType() != first.getInput().getType())
      return false;
    replaceAndErase(second, first.getInput());
    eraseIfDead(first);
    return true;
  }

  /// reduce(x * c) -> reduce(x) * c for an all_reduce or reduce_scatter of
  /// kind sum or avg whose input is only a scale of x by a 0-d c that every
  /// member of its group has the same (x / c too): the reduction no longer
  /// waits for c (a mean loss's count, reduced itself), so it can start
  /// earlier and share a bucket with c's own reduction.
  bool hoistScales(Operation *root) {
    SmallVector<Operation *> candidates;
    root->walk([&](Operation *op) {
      if (isa<AllReduceOp, ReduceScatterOp>(op))
        candidates.push_back(op);
    });
    bool changed = false;
    for (Operation *op : candidates)
      changed |= hoistScale(cast<CollectiveOpInterface>(op));
    return changed;
  }

  bool hoistScale(CollectiveOpInterface op) {
    ReductionKind kind = isa<AllReduceOp>(op)
                             ? cast<AllReduceOp>(op).getKind()
                             : cast<ReduceScatterOp>(op).getKind();
    if (kind != ReductionKind::sum && kind != ReductionKind::avg)
      return false;
    auto scaleOp = op.getInput().getDefiningOp<linalg::GenericOp>();
    if (!scaleOp || !scaleOp->hasOneUse() || scaleOp.getNumDpsInputs() != 2 ||
        scaleOp.getNumResults() != 1 || scaleOp.getNumReductionLoops() != 0)
      return false;
    // Which input is the tensor and which the 0-d scale, and the body.
    Block *body = scaleOp.getBlock();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    Operation *arith = yield.getOperand(0).getDefiningOp();
    if (!arith || arith->getBlock() != body ||
        !isa<arith::MulFOp, arith::DivFOp>(arith) ||
        std::next(body->begin()) != Block::iterator(yield))
      return false;
    // Which input is x (the reduced tensor) and which the 0-d scale c: x * c,
    // c * x or x / c, c the same on the whole group.
    auto isScaleOf = [&](int x) {
      OpOperand *tensor = scaleOp.getDpsInputOperand(x);
      OpOperand *scale = scaleOp.getDpsInputOperand(1 - x);
      auto scaleType = dyn_cast<RankedTensorType>(scale->get().getType());
      if (!scaleOp.getMatchingIndexingMap(tensor).isIdentity() ||
          tensor->get().getType() != op.getInput().getType() || !scaleType ||
          scaleType.getRank() != 0)
        return false;
      Value xArg = body->getArgument(x), cArg = body->getArgument(1 - x);
      bool linear =
          isa<arith::MulFOp>(arith)
              ? llvm::is_contained(arith->getOperands(), xArg) &&
                    llvm::is_contained(arith->getOperands(), cArg)
              : arith->getOperand(0) == xArg && arith->getOperand(1) == cArg;
      return linear && isUniform(scale->get(), op, 0);
    };
    int tensorInput = isScaleOf(0) ? 0 : (isScaleOf(1) ? 1 : -1);
    if (tensorInput < 0)
      return false;
    OpOperand *scaleInput = scaleOp.getDpsInputOperand(1 - tensorInput);
    // The reduction of x at the collective's position, then the scale.
    OpBuilder builder(op);
    Location loc = op.getLoc();
    Value x = scaleOp.getDpsInputOperand(tensorInput)->get();
    Operation *reduced = builder.clone(*op);
    reduced->setOperand(0, x);
    Value result = reduced->getResult(0);
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<Value> dynamicSizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamicSizes.push_back(tensor::DimOp::create(builder, loc, result, d));
    Value init = tensor::EmptyOp::create(builder, loc, type.getShape(),
                                         type.getElementType(), dynamicSizes);
    unsigned rank = type.getRank();
    MLIRContext *ctx = builder.getContext();
    SmallVector<AffineMap> maps(3,
                                AffineMap::getMultiDimIdentityMap(rank, ctx));
    maps[1 - tensorInput] = AffineMap::get(rank, 0, ctx);
    SmallVector<Value> inputs(2);
    inputs[tensorInput] = result;
    inputs[1 - tensorInput] = scaleInput->get();
    auto scaled = linalg::GenericOp::create(
        builder, loc, type, inputs, ValueRange{init}, maps,
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel));
    IRMapping mapping;
    scaleOp.getRegion().cloneInto(&scaled.getRegion(), mapping);
    op->getResult(0).replaceAllUsesWith(scaled.getResult(0));
    erased.insert(op);
    op->erase();
    scaleOp->erase();
    return true;
  }

  /// Is `v` the same on every member of `op`'s group: a constant, the result
  /// of a reduction or gather over (at least) the group's axes, or computed
  /// from such values only?
  bool isUniform(Value v, CollectiveOpInterface op, int depth) {
    Operation *def = v.getDefiningOp();
    if (!def || depth > 16)
      return false;
    if (matchPattern(v, m_Constant()))
      return true;
    if (auto other = dyn_cast<CollectiveOpInterface>(def)) {
      if (!isa<AllReduceOp, AllGatherOp>(def) ||
          other.getMeshAttr() != op.getMeshAttr())
        return false;
      return llvm::all_of(op.getMeshAxes(), [&](Attribute axis) {
        return llvm::is_contained(other.getMeshAxes(), axis);
      });
    }
    if (isa<tensor::EmptyOp>(def))
      return true;
    if (!isa<linalg::LinalgOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
            def) &&
        !OpTrait::hasElementwiseMappableTraits(def))
      return false;
    bool uniform = true;
    def->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (!def->isAncestor(operand.getParentBlock()->getParentOp()) &&
            !isUniform(operand, op, depth + 1))
          uniform = false;
      if (isa<linalg::IndexOp>(nested))
        uniform = false;
    });
    return uniform;
  }

  void replaceAndErase(Operation *op, Value replacement) {
    op->getResult(0).replaceAllUsesWith(replacement);
    erased.insert(op);
    op->erase();
  }

  /// Erases a collective that our rewrite left without uses.
  void eraseIfDead(Operation *op) {
    if (!op->use_empty())
      return;
    erased.insert(op);
    op->erase();
  }

  DominanceInfo &dom;
  llvm::DenseSet<Operation *> erased;
};

struct DedupCollectivesPass
    : spmd::impl::SPMDDedupCollectivesBase<DedupCollectivesPass> {
  void runOnOperation() override {
    Deduplicator deduplicator(getAnalysis<DominanceInfo>());
    if (!deduplicator.run(getOperation()))
      markAllAnalysesPreserved();
  }
};

} // namespace
