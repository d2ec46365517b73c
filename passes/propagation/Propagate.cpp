//===- Propagate.cpp - spmd-propagate: a layout for every tensor value ----===//
//
// Gives every tensor value of every annotated func.func a layout, so that
// afterwards the function is layout-consistent (COMMON.md / DESIGN.md 3):
//
//  * op results carry the `spmd.layout` op attribute (one #spmd.layout, or an
//    array for several results; ops whose results are not all ranked tensors
//    get none), unannotated function arguments / results the `spmd.layout`
//    argument / result attribute; spmd.constrain results have the
//    constrain's layout and carry no attribute. A `spmd.layout` op
//    attribute present before the pass is a requirement: the op makes that
//    layout if its rule allows, else the attribute is rewritten to what the
//    op makes and a constrain right after it restores the user's layout;
//  * every op's operand layouts (the producers' layouts) and result layouts
//    fit the op's rule below;
//  * layouts change only at spmd.constrain. Propagation inserts constrains
//    before an op whose rule needs another operand layout than the producer
//    gives, before func.return where a returned value's layout differs from
//    the declared result layout, and after an op whose pre-existing
//    `spmd.layout` attribute the op cannot produce.
//
// The mesh of a function is the one its annotations name; two different
// meshes in one function are an error; a function without any annotation is
// left alone. Only single-block functions are handled (scf-free programs).
//
// Factor model
// ------------
// A rule maps every dim of every ranked-tensor operand and result to a factor
// (like an einsum letter) or to none. On each mesh axis an op picks one of:
//
//  * None: every tensor operand and result is R on that axis;
//  * Shard(f): factor f is split on that axis. A value with f at dim d is
//    S(d); a value without f is R, except that for a reduction factor every
//    result and its `outs` init are P(kind of that result's combiner);
//  * Partial(alt, kind): the op is linear in the operands of `alt`: those are
//    P(kind) (kind sum or avg, or the kinds the alt allows), every other
//    tensor operand is R, every result P(kind).
//
// A factor split on several axes nests in mesh order (S(d) on each). The
// choices, per op kind:
//
//  * linalg ops (any LinalgOp on tensors: named ops and linalg.generic):
//    one factor per loop from the indexing maps. A dim whose map expression is
//    not a plain loop dim has no factor, and the loops in such an expression
//    (and loops appearing twice in one operand, and parallel loops missing
//    from some init) cannot be split; loops the payload reads with
//    linalg.index can (spmd-partition offsets the index by the rank's
//    chunk offset). A reduction loop can be split only when every result's
//    combiner is known: yield(out OP x) with OP addf/addi -> sum,
//    maximumf/maxnumf/maxsi/maxui -> max, minimumf/minnumf/minsi/minui ->
//    min. Results are tied to their inits (same layout). Partial alts
//    (single-init ops only): every set S of tensor inputs such that the
//    payload is linear in S (+ the out arg if the payload reads it), with
//    add/sub of two linear terms, neg, mul by a replicated term, div by a
//    replicated term, extf/truncf: e.g. matmul {A, init}, {B, init};
//    elementwise add {a, b, init}; mul {a, init}, {b, init}; transpose,
//    broadcast, copy {in, init}; sum-reduce {in, init}. The init is in every
//    alt (P(kind) too).
//  * linalg.fill: as above, plus the alt {init} with P(k) when the fill value
//    is the identity of k (0.0/0 -> sum or avg, -inf -> max, +inf -> min).
//  * arith/math elementwise ops on tensors (ElementwiseMappable): one
//    parallel factor per dim shared by all operands and results; partial
//    alts from the same linearity rules (addf/subf/addi/subi {a, b}, negf
//    {a}, mulf/muli {a} or {b}, divf {a}, extf/truncf {a}).
//  * tensor.empty: any layout (parallel factor per dim; any partial kind).
//    An empty tensor is never resharded: where a consumer needs another
//    layout, a second tensor.empty with that layout is made for it (and
//    reshards of empties cost nothing in the model).
//  * arith.constant, tensor.splat, tensor.from_elements: R only (results
//    have no factors).
//  * tensor.cast between ranked types: like an elementwise op; alt {source}.
//  * tensor.dim with a constant index: any layout of the source that does not
//    split the queried dim (partial of any kind included).
//  * tensor.expand_shape / collapse_shape: per reassociation group, the
//    collapsed dim and the outermost expanded dim share a factor, and
//    only when the torch.chunk boundaries of both (nested over the mesh axes
//    splitting it) are identical; other expanded dims have no factor. Alt
//    {src}.
//  * tensor.extract_slice: a source dim that is taken whole (offset 0, full
//    static size, stride 1) shares a factor with its result dim; other dims
//    have none. Alt {source}.
//  * tensor.insert_slice: a dest dim that the source covers whole shares a
//    factor with the source and result dims; other dims have none. Alt
//    {source, dest}.
//    Rank-reducing slices (either kind) are R only: no factors, no alt.
//  * tensor.concat: every dim but the concatenated one shares a factor with
//    all inputs; the concatenated dim has none. Alt {all inputs}.
//  * tensor.pad: dims with zero low and high padding share a factor; others
//    none. Alt {source} when the padding value is constant zero.
//  * spmd.constrain: no requirement on its input (it is the reshard point);
//    its result has the constrain's layout.
//  * func.return: operand i has the declared layout of result i when there
//    is one (a constrain is inserted otherwise).
//  * anything else touching tensors (func.call included): no rule. Operands
//    are constrained to R, results are R, and a remark names the op.
//
// Propagation
// -----------
// Each value has one optional placement per mesh axis (unknown until set);
// annotations set them first; a set placement is never changed (refinement
// only). A FIFO worklist visits ops (first in program order): on every mesh
// axis the op enumerates the choices implied by its operands' and results'
// known placements (Shard of the factor of each S(d), Partial alts for each
// P) plus None, costs each with CostModel.h (operand: known -> needed,
// result: produced -> known) and picks the cheapest (ties: the first, None
// last). Two refinements of the cost:
//
//  * lookahead: a result that the choice makes partial and whose placement
//    is still unknown is charged its eventual reduction (P -> R), so a
//    partial moves on only while reducing it later costs no more than
//    reducing the operand now (a bias gradient's sum stays partial; a
//    replicated computation does not become partial for nothing);
//  * sharing: reducing a partial operand is one constrain that serves every
//    user (constrains are shared), so one user is charged 1/n of it.
//
// A choice that costs nothing fills the unknown placements of its operands
// and results (except P into a function argument), and ops next to changed
// values are visited again. A choice that communicates is deferred to a
// queue ordered by cost while free propagation remains; when the worklist
// is empty the cheapest deferred op is decided (with what is known by then)
// and free propagation resumes. So annotations and the layouts they imply
// for free spread first, and conflicts are settled cheapest first, not in
// visiting order. At the fixpoint unknown placements become R, and a last
// walk in program order makes the same choice with the producers' final
// layouts, writes the attributes and inserts the constrains (a user's
// constrain, and a gathered value feeding a transpose, are reused by later
// reshards of the same value).
//===----------------------------------------------------------------------===//

#include "core/CostModel.h"
#include "passes/propagation/Passes.h"

#include "dialects/spmd/SPMDOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"

#include <deque>
#include <queue>

namespace spmd {
#define GEN_PASS_DEF_SPMDPROPAGATE
#include "passes/propagation/Passes.h.inc"
} // namespace spmd

