//===- DeferScales.cpp - scale by a reduced scalar late, not early --------===//
//
// A mean loss divides by a count computed from the batch (cross-entropy's
// number of non-ignored targets), so the backward starts from the seed
// -1/count. Under data parallelism the count is a partial sum: every
// gradient then depends on the count's all_reduce, the backward cannot start
// before it, and its reduction can never share a bucket with the gradients'.
//
// The backward is linear in its seed. This pass finds 0-d float values that
// come from a reduction (the seed) and whose linear uses reach a contraction
// (a backward): the values computed linearly from the seed (the linear
// closure) are computed from 1 instead, and each of them that reaches an op
// not linear in it (the optimizer, a returned value) is multiplied by the
// seed right before that op. The values are the same (up to rounding); the
// seed is needed only where the gradients are consumed, after their
// reductions (spmd-dedup-collectives moves a scale by a group-uniform value
// out of an all_reduce or reduce_scatter).
//
// Linearity is rules/Linearity's: an op is linear in the operands from the
// closure when its result is a `Term` of them (zero-filled inits count as
// terms); reshapes, transposes, slices and concatenations of closure values
// are linear. An op that reads a value depending on the seed otherwise
// (through a non-linear op) is a consumer, not part of the closure.
// 16-bit closures are left alone: unscaled gradients of a summed loss can
// overflow f16.
//
//===----------------------------------------------------------------------===//

#include "passes/propagation/Passes.h"
#include "rules/Linearity.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <queue>

namespace spmd {
#define GEN_PASS_DEF_SPMDDEFERSCALES
#include "passes/propagation/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {

bool isZero(Value v) {
  if (matchPattern(v, m_AnyZeroFloat()) || matchPattern(v, m_Zero()))
    return true;
  if (auto fill = v.getDefiningOp<linalg::FillOp>())
    return isZero(fill.getInputs()[0]);
  return false;
}

/// The results in `block` that come from a reduction over a tensor (a sum
/// over the batch), directly or through tensor operands: one pass in program
/// order.
llvm::DenseSet<Value> reductionDerived(Block &block) {
  llvm::DenseSet<Value> derived;
  for (Operation &op : block) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
    bool reduces = linalgOp && linalgOp.getNumReductionLoops() != 0;
    if (!reduces)
      reduces = llvm::any_of(op.getOperands(), [&](Value operand) {
        return isa<RankedTensorType>(operand.getType()) &&
               derived.contains(operand);
      });
    if (reduces)
      derived.insert(op.getResults().begin(), op.getResults().end());
  }
  return derived;
}

/// f32 or f64 tensors: a closure of narrower floats is left alone.
bool isWideFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type &&
         (type.getElementType().isF32() || type.getElementType().isF64());
}

bool isContraction(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumReductionLoops() != 0 &&
         linalgOp.getNumDpsInputs() >= 2;
}

/// The linear closure of one scalar and where it ends.
struct Closure {
  /// Values computed linearly from the scalar (the scalar included).
  llvm::DenseSet<Value> scaled;
  /// Ops of the closure that use the scalar itself.
  SmallVector<OpOperand *> scalarUses;
  /// Uses of closure values by ops not linear in them, in program order.
  SmallVector<OpOperand *> frontier;
  bool hasContraction = false;
  bool ok = true;
};

/// Is `op` (reading closure values at `operands`, every other tensor operand
/// independent of the scalar) linear in them?
bool isLinearIn(Operation *op, ArrayRef<unsigned> operands,
                const Closure &closure) {
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
          tensor::ExtractSliceOp, tensor::CastOp>(op))
    return operands.size() == 1 && operands[0] == 0;
  if (auto concat = dyn_cast<tensor::ConcatOp>(op))
    return llvm::all_of(concat->getOperands(), [&](Value v) {
      return closure.scaled.contains(v) || isZero(v);
    });
  SmallVector<unsigned> terms(operands);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    // A zero init is a term: 0 scaled is 0.
    for (OpOperand &init : linalgOp.getDpsInitsMutable())
      if (!llvm::is_contained(terms, init.getOperandNumber()) &&
          isZero(init.get()))
        terms.push_back(init.getOperandNumber());
    if (isa<linalg::TransposeOp, linalg::BroadcastOp>(op))
      return true;
  }
  std::optional<SmallVector<spmd::Dep>> deps =
      spmd::resultDependence(op, terms, spmd::ReduceKind::Sum);
  return deps &&
         llvm::all_of(*deps, [](spmd::Dep d) { return d == spmd::Dep::Term; });
}

