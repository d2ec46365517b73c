//===- OneHotMatmul.cpp - one-hot contractions as matmuls -----------------===//
//
// out += select(cond(idx, j), v, 0) over the loops of v becomes
//   oh  = select(cond(idx, j), 1, 0)   over the loops cond reads
//   out += oh * v                       a contraction (GEMM)
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/plan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDONEHOTMATMUL
#include "passes/plan/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {
/// Rewrites `op` if it is a one-hot contraction; `rw` is set before it.
LogicalResult rewriteOneHot(linalg::GenericOp op, RewriterBase &rw) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0)
    return failure();
  Block &body = op.getRegion().front();
  unsigned numInputs = op.getNumDpsInputs();
  BlockArgument outArg = body.getArgument(numInputs);
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != &body)
    return failure();
  Value term = add.getLhs() == outArg   ? add.getRhs()
               : add.getRhs() == outArg ? add.getLhs()
                                        : Value();
  auto sel = term ? term.getDefiningOp<arith::SelectOp>() : nullptr;
  if (!sel || sel->getBlock() != &body || !sel->hasOneUse() ||
      !add->hasOneUse() || !matchPattern(sel.getFalseValue(), m_AnyZeroFloat()))
    return failure();
  auto vArg = dyn_cast<BlockArgument>(sel.getTrueValue());
  if (!vArg || vArg.getOwner() != &body || vArg.getArgNumber() >= numInputs)
    return failure();
  auto elem = dyn_cast<FloatType>(vArg.getType());
  if (!elem || elem != outArg.getType())
    return failure();

  // The condition's slice: pure ops of the body reading the other inputs,
  // loop indices and values from above, never v or out.
  llvm::SetVector<Operation *> slice;
  llvm::SmallVector<Value> work{sel.getCondition()};
  llvm::SmallDenseSet<unsigned> inputsRead;
  llvm::SmallDenseSet<unsigned> dims;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != &body)
        continue; // from above
      if (arg == vArg || arg == outArg)
        return failure();
      inputsRead.insert(arg.getArgNumber());
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &body)
      continue; // from above
    if (slice.contains(def))
      continue;
    if (def->getNumRegions() != 0 || !isMemoryEffectFree(def))
      return failure();
    if (auto index = dyn_cast<linalg::IndexOp>(def))
      dims.insert(index.getDim());
    slice.insert(def);
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  // Nothing else may be computed in the body (constants aside).
  for (Operation &inner : body)
    if (!slice.contains(&inner) && &inner != sel.getOperation() &&
        &inner != add.getOperation() && &inner != yield.getOperation() &&
        !inner.hasTrait<OpTrait::ConstantLike>())
      return failure();

  // The loops the condition depends on, in loop order.
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (unsigned i : inputsRead)
    for (unsigned d = 0; d < maps[i].getNumDims(); ++d)
      if (maps[i].isFunctionOfDim(d))
        dims.insert(d);
  unsigned numLoops = op.getNumLoops();
  SmallVector<unsigned> loops;
  for (unsigned d = 0; d < numLoops; ++d)
    if (dims.contains(d))
      loops.push_back(d);
  if (loops.size() == numLoops)
    return failure(); // no loop left to contract
  // Every loop must keep an operand that bounds it: the one-hot tensor,
  // the selected values or the output (an input the body never reads is
  // dropped).
  unsigned vIndex = vArg.getArgNumber();
  for (unsigned d = 0; d < numLoops; ++d)
    if (!dims.contains(d) && !maps[vIndex].isFunctionOfDim(d) &&
        !maps[numInputs].isFunctionOfDim(d))
      return failure();
  SmallVector<int64_t> pos(numLoops, -1);
  SmallVector<AffineExpr> expand, read;
  for (auto [i, d] : llvm::enumerate(loops)) {
    pos[d] = i;
    read.push_back(rw.getAffineDimExpr(d));
  }
  for (unsigned d = 0; d < numLoops; ++d)
    expand.push_back(pos[d] < 0 ? rw.getAffineConstantExpr(0)
                                : rw.getAffineDimExpr(pos[d]));
  AffineMap expandMap =
      AffineMap::get(loops.size(), 0, expand, rw.getContext());

  // oh = select(cond, 1, 0) over `loops`.
  Location loc = op.getLoc();
  SmallVector<Range, 4> ranges =
      cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(rw, loc);
  SmallVector<OpFoldResult> sizes;
  for (unsigned d : loops)
    sizes.push_back(ranges[d].size);
  Value empty = tensor::EmptyOp::create(rw, loc, sizes, elem);
  SmallVector<Value> ohInputs;
  SmallVector<AffineMap> ohMaps;
  SmallVector<unsigned> ohArgs;
  for (unsigned i = 0; i < numInputs; ++i)
    if (inputsRead.contains(i)) {
      ohInputs.push_back(op.getDpsInputs()[i]);
      ohMaps.push_back(maps[i].compose(expandMap));
      ohArgs.push_back(i);
    }
  ohMaps.push_back(rw.getMultiDimIdentityMap(loops.size()));
  SmallVector<utils::IteratorType> parallel(loops.size(),
                                            utils::IteratorType::parallel);
  auto oneHot = linalg::GenericOp::create(
      rw, loc, empty.getType(), ohInputs, ValueRange{empty}, ohMaps, parallel,
      [&](OpBuilder &b, Location l, ValueRange args) {
        IRMapping map;
        for (auto [k, i] : llvm::enumerate(ohArgs))
          map.map(body.getArgument(i), args[k]);
        for (Operation &inner : body) {
          if (!slice.contains(&inner))
            continue;
          if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
            map.map(index.getResult(),
                    linalg::IndexOp::create(b, l, pos[index.getDim()]));
            continue;
          }
          b.clone(inner, map);
        }
        Value one = arith::ConstantOp::create(b, l, b.getFloatAttr(elem, 1));
        Value zero = arith::ConstantOp::create(b, l, b.getFloatAttr(elem, 0));
        Value pick = arith::SelectOp::create(
            b, l, map.lookup(sel.getCondition()), one, zero);
        linalg::YieldOp::create(b, l, pick);
      });
  oneHot->setDiscardableAttrs(op->getDiscardableAttrDictionary());

  // out += oh * v, over the original loops.
  SmallVector<AffineMap> mmMaps{
      AffineMap::get(numLoops, 0, read, rw.getContext()), maps[vIndex],
      maps[numInputs]};
  auto matmul = linalg::GenericOp::create(
      rw, loc, op.getResultTypes(),
      ValueRange{oneHot.getResult(0), op.getDpsInputs()[vIndex]},
      op.getDpsInits(), mmMaps, op.getIteratorTypesArray(),
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value prod = arith::MulFOp::create(b, l, args[0], args[1]);
        Value sum = arith::AddFOp::create(b, l, args[2], prod);
        linalg::YieldOp::create(b, l, sum);
      });
  matmul->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rw.replaceOp(op, matmul.getResults());
  return success();
}

struct SPMDOneHotMatmul : spmd::impl::SPMDOneHotMatmulBase<SPMDOneHotMatmul> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    IRRewriter rw(&getContext());
    bool changed = false;
    for (linalg::GenericOp op : generics) {
      rw.setInsertionPoint(op);
      changed |= succeeded(rewriteOneHot(op, rw));
    }
    if (!changed)
      markAllAnalysesPreserved();
  }
};
} // namespace
