//===- OneHotLoops.cpp - one-hot contractions as gathers and scatters -----===//
//
// The frontend writes an embedding lookup as a contraction with a one-hot
// matrix (partitionable by indexing maps alone: a vocabulary-sharded table
// gives a partial sum) and its backward as the transposed contraction:
//
//   out[p] += (idx[p_I] == r + off) ? val[p_V] : 0   for every r in [0, R)
//
// Run as written, that is a loop over the whole vocabulary per element
// (an embedding of 2048 x 512 read by 1024 tokens: 1 G iterations, seconds).
// Only r = idx[p_I] - off contributes, so the loop over r is dropped: the
// forward becomes a gather, the backward a scatter-add (sequential on the
// CPU, so accumulating in place is safe). Indices outside [0, R) (another
// rank's part of the vocabulary) contribute nothing, as before.
//
//===----------------------------------------------------------------------===//

#include "targets/cpu/OneHotLoops.h"
#include "targets/cpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace {

/// A matched one-hot contraction.
struct OneHot {
  linalg::GenericOp op;
  unsigned dim = 0; // the compared loop dim r
  OpOperand *index = nullptr, *value = nullptr;
  Value offset; // invariant added to r (null: none)
  bool offsetIsIndex = true;
};

bool definedOutside(Value v, linalg::GenericOp op) {
  return !op->isAncestor(v.getParentRegion()->getParentOp());
}

/// `v` as r (+ an invariant offset): index_cast(linalg.index r [+ off]) or
/// index_cast(linalg.index r) + off.
bool matchLoopIndex(Value v, linalg::GenericOp op, OneHot &m) {
  Value offset;
  bool offsetIsIndex = true;
  if (auto add = v.getDefiningOp<arith::AddIOp>()) {
    for (int side = 0; side < 2 && !offset; ++side)
      if (definedOutside(add->getOperand(1 - side), op)) {
        offset = add->getOperand(1 - side);
        v = add->getOperand(side);
      }
    if (!offset)
      return false;
    offsetIsIndex = false;
  }
  auto cast = v.getDefiningOp<arith::IndexCastOp>();
  if (!cast)
    return false;
  v = cast.getIn();
  if (auto add = v.getDefiningOp<arith::AddIOp>()) {
    if (offset)
      return false;
    for (int side = 0; side < 2 && !offset; ++side)
      if (definedOutside(add->getOperand(1 - side), op)) {
        offset = add->getOperand(1 - side);
        v = add->getOperand(side);
      }
    if (!offset)
      return false;
  }
  auto index = v.getDefiningOp<linalg::IndexOp>();
  if (!index)
    return false;
  m.dim = index.getDim();
  m.offset = offset;
  m.offsetIsIndex = offsetIsIndex;
  return true;
}

std::optional<OneHot> match(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return std::nullopt;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  BlockArgument out = body.getArgument(2);
  if (!add)
    return std::nullopt;
  Value selected = add.getLhs() == out   ? add.getRhs()
                   : add.getRhs() == out ? add.getLhs()
                                         : Value();
  auto select = selected ? selected.getDefiningOp<arith::SelectOp>() : nullptr;
  if (!select || !matchPattern(select.getFalseValue(), m_AnyZeroFloat()))
    return std::nullopt;
  auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq)
    return std::nullopt;
  OneHot m;
  m.op = op;
  auto value = dyn_cast<BlockArgument>(select.getTrueValue());
  if (!value || value.getOwner() != &body || value.getArgNumber() >= 2)
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    auto index = dyn_cast<BlockArgument>(cmp->getOperand(side));
    if (!index || index.getOwner() != &body ||
        index.getArgNumber() == value.getArgNumber() ||
        index.getArgNumber() >= 2 ||
        !matchLoopIndex(cmp->getOperand(1 - side), op, m))
      continue;
    m.index = op.getDpsInputOperand(index.getArgNumber());
    m.value = op.getDpsInputOperand(value.getArgNumber());
    break;
  }
  if (!m.index || !isa<IntegerType>(getElementTypeOrSelf(m.index->get())))
    return std::nullopt;
  // Exactly the ops above: nothing else may read r.
  if (body.getOperations().size() !=
      static_cast<size_t>(4 + (m.offset ? 1 : 0) + 2))
    return std::nullopt;
  // The index operand must not depend on r (it picks r).
  if (op.getMatchingIndexingMap(m.index).isFunctionOfDim(m.dim))
    return std::nullopt;
  return m;
}