using namespace mlir;
using ::spmd::CommCostParams;
using ::spmd::Layout;
using ::spmd::LayoutAttr;
using ::spmd::Mesh;
using ::spmd::Placement;
using ::spmd::ReduceKind;

namespace {

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

/// A factor may be split on a mesh axis unless it is opaque. A reshape factor
/// also needs equal torch.chunk boundaries: splitting `size` must give the
/// same ranges as splitting `outerSize` and scaling by `innerSize`.
struct Factor {
  enum class Kind { Parallel, Reduction, Opaque } kind = Kind::Parallel;
  bool reshape = false;
  int64_t size = 0, outerSize = 0, innerSize = 1;
};

/// A set of operands the op is linear in, with the partial kinds allowed.
struct PartialAlt {
  SmallVector<unsigned> operands;
  SmallVector<ReduceKind> kinds;
};

/// The factor rule of one op. Slots number operands first, then results;
/// a slot that is not a ranked tensor has no dims.
struct OpRule {
  SmallVector<Factor> factors;
  SmallVector<std::optional<SmallVector<int>>> slotDims;
  /// Per result: the partial kind a split reduction factor gives it.
  SmallVector<std::optional<ReduceKind>> resultReduce;
  /// Per operand: the result it is the `outs` init of, or -1.
  SmallVector<int> initOf;
  SmallVector<PartialAlt> alts;
  unsigned numOperands = 0;

  bool isResult(unsigned slot) const { return slot >= numOperands; }
};

enum class OpKind { Skip, Rule, NoRule, Return, Constrain };

static bool isRankedTensor(Value v) {
  return isa<RankedTensorType>(v.getType());
}

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

/// The reduction kind of a combiner op name, if it is one we know.
static std::optional<ReduceKind> combinerKind(StringRef name) {
  if (name == "arith.addf" || name == "arith.addi")
    return ReduceKind::Sum;
  if (name == "arith.maximumf" || name == "arith.maxnumf" ||
      name == "arith.maxsi" || name == "arith.maxui")
    return ReduceKind::Max;
  if (name == "arith.minimumf" || name == "arith.minnumf" ||
      name == "arith.minsi" || name == "arith.minui")
    return ReduceKind::Min;
  return std::nullopt;
}

/// The combiner of result `r` of a linalg op: yield(out OP x) or
/// yield(x OP out) with x independent of out.
static std::optional<ReduceKind> linalgCombiner(linalg::LinalgOp op,
                                                unsigned r) {
  Block *body = op.getBlock();
  if (!body)
    return std::nullopt;
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
  return combinerKind(def->getName().getStringRef());
}

/// Degree of an op's result in the partial terms given the degrees of its
/// operands: 0 replicated, 1 linear, -1 neither.
static int combineDegree(Operation *op, ArrayRef<int> degs) {
  if (llvm::is_contained(degs, -1))
    return -1;
  if (llvm::all_of(degs, [](int d) { return d == 0; }))
    return 0;
  StringRef name = op->getName().getStringRef();
  if ((name == "arith.addf" || name == "arith.subf" || name == "arith.addi" ||
       name == "arith.subi") &&
      degs.size() == 2)
    return degs[0] == degs[1] ? degs[0] : -1;
  if ((name == "arith.negf" || name == "arith.extf" ||
       name == "arith.truncf") &&
      degs.size() == 1)
    return degs[0];
  if ((name == "arith.mulf" || name == "arith.muli") && degs.size() == 2)
    return degs[0] + degs[1] <= 1 ? degs[0] + degs[1] : -1;
  if (name == "arith.divf" && degs.size() == 2)
    return degs[1] == 0 ? degs[0] : -1;
  return -1;
}

/// Degree of `v` (in `body`) in the block arguments `partial`.
static int degreeOf(Value v, const DenseSet<Value> &partial, Block *body,
                    int depth = 0) {
  if (partial.contains(v))
    return 1;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != body)
    return 0;
  if (depth > 64)
    return -1;
  SmallVector<int> degs;
  for (Value o : def->getOperands())
    degs.push_back(degreeOf(o, partial, body, depth + 1));
  return combineDegree(def, degs);
}

/// Cost (seconds) charged for not producing a user-written result layout:
/// more than any reshard.
static constexpr double kPinnedMismatchCost = 1e6;

static const SmallVector<ReduceKind> kLinearKinds = {ReduceKind::Sum,
                                                     ReduceKind::Avg};

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

/// A rule with one fresh factor per dim of `rank`.
static OpRule identityDimsRule(Operation *op, int64_t rank) {
  OpRule rule;
  rule.numOperands = op->getNumOperands();
  rule.factors.resize(rank);
  SmallVector<int> dims = llvm::to_vector(llvm::seq<int>(0, rank));
  for (Value v : op->getOperands())
    rule.slotDims.push_back(isRankedTensor(v) ? std::optional(dims)
                                              : std::nullopt);
  for (Value v : op->getResults())
    rule.slotDims.push_back(isRankedTensor(v) ? std::optional(dims)
                                              : std::nullopt);
  rule.initOf.assign(rule.numOperands, -1);
  rule.resultReduce.assign(op->getNumResults(), std::nullopt);
  return rule;
}

/// Adds the partial alts of an op whose payload `body` yields `yielded`, for
/// every subset of `candidates` (block args paired with operand numbers);
/// `always` is added to every alt's partial args and operands.
static void addLinearAlts(OpRule &rule,
                          ArrayRef<std::pair<Value, unsigned>> candidates,
                          ArrayRef<std::pair<Value, unsigned>> always,
                          function_ref<int(const DenseSet<Value> &)> degree) {
  if (candidates.empty() || candidates.size() > 4)
    return;
  for (unsigned mask = 1; mask < (1u << candidates.size()); ++mask) {
    DenseSet<Value> partial;
    PartialAlt alt;
    alt.kinds = kLinearKinds;
    for (auto [i, c] : llvm::enumerate(candidates))
      if (mask & (1u << i)) {
        partial.insert(c.first);
        alt.operands.push_back(c.second);
      }
    for (auto [arg, operand] : always) {
      if (arg)
        partial.insert(arg);
      alt.operands.push_back(operand);
    }
    if (degree(partial) == 1)
      rule.alts.push_back(std::move(alt));
  }
}

