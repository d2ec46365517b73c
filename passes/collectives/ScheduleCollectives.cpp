//===- ScheduleCollectives.cpp - issue collectives early -----------------===//
//
// spmd-partition places every collective right before the op that needs its
// result, so a GPU's communication stream never has independent compute to
// overlap: the executor issues the collective and the compute stream waits
// for it at once. This pass moves collectives earlier in their block:
//
//  * a collective of computed values goes right after the last of its
//    operands is produced (a data-parallel gradient's all_reduce starts
//    while the rest of the backward runs, instead of before the optimizer);
//  * a collective that needs only function arguments (an FSDP parameter
//    gather, with the reshape feeding it) is prefetched one ahead: it goes
//    right before the first user of the previous such collective, so at
//    most two gathered copies are alive rather than every parameter's at
//    the top of the step.
//
// Collectives keep their relative order where operands allow, and every
// rank runs the same program, so every rank issues them in the same order.
// Only the order of the block changes; the values do not.
//
//===----------------------------------------------------------------------===//

#include "passes/collectives/Passes.h"

#include "dialects/spmd/SPMDDialect.h"
#include "dialects/spmd/SPMDOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDSCHEDULECOLLECTIVES
#include "passes/collectives/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {

/// An op that moves data between devices: worth issuing early.
bool isCollective(Operation *op) {
  auto collective = dyn_cast<::spmd::CollectiveOpInterface>(op);
  return collective && collective.communicates();
}

/// The ops of `block` that `op` needs before it: the in-block ancestors of
/// the definitions of its operands and of the values its regions capture.
SmallVector<Operation *> producersIn(Block &block, Operation *op) {
  llvm::SetVector<Value> values(op->operand_begin(), op->operand_end());
  getUsedValuesDefinedAbove(op->getRegions(), values);
  SmallVector<Operation *> defs;
  for (Value v : values)
    if (Operation *def = v.getDefiningOp())
      if (Operation *ancestor = block.findAncestorOpInBlock(*def))
        defs.push_back(ancestor);
  return defs;
}

/// `op` and the ops that exist only to feed it (sole-use, side-effect-free
/// producers, transitively: the packing of a bucketed all_reduce, a
/// reshape, the matmul computing a gradient and its zero-filled init).
void collectGroup(Block &block, Operation *op,
                  llvm::SetVector<Operation *> &group, int depth = 0) {
  group.insert(op);
  for (Operation *def : producersIn(block, op))
    if (depth < 16 && def->hasOneUse() && *def->user_begin() == op &&
        isMemoryEffectFree(def) && !isCollective(def))
      collectGroup(block, def, group, depth + 1);
}

/// The order of a block's ops, kept across this pass's moves. Every move
/// invalidates the block's own order, which the next isBeforeInBlock
/// recomputes for the whole block: scheduling was O(ops x collectives).
/// Moved ops get positions between their new neighbours instead (the
/// block is renumbered only when a gap runs out).
class BlockOrder {
public:
  explicit BlockOrder(Block &block) : block(block) { renumber(); }

  bool before(Operation *a, Operation *b) const {
    return position.lookup(a) < position.lookup(b);
  }

  /// `run`, ops now consecutive in the block, has moved there.
  void moved(ArrayRef<Operation *> run) {
    if (run.empty())
      return;
    Operation *prev = run.front()->getPrevNode();
    Operation *next = run.back()->getNextNode();
    int64_t lo = prev ? position.lookup(prev) : 0;
    int64_t hi = next ? position.lookup(next) : lo + kStride * (run.size() + 1);
    int64_t step = (hi - lo) / static_cast<int64_t>(run.size() + 1);
    if (step == 0)
      return renumber();
    for (Operation *op : run)
      position[op] = lo += step;
  }

private:
  static constexpr int64_t kStride = int64_t(1) << 20;
  void renumber() {
    int64_t next = 0;
    for (Operation &op : block)
      position[&op] = next += kStride;
  }
  Block &block;
  DenseMap<Operation *, int64_t> position;
};

/// Moves `op` with its group (collectGroup) up to right after the latest
/// op outside the group they need, keeping the group's order: the
/// collective starts as soon as its data can, and a zero fill stays next
/// to its user rather than rising to the constants at the top. Returns
/// false, moving nothing, if the group needs nothing of the block; sets
/// `moved` when an op moves.
bool hoist(Block &block, BlockOrder &order,
           const llvm::SetVector<Operation *> &group,
           ArrayRef<Operation *> ordered, bool &moved) {
  Operation *last = nullptr;
  for (Operation *member : group)
    for (Operation *def : producersIn(block, member))
      if (!group.contains(def) && (!last || order.before(last, def)))
        last = def;
  if (!last)
    return false;
  for (Operation *member : ordered) {
    if (member != last->getNextNode()) {
      member->moveAfter(last);
      moved = true;
    }
    last = member;
  }
  order.moved(ordered);
  return true;
}

/// The first op of `block` using a result of `op` (through nested regions
/// too), or null.
Operation *firstUserIn(Block &block, const BlockOrder &order, Operation *op) {
  Operation *first = nullptr;
  for (Value result : op->getResults())
    for (Operation *user : result.getUsers()) {
      Operation *ancestor = block.findAncestorOpInBlock(*user);
      if (ancestor && (!first || order.before(ancestor, first)))
        first = ancestor;
    }
  return first;
}

struct ScheduleCollectives
    : public spmd::impl::SPMDScheduleCollectivesBase<ScheduleCollectives> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    moved = false;
    for (Block &block : func.getBody())
      schedule(block);
    // Unchanged IR needs neither the guard nor verification after the pass.
    if (!moved)
      return markAllAnalysesPreserved();
    // A guard: a use above its definition would only surface later, far
    // from the move that caused it.
    DominanceInfo dominance(func);
    WalkResult result = func.walk([&](Operation *op) {
      for (OpOperand &operand : op->getOpOperands())
        if (!dominance.properlyDominates(operand.get(), op)) {
          op->emitOpError("operand #")
              << operand.getOperandNumber()
              << " does not dominate this use after collective scheduling";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  /// Whether this run moved an op (one pass instance runs many functions).
  bool moved = false;

  void schedule(Block &block) {
    SmallVector<Operation *> collectives;
    for (Operation &op : block)
      if (isCollective(&op))
        collectives.push_back(&op);
    // The first user of the previous argument-only collective: where the
    // next one may be prefetched to.
    Operation *prefetchPoint = nullptr;
    BlockOrder order(block);
    for (Operation *op : collectives) {
      llvm::SetVector<Operation *> group;
      collectGroup(block, op, group);
      SmallVector<Operation *> ordered(group.begin(), group.end());
      llvm::sort(ordered, [&](Operation *a, Operation *b) {
        return order.before(a, b);
      });
      if (hoist(block, order, group, ordered, moved))
        continue;
      // Only arguments: one ahead of the next use, with the group's ops
      // (a reshape, a matmul of arguments) that feed it.
      Operation *user = firstUserIn(block, order, op);
      if (prefetchPoint && order.before(prefetchPoint, op)) {
        SmallVector<Operation *> run;
        for (Operation *member : ordered)
          if (order.before(prefetchPoint, member)) {
            member->moveBefore(prefetchPoint);
            moved = true;
            run.push_back(member);
          }
        order.moved(run);
      }
      prefetchPoint = user;
    }
  }
};

} // namespace
