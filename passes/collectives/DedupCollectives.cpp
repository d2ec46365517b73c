//===- DedupCollectives.cpp - remove redundant collectives ----------------===//
//
// Three rewrites on the explicit collectives of a local program, repeated to
// a fixpoint because each can expose the others (two identical shards of one
// all_reduce become one shard, which then fuses into a reduce_scatter):
//   * identical collectives on the same value become one,
//   * shard(all_gather(x)) and all_to_all(all_to_all(x)) round trips become x,
//   * shard(all_reduce(x)) becomes reduce_scatter(x).
// Everything is done by an explicit walk, not by CSE or the greedy driver: the
// pass must stay right if collectives stop being side-effect free, and it must
// not touch the rest of the program.
//
//===----------------------------------------------------------------------===//

#include "dialects/spmd/SPMDOps.h"
#include "passes/collectives/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
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
    while (dedup(root) | simplify(root))
      changed = true;
    return changed;
  }

private:
  /// Replaces each collective by an identical earlier one that dominates its
  /// uses; the first in program order is kept.
  bool dedup(Operation *root) {
    SmallVector<Operation *> collectives;
    root->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<CollectiveOpInterface>(op))
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