static OpRule linalgRule(linalg::LinalgOp op) {
  Operation *raw = op.getOperation();
  OpRule rule;
  rule.numOperands = raw->getNumOperands();
  unsigned numLoops = op.getNumLoops();
  rule.factors.resize(numLoops);
  for (auto [i, it] : llvm::enumerate(op.getIteratorTypesArray()))
    rule.factors[i].kind = it == utils::IteratorType::reduction
                               ? Factor::Kind::Reduction
                               : Factor::Kind::Parallel;
  auto markOpaque = [&](AffineExpr e) {
    e.walk([&](AffineExpr sub) {
      if (auto d = dyn_cast<AffineDimExpr>(sub))
        rule.factors[d.getPosition()].kind = Factor::Kind::Opaque;
    });
  };
  rule.initOf.assign(rule.numOperands, -1);
  SmallVector<std::optional<SmallVector<int>>> operandDims(rule.numOperands);
  for (OpOperand &operand : raw->getOpOperands()) {
    if (!isRankedTensor(operand.get()))
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<int> dims;
    SmallVector<int> seen(numLoops, 0);
    for (AffineExpr e : map.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) {
        dims.push_back(d.getPosition());
        if (++seen[d.getPosition()] > 1)
          rule.factors[d.getPosition()].kind = Factor::Kind::Opaque;
      } else {
        dims.push_back(-1);
        markOpaque(e);
      }
    }
    operandDims[operand.getOperandNumber()] = dims;
  }
  // A parallel loop missing from an init would leave that result's terms
  // spread over ranks: not splittable.
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    for (unsigned l = 0; l < numLoops; ++l)
      if (rule.factors[l].kind == Factor::Kind::Parallel &&
          !map.isFunctionOfDim(l))
        rule.factors[l].kind = Factor::Kind::Opaque;
  }
  rule.slotDims = operandDims;
  unsigned numInits = op.getNumDpsInits();
  rule.resultReduce.assign(raw->getNumResults(), std::nullopt);
  bool combinersKnown = true;
  for (unsigned r = 0; r < raw->getNumResults() && r < numInits; ++r) {
    OpOperand *init = op.getDpsInitOperand(r);
    rule.initOf[init->getOperandNumber()] = r;
    rule.slotDims.push_back(operandDims[init->getOperandNumber()]);
    if (op.getNumReductionLoops() > 0) {
      rule.resultReduce[r] = linalgCombiner(op, r);
      combinersKnown &= rule.resultReduce[r].has_value();
    }
  }
  if (!combinersKnown)
    for (Factor &f : rule.factors)
      if (f.kind == Factor::Kind::Reduction)
        f.kind = Factor::Kind::Opaque;
  // A loop the payload reads through linalg.index may be split: the
  // partitioner adds the rank's chunk offset to the index.

  // Partial alts from the payload's linearity.
  Block *body = op.getBlock();
  if (body && numInits == 1 && raw->getNumResults() == 1) {
    auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
    OpOperand *init = op.getDpsInitOperand(0);
    BlockArgument outArg = op.getMatchingBlockArgument(init);
    if (yield && yield.getNumOperands() == 1) {
      SmallVector<std::pair<Value, unsigned>> candidates;
      for (OpOperand *in : op.getDpsInputOperands())
        if (isRankedTensor(in->get()))
          candidates.push_back(
              {op.getMatchingBlockArgument(in), in->getOperandNumber()});
      std::pair<Value, unsigned> always = {outArg.use_empty() ? Value()
                                                              : Value(outArg),
                                           init->getOperandNumber()};
      addLinearAlts(rule, candidates, always,
                    [&](const DenseSet<Value> &partial) {
                      return degreeOf(yield.getOperand(0), partial, body);
                    });
    }
    if (auto fill = dyn_cast<linalg::FillOp>(raw))
      if (std::optional<ReduceKind> k = identityKind(fill.getInputs()[0]))
        rule.alts.push_back({{init->getOperandNumber()},
                             *k == ReduceKind::Sum
                                 ? kLinearKinds
                                 : SmallVector<ReduceKind>{*k}});
  }
  return rule;
}

/// Rule of an elementwise arith/math op on tensors, or nullopt.
static std::optional<OpRule> elementwiseRule(Operation *op) {
  if (op->getNumResults() == 0 || !isRankedTensor(op->getResult(0)))
    return std::nullopt;
  int64_t rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        t && t.getRank() != rank)
      return std::nullopt;
  OpRule rule = identityDimsRule(op, rank);
  // Linear in which tensor operands: the op's own degree rule.
  SmallVector<std::pair<Value, unsigned>> candidates;
  for (OpOperand &o : op->getOpOperands())
    if (isRankedTensor(o.get()))
      candidates.push_back({o.get(), o.getOperandNumber()});
  addLinearAlts(rule, candidates, {}, [&](const DenseSet<Value> &partial) {
    SmallVector<int> degs;
    for (Value o : op->getOperands())
      degs.push_back(partial.contains(o) ? 1 : 0);
    return combineDegree(op, degs);
  });
  return rule;
}

/// Reshape rule: `collapsed` / `expanded` are the types, `groups` the
/// reassociation (collapsed dim g <-> expanded dims groups[g]).
static OpRule reshapeRule(Operation *op, RankedTensorType collapsed,
                          RankedTensorType expanded,
                          ArrayRef<ReassociationIndices> groups,
                          bool operandIsCollapsed) {
  OpRule rule;
  rule.numOperands = op->getNumOperands();
  SmallVector<int> collapsedDims(collapsed.getRank(), -1);
  SmallVector<int> expandedDims(expanded.getRank(), -1);
  for (auto [g, group] : llvm::enumerate(groups)) {
    Factor f;
    // The outermost expanded dim of the group carries the split.
    int outer = group.front();
    if (group.size() > 1) {
      f.reshape = true;
      f.size = collapsed.getDimSize(g);
      f.outerSize = expanded.getDimSize(outer);
      f.innerSize = 1;
      bool dynamic = ShapedType::isDynamic(f.size);
      for (int64_t d : group) {
        dynamic |= expanded.isDynamicDim(d);
        if (d > outer && !expanded.isDynamicDim(d))
          f.innerSize *= expanded.getDimSize(d);
      }
      if (dynamic)
        f.kind = Factor::Kind::Opaque;
    }
    collapsedDims[g] = rule.factors.size();
    expandedDims[outer] = rule.factors.size();
    rule.factors.push_back(f);
  }
  for (Value v : op->getOperands())
    rule.slotDims.push_back(
        v == op->getOperand(0)
            ? std::optional(operandIsCollapsed ? collapsedDims : expandedDims)
            : std::nullopt);
  rule.slotDims.push_back(operandIsCollapsed ? expandedDims : collapsedDims);
  rule.initOf.assign(rule.numOperands, -1);
  rule.resultReduce.assign(1, std::nullopt);
  rule.alts.push_back({{0}, kLinearKinds});
  return rule;
}

/// Does a slice take dim `d` of a `size`-sized dim whole?
static bool isWholeDim(OffsetSizeAndStrideOpInterface op, unsigned d,
                       int64_t size) {
  return !ShapedType::isDynamic(size) && op.getStaticOffsets()[d] == 0 &&
         op.getStaticSizes()[d] == size && op.getStaticStrides()[d] == 1;
}

static OpRule extractSliceRule(tensor::ExtractSliceOp op) {
  OpRule rule;
  rule.numOperands = op->getNumOperands();
  RankedTensorType src = op.getSourceType();
  llvm::SmallBitVector dropped = op.getDroppedDims();
  bool rankReducing = dropped.any();
  SmallVector<int> srcDims(src.getRank(), -1), resDims;
  for (int64_t d = 0; d < src.getRank(); ++d) {
    if (dropped.test(d))
      continue;
    int factor = -1;
    if (!rankReducing && isWholeDim(op, d, src.getDimSize(d))) {
      factor = rule.factors.size();
      rule.factors.emplace_back();
    }
    srcDims[d] = factor;
    resDims.push_back(factor);
  }
  rule.slotDims.push_back(srcDims);
  for (unsigned i = 1; i < rule.numOperands; ++i)
    rule.slotDims.push_back(std::nullopt);
  rule.slotDims.push_back(resDims);
  rule.initOf.assign(rule.numOperands, -1);
  rule.resultReduce.assign(1, std::nullopt);
  if (!rankReducing)
    rule.alts.push_back({{0}, kLinearKinds});
  return rule;
}

