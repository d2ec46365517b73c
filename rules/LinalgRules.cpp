//===- LinalgRules.cpp - Sharding rules of linalg structured ops ----------===//
//
// Every structured op on tensors (named ops, linalg.generic, linalg.fill):
// one factor per loop from the indexing maps.
//
//  * A dim whose map expression is not a plain loop has no factor; the
//    loops in such an expression, loops appearing twice in one operand and
//    parallel loops missing from some init need replication. Loops the
//    payload reads with linalg.index can be split (spmd-partition offsets
//    the index by the rank's chunk offset).
//  * A reduction loop can be split only when every result's combiner is
//    known: yield(out OP x) with x independent of out and OP addf/addi ->
//    sum, maximumf/maxnumf/maxsi/maxui -> max, minimumf/minnumf/minsi/minui
//    -> min. Otherwise it needs replication.
//  * Results are tied to their inits (same dims).
//  * Partial alternatives (single-init ops, at most 4 tensor inputs): every
//    set of tensor inputs, plus the init, in which the payload is linear or
//    monotone (Linearity.h): e.g. matmul {A, init}, {B, init}: sum|avg;
//    elementwise add {a, b, init}: sum|avg; transpose, broadcast, copy
//    {in, init}: any kind.
//  * linalg.fill: also {init} with P(k) when the fill value is the identity
//    of k (0 -> sum|avg, -inf -> max, +inf -> min).
//
// linalg.softmax (not a structured op): input, init and result share one
// factor per dim; the softmax dim needs replication (its max and sum span
// the whole dim). It is not linear: no partial alternative.
//
//===----------------------------------------------------------------------===//

#include "rules/RuleModels.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace spmd;

/// Does `v` (inside `body`) depend on `arg`?
static bool dependsOn(Value v, Value arg, Block *body, int depth = 0) {
  if (v == arg)
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != body || depth > 64)
    return false;
  return llvm::any_of(def->getOperands(), [&](Value o) {
    return dependsOn(o, arg, body, depth + 1);
  });
}

/// The combiner of result `r`: yield(out OP x) or yield(x OP out) with x
/// independent of out.
static std::optional<ReduceKind> combiner(linalg::LinalgOp op, unsigned r) {
  Block *body = op.getBlock();
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!yield || r >= yield.getNumOperands())
    return std::nullopt;
  Value out = op.getRegionOutputArgs()[r];
  Operation *def = yield.getOperand(r).getDefiningOp();
  if (!def || def->getBlock() != body || def->getNumOperands() != 2)
    return std::nullopt;
  Value a = def->getOperand(0), b = def->getOperand(1);
  if (b == out)
    std::swap(a, b);
  if (a != out || dependsOn(b, out, body))
    return std::nullopt;
  if (isa<arith::AddFOp, arith::AddIOp>(def))
    return ReduceKind::Sum;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp, arith::MaxUIOp>(
          def))
    return ReduceKind::Max;
  if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp, arith::MinUIOp>(
          def))
    return ReduceKind::Min;
  return std::nullopt;
}

/// The reduction kind `value` is the identity of, if any.
static std::optional<ReduceKind> identityKind(Value value) {
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  if (auto f = dyn_cast<FloatAttr>(attr)) {
    const APFloat &v = f.getValue();
    if (v.isZero())
      return ReduceKind::Sum;
    if (v.isInfinity())
      return v.isNegative() ? ReduceKind::Max : ReduceKind::Min;
    return std::nullopt;
  }
  if (auto i = dyn_cast<IntegerAttr>(attr))
    if (i.getValue().isZero())
      return ReduceKind::Sum;
  return std::nullopt;
}