/// out[p] += val[p] at r = idx[p] - off, in loops over the other dims
/// (the index operand's dims outermost, so a token's row is contiguous).
void rewrite(const OneHot &m) {
  linalg::GenericOp op = m.op;
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Range> ranges =
      cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc);
  AffineMap indexMap = op.getMatchingIndexingMap(m.index);
  SmallVector<unsigned> order;
  for (AffineExpr e : indexMap.getResults())
    order.push_back(cast<AffineDimExpr>(e).getPosition());
  for (unsigned d = 0; d < op.getNumLoops(); ++d)
    if (d != m.dim && !llvm::is_contained(order, d))
      order.push_back(d);
  // Bounds, and the constants of the range check, before the loops.
  SmallVector<Value> lbs, ubs, steps;
  for (const Range &r : ranges) {
    lbs.push_back(getValueOrCreateConstantIndexOp(b, loc, r.offset));
    ubs.push_back(getValueOrCreateConstantIndexOp(b, loc, r.size));
    steps.push_back(getValueOrCreateConstantIndexOp(b, loc, r.stride));
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value offset = m.offset;
  if (offset && !offset.getType().isIndex())
    offset = arith::IndexCastOp::create(b, loc, b.getIndexType(), offset);
  SmallVector<Value> ivs(op.getNumLoops());
  std::function<void(OpBuilder &, size_t)> nest = [&](OpBuilder &b,
                                                      size_t level) {
    if (level < order.size()) {
      unsigned d = order[level];
      auto loop = scf::ForOp::create(b, loc, lbs[d], ubs[d], steps[d]);
      ivs[d] = loop.getInductionVar();
      OpBuilder inner = OpBuilder::atBlockBegin(loop.getBody());
      nest(inner, level + 1);
      return;
    }
    auto indices = [&](OpOperand *operand) {
      SmallVector<Value> out;
      for (AffineExpr e : op.getMatchingIndexingMap(operand).getResults())
        out.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
      return out;
    };
    Value id = memref::LoadOp::create(b, loc, m.index->get(), indices(m.index));
    Value r = arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
    if (offset)
      r = arith::SubIOp::create(b, loc, r, offset);
    Value atLeast =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, r, zero);
    Value below =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, ubs[m.dim]);
    Value inRange = arith::AndIOp::create(b, loc, atLeast, below);
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    OpBuilder then = guard.getThenBodyBuilder();
    ivs[m.dim] = r;
    OpOperand *out = op.getDpsInitOperand(0);
    Value v =
        memref::LoadOp::create(then, loc, m.value->get(), indices(m.value));
    SmallVector<Value> at = indices(out);
    Value acc = memref::LoadOp::create(then, loc, out->get(), at);
    Value sum = arith::AddFOp::create(then, loc, acc, v);
    memref::StoreOp::create(then, loc, sum, out->get(), at);
  };
  nest(b, 0);
  op.erase();
}

} // namespace

int spmd::rewriteOneHotContractions(Operation *root) {
  SmallVector<OneHot> found;
  root->walk([&](linalg::GenericOp op) {
    if (std::optional<OneHot> m = match(op))
      found.push_back(*m);
  });
  for (const OneHot &m : found)
    rewrite(m);
  return static_cast<int>(found.size());
}

namespace spmd {
#define GEN_PASS_DEF_SPMDCPUONEHOTLOOPS
#include "targets/cpu/Passes.h.inc"
} // namespace spmd

namespace {
struct CpuOneHotLoopsPass
    : spmd::impl::SPMDCpuOneHotLoopsBase<CpuOneHotLoopsPass> {
  void runOnOperation() override {
    spmd::rewriteOneHotContractions(getOperation());
  }
};
} // namespace