static OpRule insertSliceRule(tensor::InsertSliceOp op) {
  OpRule rule;
  rule.numOperands = op->getNumOperands();
  RankedTensorType dest = op.getDestType();
  llvm::SmallBitVector dropped = op.getDroppedDims();
  bool rankReducing = dropped.any();
  SmallVector<int> srcDims, destDims(dest.getRank(), -1);
  for (int64_t d = 0; d < dest.getRank(); ++d) {
    if (dropped.test(d))
      continue;
    int factor = -1;
    if (!rankReducing && isWholeDim(op, d, dest.getDimSize(d))) {
      factor = rule.factors.size();
      rule.factors.emplace_back();
    }
    destDims[d] = factor;
    srcDims.push_back(factor);
  }
  rule.slotDims.push_back(srcDims);
  rule.slotDims.push_back(destDims);
  for (unsigned i = 2; i < rule.numOperands; ++i)
    rule.slotDims.push_back(std::nullopt);
  rule.slotDims.push_back(destDims);
  rule.initOf.assign(rule.numOperands, -1);
  rule.resultReduce.assign(1, std::nullopt);
  if (!rankReducing)
    rule.alts.push_back({{0, 1}, kLinearKinds});
  return rule;
}

static OpRule concatRule(tensor::ConcatOp op) {
  int64_t rank = op.getResultType().getRank();
  OpRule rule = identityDimsRule(op, rank);
  for (auto &dims : rule.slotDims)
    if (dims)
      (*dims)[op.getDim()] = -1;
  PartialAlt alt{{}, kLinearKinds};
  for (unsigned i = 0; i < rule.numOperands; ++i)
    alt.operands.push_back(i);
  rule.alts.push_back(alt);
  return rule;
}

static OpRule padRule(tensor::PadOp op) {
  int64_t rank = op.getResultType().getRank();
  OpRule rule = identityDimsRule(op, rank);
  for (int64_t d = 0; d < rank; ++d)
    if (op.getStaticLow()[d] != 0 || op.getStaticHigh()[d] != 0)
      for (auto &dims : rule.slotDims)
        if (dims)
          (*dims)[d] = -1;
  if (Value pad = op.getConstantPaddingValue())
    if (identityKind(pad) == ReduceKind::Sum)
      rule.alts.push_back({{0}, kLinearKinds});
  return rule;
}

/// Classifies `op` and builds its rule.
static OpKind classify(Operation *op, OpRule &rule) {
  if (isa<func::ReturnOp>(op))
    return OpKind::Return;
  if (isa<::spmd::ConstrainOp>(op))
    return OpKind::Constrain;
  bool touchesTensors = llvm::any_of(op->getOperands(), isRankedTensor) ||
                        llvm::any_of(op->getResults(), isRankedTensor);
  if (!touchesTensors)
    return OpKind::Skip;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    if (!linalgOp.hasPureTensorSemantics())
      return OpKind::NoRule;
    rule = linalgRule(linalgOp);
    return OpKind::Rule;
  }
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    rule = identityDimsRule(op, empty.getType().getRank());
    rule.alts.push_back(
        {{},
         {ReduceKind::Sum, ReduceKind::Avg, ReduceKind::Max, ReduceKind::Min}});
    return OpKind::Rule;
  }
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    // Reads only the shape: any layout that does not split the queried dim.
    auto type = dyn_cast<RankedTensorType>(dim.getSource().getType());
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!type || !index || *index < 0 || *index >= type.getRank())
      return OpKind::NoRule;
    rule = identityDimsRule(op, type.getRank());
    (*rule.slotDims[0])[*index] = -1;
    rule.alts.push_back(
        {{0},
         {ReduceKind::Sum, ReduceKind::Avg, ReduceKind::Max, ReduceKind::Min}});
    return OpKind::Rule;
  }
  if (auto cast = dyn_cast<tensor::CastOp>(op)) {
    auto src = dyn_cast<RankedTensorType>(cast.getSource().getType());
    auto dst = dyn_cast<RankedTensorType>(cast.getType());
    if (!src || !dst || src.getRank() != dst.getRank())
      return OpKind::NoRule;
    rule = identityDimsRule(op, src.getRank());
    rule.alts.push_back({{0}, kLinearKinds});
    return OpKind::Rule;
  }
  if (isa<arith::ConstantOp, tensor::SplatOp, tensor::FromElementsOp>(op) &&
      op->getNumResults() == 1) {
    rule = identityDimsRule(op, 0);
    rule.slotDims.back() = SmallVector<int>(
        cast<RankedTensorType>(op->getResult(0).getType()).getRank(), -1);
    return OpKind::Rule;
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    rule = reshapeRule(op, expand.getSrcType(), expand.getResultType(),
                       expand.getReassociationIndices(), true);
    return OpKind::Rule;
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    rule = reshapeRule(op, collapse.getResultType(), collapse.getSrcType(),
                       collapse.getReassociationIndices(), false);
    return OpKind::Rule;
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    rule = extractSliceRule(slice);
    return OpKind::Rule;
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    rule = insertSliceRule(insert);
    return OpKind::Rule;
  }
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    rule = concatRule(concat);
    return OpKind::Rule;
  }
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    rule = padRule(pad);
    return OpKind::Rule;
  }
  if (op->getNumRegions() == 0 && OpTrait::hasElementwiseMappableTraits(op)) {
    if (std::optional<OpRule> r = elementwiseRule(op)) {
      rule = std::move(*r);
      return OpKind::Rule;
    }
  }
  return OpKind::NoRule;
}

//===----------------------------------------------------------------------===//
// Choices and costs
//===----------------------------------------------------------------------===//

/// One placement per mesh axis, unknown until set.
using PartialLayout = SmallVector<std::optional<Placement>, 4>;

struct AxisChoice {
  enum class Kind { None, Shard, Partial } kind = Kind::None;
  int factor = -1;
  int alt = -1;
  ReduceKind reduce = ReduceKind::Sum;

  bool operator==(const AxisChoice &o) const {
    return kind == o.kind && factor == o.factor && alt == o.alt &&
           (kind != Kind::Partial || reduce == o.reduce);
  }
};

/// The placement `choice` gives slot `slot` of an op with `rule`.
static Placement required(const OpRule &rule, unsigned slot,
                          const AxisChoice &choice) {
  switch (choice.kind) {
  case AxisChoice::Kind::None:
    return Placement::replicate();
  case AxisChoice::Kind::Shard: {
    const SmallVector<int> &dims = *rule.slotDims[slot];
    for (auto [d, f] : llvm::enumerate(dims))
      if (f == choice.factor)
        return Placement::shard(d);
    if (rule.factors[choice.factor].kind == Factor::Kind::Reduction) {
      int result = rule.isResult(slot) ? int(slot - rule.numOperands)
                                       : rule.initOf[slot];
      if (result >= 0 && rule.resultReduce[result])
        return Placement::partial(*rule.resultReduce[result]);
    }
    return Placement::replicate();
  }
  case AxisChoice::Kind::Partial:
    if (rule.isResult(slot) ||
        llvm::is_contained(rule.alts[choice.alt].operands, slot))
      return Placement::partial(choice.reduce);
    return Placement::replicate();
  }
  llvm_unreachable("unknown choice");
}

/// Global size of a tensor in bytes (dynamic dims count as 1024).
static double globalBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  double n = 1;
  for (int64_t d : tensor.getShape())
    n *= ShapedType::isDynamic(d) ? 1024.0 : double(d);
  Type elem = tensor.getElementType();
  unsigned bits = elem.isIntOrFloat() ? elem.getIntOrFloatBitWidth() : 64;
  return n * std::max(1u, bits / 8);
}