/// The closure of `scalar`: the ops that read values depending on it, in
/// program order (`position`), reached through use lists, so the walk is as
/// long as the part of the block the scalar reaches.
Closure closureOf(Value scalar, Block &block,
                  const DenseMap<Operation *, int64_t> &position) {
  Closure closure;
  closure.scaled.insert(scalar);
  // Values that depend on the scalar at all.
  llvm::DenseSet<Value> tainted{scalar};
  using Entry = std::pair<int64_t, Operation *>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  llvm::DenseSet<Operation *> queued;
  auto enqueueUsers = [&](Value v) {
    for (Operation *user : v.getUsers())
      if (Operation *op = block.findAncestorOpInBlock(*user))
        if (queued.insert(op).second)
          queue.push({position.lookup(op), op});
  };
  enqueueUsers(scalar);
  while (!queue.empty() && closure.ok) {
    Operation *op = queue.top().second;
    queue.pop();
    SmallVector<unsigned> fromScalar;
    bool taintedOther = false;
    for (OpOperand &operand : op->getOpOperands()) {
      if (closure.scaled.contains(operand.get()))
        fromScalar.push_back(operand.getOperandNumber());
      else if (tainted.contains(operand.get()))
        taintedOther = true;
    }
    // A use inside a region (captured) cannot be rescaled at the op.
    op->walk([&](Operation *nested) {
      if (nested != op)
        for (Value v : nested->getOperands())
          if (tainted.contains(v))
            closure.ok = false;
    });
    bool linear = !taintedOther && op->getNumResults() > 0 &&
                  llvm::all_of(op->getResults(), isWideFloatTensor) &&
                  isLinearIn(op, fromScalar, closure);
    for (Value r : op->getResults()) {
      tainted.insert(r);
      enqueueUsers(r);
    }
    if (!linear) {
      for (unsigned o : fromScalar)
        closure.frontier.push_back(&op->getOpOperand(o));
      continue;
    }
    for (unsigned o : fromScalar)
      if (op->getOperand(o) == scalar)
        closure.scalarUses.push_back(&op->getOpOperand(o));
    for (Value r : op->getResults())
      closure.scaled.insert(r);
    closure.hasContraction |= isContraction(op);
  }
  return closure;
}

/// `value` times the 0-d `scalar`, as a linalg.generic broadcasting it.
Value scale(OpBuilder &builder, Location loc, Value value, Value scalar) {
  auto type = cast<RankedTensorType>(value.getType());
  MLIRContext *ctx = builder.getContext();
  unsigned rank = type.getRank();
  Value init = tensor::EmptyOp::create(builder, loc, type.getShape(),
                                       type.getElementType());
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, ctx),
                              AffineMap::get(rank, 0, ctx),
                              AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      builder, loc, type, ValueRange{value, scalar}, ValueRange{init}, maps,
      iterators, [](OpBuilder &b, Location l, ValueRange args) {
        Value product = arith::MulFOp::create(b, l, args[0], args[1]);
        linalg::YieldOp::create(b, l, product);
      });
  return generic.getResult(0);
}

struct DeferScales : public spmd::impl::SPMDDeferScalesBase<DeferScales> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (!fn.getBody().hasOneBlock())
      return markAllAnalysesPreserved();
    Block &block = fn.getBody().front();
    llvm::DenseSet<Value> derived = reductionDerived(block);
    SmallVector<Value> candidates;
    for (Operation &op : block)
      for (Value r : op.getResults())
        if (auto type = dyn_cast<RankedTensorType>(r.getType());
            type && type.getRank() == 0 && isWideFloatTensor(r) &&
            derived.contains(r))
          candidates.push_back(r);
    DenseMap<Operation *, int64_t> position;
    auto renumber = [&] {
      int64_t i = 0;
      for (Operation &op : block)
        position[&op] = i++;
    };
    renumber();
    bool changed = false;
    for (Value scalar : candidates) {
      Closure closure = closureOf(scalar, block, position);
      if (!closure.ok || !closure.hasContraction || closure.frontier.empty() ||
          closure.scalarUses.empty())
        continue;
      defer(scalar, closure);
      changed = true;
      renumber();
    }
    if (!changed)
      markAllAnalysesPreserved();
  }

  void defer(Value scalar, Closure &closure) {
    OpBuilder builder(scalar.getContext());
    builder.setInsertionPointAfterValue(scalar);
    Location loc = scalar.getLoc();
    auto type = cast<RankedTensorType>(scalar.getType());
    Value one = arith::ConstantOp::create(
        builder, loc, type,
        DenseElementsAttr::get(
            type, builder.getFloatAttr(type.getElementType(), 1.0)));
    // Each closure value the frontier reads is rescaled once, right before
    // its first reader.
    llvm::MapVector<Value, SmallVector<OpOperand *>> readers;
    for (OpOperand *use : closure.frontier)
      readers[use->get()].push_back(use);
    for (auto &[value, uses] : readers) {
      Operation *first = uses.front()->getOwner();
      builder.setInsertionPoint(first);
      Value rescaled =
          value == scalar ? scalar : scale(builder, loc, value, scalar);
      for (OpOperand *use : uses)
        use->set(rescaled);
    }
    for (OpOperand *use : closure.scalarUses)
      use->set(one);
  }
};

} // namespace