static std::optional<ShardingRule> linalgRule(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || !op.getBlock())
    return std::nullopt;
  Operation *raw = op.getOperation();
  using Kind = Factor::Kind;
  ShardingRule rule;
  rule.numOperands = raw->getNumOperands();
  // Named ops build their indexing maps and iterator types on every call:
  // fetch each once (propagation asks for the rule of every op).
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned numLoops = iterators.size();
  bool reduces = llvm::is_contained(iterators, utils::IteratorType::reduction);
  for (auto [i, it] : llvm::enumerate(iterators)) {
    Factor f;
    f.kind =
        it == utils::IteratorType::reduction ? Kind::Reduction : Kind::Parallel;
    f.size = ShapedType::isDynamic(ranges[i]) ? -1 : ranges[i];
    rule.factors.push_back(f);
  }
  auto needReplication = [&](AffineExpr e) {
    e.walk([&](AffineExpr sub) {
      if (auto d = dyn_cast<AffineDimExpr>(sub))
        rule.factors[d.getPosition()].kind = Kind::NeedReplication;
    });
  };
  rule.initOf.assign(rule.numOperands, -1);
  for (OpOperand &operand : raw->getOpOperands()) {
    if (!isa<RankedTensorType>(operand.get().getType())) {
      rule.slotDims.push_back(std::nullopt);
      continue;
    }
    SmallVector<int> dims;
    SmallVector<int> seen(numLoops, 0);
    for (AffineExpr e : maps[operand.getOperandNumber()].getResults()) {
      auto d = dyn_cast<AffineDimExpr>(e);
      if (!d) {
        dims.push_back(-1);
        needReplication(e);
        continue;
      }
      dims.push_back(d.getPosition());
      if (++seen[d.getPosition()] > 1)
        needReplication(e);
    }
    rule.slotDims.push_back(dims);
  }
  // A parallel loop missing from an init would leave that result's terms
  // spread over ranks.
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = maps[init.getOperandNumber()];
    for (unsigned l = 0; l < numLoops; ++l)
      if (rule.factors[l].kind == Kind::Parallel && !map.isFunctionOfDim(l))
        rule.factors[l].kind = Kind::NeedReplication;
  }
  bool combinersKnown = true;
  for (OpResult r : raw->getResults()) {
    OpOperand *init = op.getDpsInitOperand(r.getResultNumber());
    rule.initOf[init->getOperandNumber()] = r.getResultNumber();
    rule.slotDims.push_back(rule.slotDims[init->getOperandNumber()]);
    std::optional<ReduceKind> kind;
    if (reduces) {
      kind = combiner(op, r.getResultNumber());
      combinersKnown &= kind.has_value();
    }
    rule.resultCombiner.push_back(kind);
  }
  if (!combinersKnown)
    for (Factor &f : rule.factors)
      if (f.kind == Kind::Reduction)
        f.kind = Kind::NeedReplication;

  if (op.getNumDpsInits() != 1 || raw->getNumResults() != 1)
    return rule;
  OpOperand *init = op.getDpsInitOperand(0);
  SmallVector<unsigned> candidates;
  for (OpOperand *in : op.getDpsInputOperands())
    if (isa<RankedTensorType>(in->get().getType()))
      candidates.push_back(in->getOperandNumber());
  addLinearAlts(rule, raw, candidates, {init->getOperandNumber()});
  if (auto fill = dyn_cast<linalg::FillOp>(raw))
    if (std::optional<ReduceKind> k = identityKind(fill.getInputs()[0]))
      rule.alts.push_back(
          {{init->getOperandNumber()},
           *k == ReduceKind::Sum
               ? SmallVector<ReduceKind>{ReduceKind::Sum, ReduceKind::Avg}
               : SmallVector<ReduceKind>{*k}});
  return rule;
}

static std::optional<ShardingRule> softmaxRule(linalg::SoftmaxOp op) {
  auto input = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto output = dyn_cast<RankedTensorType>(op.getOutput().getType());
  if (!input || !output || input.getRank() != output.getRank() ||
      op->getNumResults() != 1)
    return std::nullopt;
  ShardingRule rule = identityRule(op, input.getRank());
  rule.factors[op.getDimension()].kind = Factor::Kind::NeedReplication;
  rule.initOf[1] = 0;
  return rule;
}

namespace {
struct SoftmaxRuleModel
    : ShardingRuleOpInterface::ExternalModel<SoftmaxRuleModel,
                                             linalg::SoftmaxOp> {
  std::optional<ShardingRule> getShardingRule(Operation *op) const {
    return softmaxRule(cast<linalg::SoftmaxOp>(op));
  }
};

template <typename OpTy>
struct LinalgRuleModel
    : ShardingRuleOpInterface::ExternalModel<LinalgRuleModel<OpTy>, OpTy> {
  std::optional<ShardingRule> getShardingRule(Operation *op) const {
    return linalgRule(cast<linalg::LinalgOp>(op));
  }
};
} // namespace

template <typename... OpTys> static void attachLinalgModels(MLIRContext *ctx) {
  (OpTys::template attachInterface<LinalgRuleModel<OpTys>>(*ctx), ...);
}

void spmd::registerLinalgRuleModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    attachLinalgModels<
#define GET_OP_LIST
#include "mlir/Dialect/Linalg/IR/LinalgStructuredOps.cpp.inc"
        >(ctx);
    linalg::SoftmaxOp::attachInterface<SoftmaxRuleModel>(*ctx);
  });
}