/// Bytes a reshard of operand / result `v` would move; 0 (free, and left out
/// of the cost) for an operand made by tensor.empty, which has no contents.
static double movedBytes(Value v, bool isResult) {
  if (!isResult && v.getDefiningOp<tensor::EmptyOp>())
    return 0;
  return globalBytes(v.getType());
}

/// Does splitting `factor` over `axes` (mesh order) keep reshape chunk
/// boundaries? Compares every device's range of both dims.
static bool reshapeSplitOk(const Factor &f, const Mesh &mesh,
                           ArrayRef<int64_t> axes) {
  std::vector<int64_t> splits;
  for (int64_t a : axes)
    splits.push_back(mesh.axisSizes[a]);
  std::vector<int64_t> indices(splits.size(), 0);
  while (true) {
    ::spmd::Range whole = ::spmd::nestedChunkRange(f.size, splits, indices);
    ::spmd::Range outer =
        ::spmd::nestedChunkRange(f.outerSize, splits, indices);
    if (whole.offset != outer.offset * f.innerSize ||
        whole.size != outer.size * f.innerSize)
      return false;
    size_t i = indices.size();
    while (i > 0 && ++indices[i - 1] == splits[i - 1])
      indices[--i] = 0;
    if (i == 0)
      return true;
  }
}

/// The state of one function's propagation.
class FunctionPropagation {
public:
  FunctionPropagation(func::FuncOp fn, FlatSymbolRefAttr meshRef,
                      const Mesh &mesh, bool explain)
      : fn(fn), meshRef(meshRef), mesh(mesh), explain(explain) {}

  LogicalResult run();

private:
  PartialLayout &state(Value v) {
    auto it = layouts.find(v);
    if (it == layouts.end())
      it = layouts.insert({v, PartialLayout(mesh.rank())}).first;
    return it->second;
  }
  Layout finalLayout(Value v) {
    Layout l = Layout::replicated(mesh.rank());
    PartialLayout &s = state(v);
    for (int64_t a = 0; a < mesh.rank(); ++a)
      if (s[a])
        l.placements[a] = *s[a];
    return l;
  }
  void setKnown(Value v, const Layout &l) {
    PartialLayout &s = state(v);
    for (int64_t a = 0; a < mesh.rank(); ++a)
      s[a] = l.placements[a];
  }
  LayoutAttr attr(const Layout &l) { return LayoutAttr::get(meshRef, l); }

  OpKind kindOf(Operation *op) {
    auto it = kinds.find(op);
    if (it != kinds.end())
      return it->second;
    OpRule rule;
    OpKind kind = classify(op, rule);
    if (kind == OpKind::Rule)
      rules[op] = std::move(rule);
    kinds[op] = kind;
    return kind;
  }

  /// Number of distinct ops using `v` (a reduction of `v` serves them all),
  /// counted up to a cap (a share below 1/16 changes no decision).
  static unsigned numUsers(Value v) {
    SmallPtrSet<Operation *, 16> ops;
    for (Operation *user : v.getUsers())
      if (ops.insert(user).second && ops.size() == 16)
        break;
    return std::max<unsigned>(1, ops.size());
  }
  /// Is `v` known partial on some mesh axis (only then its users matter)?
  bool isPartialAnywhere(Value v) {
    auto it = layouts.find(v);
    return it != layouts.end() &&
           llvm::any_of(it->second, [](const std::optional<Placement> &p) {
             return p && p->isPartial();
           });
  }

  Value slotValue(Operation *op, unsigned slot) {
    return slot < op->getNumOperands()
               ? op->getOperand(slot)
               : op->getResult(slot - op->getNumOperands());
  }

  /// The choice per mesh axis for `op`, from `known` (one entry per slot,
  /// null for non-tensor slots).
  SmallVector<AxisChoice> decide(const OpRule &rule,
                                 ArrayRef<const PartialLayout *> known,
                                 ArrayRef<double> bytes, ArrayRef<bool> pinned,
                                 ArrayRef<unsigned> users,
                                 ArrayRef<Type> slotTypes,
                                 double *totalCost = nullptr);

  /// Fills unknown placements from `op`'s choice; enqueues neighbours.
  /// With `force` false, a choice that communicates is deferred (see run()).
  void visit(Operation *op, bool force = false);
  void assign(Value v, int64_t axis, Placement p);
  void enqueue(Operation *op);
  void enqueueNeighbours(Value v);

  /// The value of `v` in layout `to` before `before`: `v` itself or a
  /// (shared) constrain.
  Value constrainTo(Value v, const Layout &to, Operation *before,
                    StringRef why);
  LogicalResult materialize();
  /// Records why an inserted constrain is there: a `reason` attribute (which
  /// spmd-partition's explanations quote) and a remark.
  void explainConstrain(::spmd::ConstrainOp constrain, StringRef reason) {
    constrain->setAttr("reason",
                       StringAttr::get(constrain.getContext(), reason));
    constrain.emitRemark() << "spmd-propagate: " << reason;
  }

  func::FuncOp fn;
  FlatSymbolRefAttr meshRef;
  Mesh mesh;
  bool explain;
  CommCostParams costParams;
  DenseMap<Value, PartialLayout> layouts;
  DenseMap<Operation *, OpKind> kinds;
  DenseMap<Operation *, OpRule> rules;
  /// Layouts given by `spmd.layout` op attributes before the pass.
  DenseMap<Value, Layout> userResultLayouts;
  std::deque<Operation *> worklist;
  /// Ops whose choice communicates, cheapest first (then first deferred).
  struct Deferred {
    double cost;
    uint64_t seq;
    Operation *op;
    bool operator>(const Deferred &o) const {
      return cost != o.cost ? cost > o.cost : seq > o.seq;
    }
  };
  std::priority_queue<Deferred, std::vector<Deferred>, std::greater<Deferred>>
      deferred;
  uint64_t deferSeq = 0;
  DenseSet<Operation *> queued;
  bool changed = false;
  /// Layout of each value after materialization.
  DenseMap<Value, Layout> actual;
  DenseMap<std::pair<Value, Attribute>, Value> constrainCache;
};

SmallVector<AxisChoice> FunctionPropagation::decide(
    const OpRule &rule, ArrayRef<const PartialLayout *> known,
    ArrayRef<double> bytes, ArrayRef<bool> pinned, ArrayRef<unsigned> users,
    ArrayRef<Type> slotTypes, double *totalCost) {
  SmallVector<AxisChoice> choices;
  if (totalCost)
    *totalCost = 0;
  for (int64_t a = 0; a < mesh.rank(); ++a) {
    // Axes already splitting each factor (for reshape boundaries).
    auto splitOk = [&](int f) {
      const Factor &factor = rule.factors[f];
      if (factor.kind == Factor::Kind::Opaque)
        return false;
      if (!factor.reshape)
        return true;
      SmallVector<int64_t> axes;
      for (auto [b, c] : llvm::enumerate(choices))
        if (c.kind == AxisChoice::Kind::Shard && c.factor == f)
          axes.push_back(b);
      axes.push_back(a);
      return reshapeSplitOk(factor, mesh, axes);
    };
    SmallVector<AxisChoice> candidates;
    auto add = [&](AxisChoice c) {
      if (!llvm::is_contained(candidates, c))
        candidates.push_back(c);
    };
    for (unsigned s = 0; s < known.size(); ++s) {
      if (!known[s] || !(*known[s])[a])
        continue;
      const Placement &p = *(*known[s])[a];
      const SmallVector<int> &dims = *rule.slotDims[s];
      if (p.isShard() && p.dim < int64_t(dims.size()) && dims[p.dim] >= 0 &&
          splitOk(dims[p.dim]))
        add({AxisChoice::Kind::Shard, dims[p.dim], -1, ReduceKind::Sum});
      if (p.isPartial())
        for (auto [i, alt] : llvm::enumerate(rule.alts))
          if (llvm::is_contained(alt.kinds, p.reduce) &&
              (rule.isResult(s) || llvm::is_contained(alt.operands, s)))
            add({AxisChoice::Kind::Partial, -1, int(i), p.reduce});
    }
    add({});
    // Cost of each candidate: operands known -> needed, results made ->
    // known. Bytes are as the group of this axis sees the value.
    double bestCost = 0;
    int best = -1;
    for (auto [i, c] : llvm::enumerate(candidates)) {
      double cost = 0;
      for (unsigned s = 0; s < known.size(); ++s) {
        if (!known[s])
          continue;
        double groupBytes = bytes[s];
        for (int64_t b = 0; b < mesh.rank(); ++b)
          if (b != a && (*known[s])[b] && (*known[s])[b]->isShard())
            groupBytes /= double(mesh.axisSizes[b]);
        Placement need = required(rule, s, c);
        if (!(*known[s])[a]) {
          // Look ahead: a result made partial will have to be reduced
          // somewhere downstream (unless a consumer absorbs it, which the
          // consumer's own choice will weigh again). Charge that reduction
          // now so that a partial moves on only while it stays no more
          // expensive to reduce than the operand it came from.
          // A dynamic result's size is a guess: no lookahead there.
          if (rule.isResult(s) && need.isPartial() && bytes[s] != 0 &&
              cast<RankedTensorType>(slotTypes[s]).hasStaticShape())
            cost += ::spmd::axisReshardCost(need, Placement::replicate(),
                                            mesh.axisSizes[a], groupBytes,
                                            costParams);
          continue;
        }
        Placement have = *(*known[s])[a];
        // A result layout the user wrote on the op is a requirement.
        if (pinned[s] && have != need)
          cost += kPinnedMismatchCost;
        if (bytes[s] == 0)
          continue;
        if (rule.isResult(s)) {
          cost += ::spmd::axisReshardCost(need, have, mesh.axisSizes[a],
                                          groupBytes, costParams);
          continue;
        }
        double c = ::spmd::axisReshardCost(have, need, mesh.axisSizes[a],
                                           groupBytes, costParams);
        // Reducing a partial operand is one collective however many ops use
        // the reduced value (the constrain is shared): this use pays its
        // share. Keeping the partial instead multiplies reductions by the
        // fan-out, which the per-result lookahead above charges.
        if (have.isPartial() && !need.isPartial() && users[s] > 1)
          c /= double(users[s]);
        cost += c;
      }
      if (best < 0 || cost < bestCost * (1 - 1e-9)) {
        best = i;
        bestCost = cost;
      }
    }
    choices.push_back(candidates[best]);
    if (totalCost)
      *totalCost += bestCost;
  }
  return choices;
}

void FunctionPropagation::enqueue(Operation *op) {
  if (queued.insert(op).second)
    worklist.push_back(op);
}

void FunctionPropagation::enqueueNeighbours(Value v) {
  Region &body = fn.getBody();
  if (Operation *def = v.getDefiningOp())
    if (Operation *top = body.findAncestorOpInRegion(*def))
      enqueue(top);
  for (Operation *user : v.getUsers())
    if (Operation *top = body.findAncestorOpInRegion(*user))
      enqueue(top);
}

void FunctionPropagation::assign(Value v, int64_t axis, Placement p) {
  std::optional<Placement> &slot = state(v)[axis];
  if (slot)
    return;
  // Inputs of the function are never asked to arrive partial.
  if (p.isPartial() && isa<BlockArgument>(v))
    return;
  slot = p;
  changed = true;
}

void FunctionPropagation::visit(Operation *op, bool force) {
  switch (kindOf(op)) {
  case OpKind::Skip:
    return;
  case OpKind::NoRule:
    // Computed replicated: the results are R.
    for (Value r : op->getResults())
      if (isRankedTensor(r)) {
        changed = false;
        for (int64_t a = 0; a < mesh.rank(); ++a)
          assign(r, a, Placement::replicate());
        if (changed)
          enqueueNeighbours(r);
      }
    return;
  case OpKind::Return: {
    // Backward from the declared result layouts.
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      auto declared = fn.getResultAttrOfType<LayoutAttr>(
          i, ::spmd::SPMDDialect::kLayoutAttrName);
      if (!declared || !isRankedTensor(v))
        continue;
      changed = false;
      for (int64_t a = 0; a < mesh.rank(); ++a)
        assign(v, a, declared.getPlacements()[a]);
      if (changed)
        enqueueNeighbours(v);
    }
    return;
  }
  case OpKind::Constrain: {
    // Backward: the producer may as well make the constrained layout.
    auto constrain = cast<::spmd::ConstrainOp>(op);
    changed = false;
    for (int64_t a = 0; a < mesh.rank(); ++a)
      assign(constrain.getInput(), a, constrain.getLayout().getPlacements()[a]);
    if (changed)
      enqueueNeighbours(constrain.getInput());
    return;
  }
  case OpKind::Rule:
    break;
  }
  const OpRule &rule = rules[op];
  unsigned numSlots = op->getNumOperands() + op->getNumResults();
  // Copies: state() may grow the map and move its entries.
  SmallVector<PartialLayout> storage(numSlots);
  SmallVector<const PartialLayout *> known(numSlots, nullptr);
  SmallVector<double> bytes(numSlots, 0);
  SmallVector<bool> pinned(numSlots, false);
  SmallVector<unsigned> users(numSlots, 1);
  SmallVector<Type> types(numSlots);
  for (unsigned s = 0; s < numSlots; ++s) {
    Value v = slotValue(op, s);
    types[s] = v.getType();
    pinned[s] = rule.isResult(s) && userResultLayouts.count(v);
    if (!rule.isResult(s) && isPartialAnywhere(v))
      users[s] = numUsers(v);
    if (rule.slotDims[s] && isRankedTensor(v)) {
      storage[s] = state(v);
      known[s] = &storage[s];
      bytes[s] = movedBytes(v, rule.isResult(s));
    }
  }
  double cost = 0;
  SmallVector<AxisChoice> choices =
      decide(rule, known, bytes, pinned, users, types, &cost);
  if (!force && cost > 0) {
    // The choice communicates: defer it while free propagation remains, so
    // that the layouts it would fill can still come from a choice that
    // costs nothing; deferred ops are then decided cheapest first.
    bool fills = false;
    for (unsigned s = 0; s < numSlots && !fills; ++s)
      if (known[s])
        for (int64_t a = 0; a < mesh.rank(); ++a)
          fills |= choices[a].kind != AxisChoice::Kind::None && !(*known[s])[a];
    if (fills) {
      deferred.push({cost, deferSeq++, op});
      return;
    }
  }
  for (unsigned s = 0; s < numSlots; ++s) {
    if (!known[s])
      continue;
    Value v = slotValue(op, s);
    changed = false;
    for (int64_t a = 0; a < mesh.rank(); ++a)
      if (choices[a].kind != AxisChoice::Kind::None)
        assign(v, a, required(rule, s, choices[a]));
    if (changed)
      enqueueNeighbours(v);
  }
}

Value FunctionPropagation::constrainTo(Value v, const Layout &to,
                                       Operation *before, StringRef why) {
  if (actual.lookup(v) == to)
    return v;
  LayoutAttr toAttr = attr(to);
  auto key = std::make_pair(v, Attribute(toAttr));
  if (Value cached = constrainCache.lookup(key))
    if (cached.getParentBlock() == before->getBlock())
      return cached;
  OpBuilder builder(before);
  // A transpose commutes with resharding: the transpose of a value already
  // resharded (to the correspondingly permuted layout) is recomputed from
  // that copy, and a value whose transpose was resharded is transposed back,
  // instead of moving the same data twice.
  auto viaTranspose = [&](Value from, ArrayRef<int64_t> perm,
                          const Layout &fromLayout, Location loc) -> Value {
    Value moved = constrainCache.lookup({from, Attribute(attr(fromLayout))});
    if (!moved && actual.lookup(from) == fromLayout)
      moved = from;
    if (!moved || moved.getParentBlock() != before->getBlock())
      return Value();
    // It must be available at `before` (values are materialized in program
    // order, so it is; checked to stay safe).
    if (Operation *def = moved.getDefiningOp();
        def && !def->isBeforeInBlock(before))
      return Value();
    auto type = cast<RankedTensorType>(v.getType());
    auto empty = tensor::EmptyOp::create(builder, loc, type.getShape(),
                                         type.getElementType());
    empty->setAttr(::spmd::SPMDDialect::kLayoutAttrName, toAttr);
    actual[empty.getResult()] = to;
    auto copy = linalg::TransposeOp::create(builder, loc, moved,
                                            empty.getResult(), perm);
    copy->setAttr(::spmd::SPMDDialect::kLayoutAttrName, toAttr);
    actual[copy->getResult(0)] = to;
    constrainCache[key] = copy->getResult(0);
    return copy->getResult(0);
  };
  // Result dim i of a transpose is input dim perm[i].
  auto permuted = [](const Layout &l, ArrayRef<int64_t> map) {
    Layout out = l;
    for (Placement &p : out.placements)
      if (p.isShard())
        p = Placement::shard(map[p.dim]);
    return out;
  };
  if (auto transpose = v.getDefiningOp<linalg::TransposeOp>()) {
    // `to` is a layout of the result; the input's is to with dims mapped
    // back through the permutation.
    ArrayRef<int64_t> perm = transpose.getPermutation();
    if (Value r = viaTranspose(transpose.getInput(), perm, permuted(to, perm),
                               transpose.getLoc()))
      return r;
  }
  if (isa<RankedTensorType>(v.getType()))
    for (Operation *user : v.getUsers()) {
      auto transpose = dyn_cast<linalg::TransposeOp>(user);
      if (!transpose || transpose.getInput() != v)
        continue;
      SmallVector<int64_t> inverse =
          invertPermutationVector(transpose.getPermutation());
      // The transpose's result layout for `to`: dims mapped forward.
      if (Value r = viaTranspose(transpose.getResult()[0], inverse,
                                 permuted(to, inverse), transpose.getLoc()))
        return r;
    }
  // An empty tensor has no contents to move: make another one instead.
  if (auto empty = v.getDefiningOp<tensor::EmptyOp>()) {
    Operation *clone = builder.clone(*empty);
    clone->setAttr(::spmd::SPMDDialect::kLayoutAttrName, toAttr);
    constrainCache[key] = clone->getResult(0);
    actual[clone->getResult(0)] = to;
    return clone->getResult(0);
  }
  auto constrain = ::spmd::ConstrainOp::create(builder, before->getLoc(),
                                               v.getType(), v, toAttr);
  if (explain) {
    std::string reason;
    llvm::raw_string_ostream os(reason);
    os << "reshard from " << attr(actual.lookup(v)) << " to " << toAttr
       << " for " << why;
    explainConstrain(constrain, reason);
  }
  constrainCache[key] = constrain.getResult();
  actual[constrain.getResult()] = to;
  return constrain.getResult();
}

LogicalResult FunctionPropagation::materialize() {
  StringAttr layoutName =
      StringAttr::get(fn.getContext(), ::spmd::SPMDDialect::kLayoutAttrName);
  // Argument and result attributes are set all at once: setting them one by
  // one uniques a new array of every argument's attributes each time, which
  // is quadratic in time and memory for steps with thousands of parameters.
  SmallVector<DictionaryAttr> argAttrs, fnResultAttrs;
  fn.getAllArgAttrs(argAttrs);
  fn.getAllResultAttrs(fnResultAttrs);
  auto withLayout = [&](DictionaryAttr dict, Layout l) {
    NamedAttrList attrs(dict);
    attrs.set(layoutName, attr(l));
    return attrs.getDictionary(fn.getContext());
  };
  for (BlockArgument arg : fn.getArguments()) {
    if (!isRankedTensor(arg))
      continue;
    Layout l = finalLayout(arg);
    actual[arg] = l;
    unsigned i = arg.getArgNumber();
    if (!argAttrs[i] || !argAttrs[i].get(layoutName))
      argAttrs[i] = withLayout(argAttrs[i], l);
  }
  fn.setAllArgAttrs(argAttrs);
  Block &block = fn.getBody().front();
  for (Operation &opRef : llvm::make_early_inc_range(block)) {
    Operation *op = &opRef;
    // Constrains inserted by this walk are already materialized.
    if (isa<::spmd::ConstrainOp>(op) && actual.count(op->getResult(0)))
      continue;
    switch (kindOf(op)) {
    case OpKind::Skip:
      continue;
    case OpKind::Constrain: {
      auto constrain = cast<::spmd::ConstrainOp>(op);
      actual[constrain.getResult()] = constrain.getLayout().toLayout();
      // A later op needing the input in this layout reuses this reshard (a
      // backward op reading the activation a forward constrain gathered).
      constrainCache.try_emplace(
          {constrain.getInput(), Attribute(constrain.getLayout())},
          constrain.getResult());
      continue;
    }
    case OpKind::Return:
      for (OpOperand &operand : op->getOpOperands()) {
        Value v = operand.get();
        if (!isRankedTensor(v))
          continue;
        unsigned i = operand.getOperandNumber();
        if (auto declared = fn.getResultAttrOfType<LayoutAttr>(i, layoutName))
          operand.set(
              constrainTo(v, declared.toLayout(), op,
                          "result " + std::to_string(i) + " of the function"));
        else
          fnResultAttrs[i] = withLayout(fnResultAttrs[i], actual.lookup(v));
      }
      continue;
    case OpKind::NoRule:
      op->emitRemark() << "spmd-propagate: no sharding rule for '"
                       << op->getName() << "'; computing it replicated";
      for (OpOperand &operand : op->getOpOperands())
        if (isRankedTensor(operand.get()))
          operand.set(constrainTo(
              operand.get(), Layout::replicated(mesh.rank()), op,
              "operand " + std::to_string(operand.getOperandNumber()) +
                  " of '" + op->getName().getStringRef().str() +
                  "' (no rule)"));
      for (Value r : op->getResults())
        if (isRankedTensor(r))
          actual[r] = Layout::replicated(mesh.rank());
      break;
    case OpKind::Rule: {
      const OpRule &rule = rules[op];
      unsigned numSlots = op->getNumOperands() + op->getNumResults();
      SmallVector<PartialLayout> storage(numSlots);
      SmallVector<const PartialLayout *> known(numSlots, nullptr);
      SmallVector<double> bytes(numSlots, 0);
      SmallVector<bool> pinned(numSlots, false);
      SmallVector<unsigned> users(numSlots, 1);
      SmallVector<Type> types(numSlots);
      for (unsigned s = 0; s < numSlots; ++s) {
        Value v = slotValue(op, s);
        types[s] = v.getType();
        pinned[s] = rule.isResult(s) && userResultLayouts.count(v);
        if (!rule.isResult(s) && actual.lookup(v).hasPartial())
          users[s] = numUsers(v);
        if (!rule.slotDims[s] || !isRankedTensor(v))
          continue;
        bytes[s] = movedBytes(v, rule.isResult(s));
        if (rule.isResult(s)) {
          storage[s] = state(v);
          known[s] = &storage[s];
          continue;
        }
        for (const Placement &p : actual.lookup(v).placements)
          storage[s].push_back(p);
        known[s] = &storage[s];
      }
      SmallVector<AxisChoice> choices =
          decide(rule, known, bytes, pinned, users, types);
      auto requiredLayout = [&](unsigned s) {
        Layout l = Layout::replicated(mesh.rank());
        for (int64_t a = 0; a < mesh.rank(); ++a)
          l.placements[a] = required(rule, s, choices[a]);
        return l;
      };
      for (OpOperand &operand : op->getOpOperands()) {
        unsigned s = operand.getOperandNumber();
        if (!known[s])
          continue;
        operand.set(constrainTo(operand.get(), requiredLayout(s), op,
                                "operand " + std::to_string(s) + " of '" +
                                    op->getName().getStringRef().str() + "'"));
      }
      for (OpResult r : op->getResults())
        if (known[op->getNumOperands() + r.getResultNumber()])
          actual[r] =
              requiredLayout(op->getNumOperands() + r.getResultNumber());
      break;
    }
    }
    // Results: write the attribute; restore a user layout the op cannot make.
    if (!llvm::all_of(op->getResults(), isRankedTensor) ||
        op->getNumResults() == 0)
      continue;
    SmallVector<Attribute> resultAttrs;
    for (OpResult r : op->getResults())
      resultAttrs.push_back(attr(actual.lookup(r)));
    op->setAttr(layoutName, resultAttrs.size() == 1
                                ? resultAttrs.front()
                                : ArrayAttr::get(fn.getContext(), resultAttrs));
    for (OpResult r : op->getResults()) {
      auto it = userResultLayouts.find(r);
      if (it == userResultLayouts.end() || it->second == actual.lookup(r))
        continue;
      OpBuilder builder(op->getContext());
      builder.setInsertionPointAfter(op);
      auto constrain = ::spmd::ConstrainOp::create(
          builder, op->getLoc(), r.getType(), r, attr(it->second));
      r.replaceAllUsesExcept(constrain.getResult(), constrain);
      actual[constrain.getResult()] = it->second;
      if (explain)
        explainConstrain(constrain, "reshard to the annotated layout of '" +
                                        op->getName().getStringRef().str() +
                                        "' result " +
                                        std::to_string(r.getResultNumber()));
    }
  }
  fn.setAllResultAttrs(fnResultAttrs);
  return success();
}

LogicalResult FunctionPropagation::run() {
  if (!fn.getBody().hasOneBlock())
    return fn.emitOpError()
           << "spmd-propagate handles single-block functions only";
  // Seeds: argument annotations, pre-existing op result annotations.
  StringAttr layoutName =
      StringAttr::get(fn.getContext(), ::spmd::SPMDDialect::kLayoutAttrName);
  for (BlockArgument arg : fn.getArguments())
    if (auto l =
            fn.getArgAttrOfType<LayoutAttr>(arg.getArgNumber(), layoutName))
      setKnown(arg, l.toLayout());
  for (Operation &op : fn.getBody().front()) {
    Attribute a = op.getAttr(layoutName);
    if (!a || isa<::spmd::ConstrainOp>(op))
      continue;
    SmallVector<LayoutAttr> ls;
    if (auto single = dyn_cast<LayoutAttr>(a))
      ls.push_back(single);
    else if (auto array = dyn_cast<ArrayAttr>(a))
      for (Attribute e : array)
        ls.push_back(cast<LayoutAttr>(e));
    for (auto [r, l] : llvm::zip(op.getResults(), ls)) {
      setKnown(r, l.toLayout());
      userResultLayouts[r] = l.toLayout();
    }
  }
  for (Operation &op : fn.getBody().front())
    enqueue(&op);
  // Every visit that changes something fills at least one unknown
  // placement, so this terminates; the bound guards against mistakes.
  size_t budget = 64 * (worklist.size() + 1) * (mesh.rank() + 1) + 1024;
  // Free propagation first (choices that need no communication); when none
  // is left, the cheapest deferred choice is made and free propagation
  // resumes from it. An entry is stale when its op is queued again (it will
  // be costed afresh) or was decided since (the forced visit changes
  // nothing then).
  while (budget-- > 0) {
    if (!worklist.empty()) {
      Operation *op = worklist.front();
      worklist.pop_front();
      queued.erase(op);
      visit(op);
      continue;
    }
    if (deferred.empty())
      break;
    Operation *op = deferred.top().op;
    deferred.pop();
    if (!queued.count(op))
      visit(op, /*force=*/true);
  }
  return materialize();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Collects every mesh a function's annotations name.
static void
collectMeshes(func::FuncOp fn,
              SmallVectorImpl<std::pair<FlatSymbolRefAttr, Location>> &meshes) {
  auto note = [&](Attribute a, Location loc) {
    auto l = dyn_cast_or_null<LayoutAttr>(a);
    if (!l)
      return;
    if (!llvm::any_of(meshes, [&](auto &m) { return m.first == l.getMesh(); }))
      meshes.push_back({l.getMesh(), loc});
  };
  StringRef name = ::spmd::SPMDDialect::kLayoutAttrName;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    note(fn.getArgAttr(i, name), fn.getLoc());
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    note(fn.getResultAttr(i, name), fn.getLoc());
  fn.walk([&](Operation *op) {
    if (auto c = dyn_cast<::spmd::ConstrainOp>(op))
      note(c.getLayout(), op->getLoc());
    Attribute a = op->getAttr(name);
    if (auto array = dyn_cast_or_null<ArrayAttr>(a))
      for (Attribute e : array)
        note(e, op->getLoc());
    else
      note(a, op->getLoc());
  });
}

struct SPMDPropagatePass
    : public ::spmd::impl::SPMDPropagateBase<SPMDPropagatePass> {
  using SPMDPropagateBase::SPMDPropagateBase;

  void runOnOperation() override {
    bool failed = false;
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      SmallVector<std::pair<FlatSymbolRefAttr, Location>> meshes;
      collectMeshes(fn, meshes);
      if (meshes.empty())
        continue;
      if (meshes.size() > 1) {
        InFlightDiagnostic diag =
            fn.emitOpError()
            << "has layouts on two different meshes, " << meshes[0].first
            << " and " << meshes[1].first << "; a function must use one mesh";
        diag.attachNote(meshes[1].second)
            << "layout on " << meshes[1].first << " here";
        failed = true;
        continue;
      }
      ::spmd::MeshOp meshOp = ::spmd::lookupMesh(fn, meshes[0].first);
      if (!meshOp) {
        failed = true;
        continue;
      }
      FunctionPropagation propagation(fn, meshes[0].first, meshOp.toMesh(),
                                      explain);
      if (mlir::failed(propagation.run()))
        failed = true;
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
