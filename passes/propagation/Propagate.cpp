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
//    fit the op's sharding rule (rules/);
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
// Every op's sharding rule comes from rules/ (spmd::getShardingRule, see
// rules/ShardingRule.h for the factor model and rules/{Linalg,Tensor,
// Arith}Rules.cpp for the rule of each op). On each mesh axis an op picks
// one of:
//
//  * None: every tensor operand and result is R on that axis;
//  * Shard(f): factor f is split on that axis. A value with f at dim d is
//    S(d); a value without f is R, except that for a reduction factor every
//    result and its `outs` init are P(kind of that result's combiner);
//  * Partial(alt, kind): the op is linear in the operands of `alt`: those are
//    P(kind) (one of the kinds the alt allows), every other tensor operand
//    is R, every result P(kind).
//
// A factor split on several axes nests in mesh order (S(d) on each). Ops
// that are not compute ops, and ops without a rule:
//
//  * tensor.empty is never resharded: where a consumer needs another
//    layout, a second tensor.empty with that layout is made for it (and
//    reshards of empties cost nothing in the model).
//  * spmd.constrain: no requirement on its input (it is the reshard point);
//    its result has the constrain's layout.
//  * func.return: operand i has the declared layout of result i when there
//    is one (a constrain is inserted otherwise).
//  * anything else touching tensors (func.call included): no rule. Operands
//    are constrained to R, results are R, and a remark names the op.
//
// Propagation
// -----------
// (The choices and their costs are in PropagateChoice.cpp; this file holds
// the worklist, the materialization and the pass.)
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
// reshards of the same value). That walk also knows the copies earlier users
// made of each operand: reading a layout a copy has is free, a result that
// splitting a reduction factor leaves partial pays its reduction again (a
// gathered copy may make computing it replicated the cheaper way), and a
// new reshard starts from the closest copy. A fill of a tensor.empty is
// filled again in the layout a user needs, like the empty itself.
//===----------------------------------------------------------------------===//

#include "passes/propagation/Passes.h"
#include "passes/propagation/PropagateChoice.h"
#include "rules/ShardingRuleOpInterface.h"

#include "dialects/spmd/FunctionMesh.h"
#include "dialects/spmd/SPMDOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

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
using ::spmd::ShardingRule;
using namespace ::spmd::propagation;

namespace {

enum class OpKind { Skip, Rule, NoRule, Return, Constrain };

static bool isRankedTensor(Value v) {
  return isa<RankedTensorType>(v.getType());
}

/// Classifies `op` and looks up its rule.
static OpKind classify(Operation *op, ::spmd::ShardingRuleCache &cache,
                       const ShardingRule *&rule) {
  if (isa<func::ReturnOp>(op))
    return OpKind::Return;
  if (isa<::spmd::ConstrainOp>(op))
    return OpKind::Constrain;
  if (!llvm::any_of(op->getOperands(), isRankedTensor) &&
      !llvm::any_of(op->getResults(), isRankedTensor))
    return OpKind::Skip;
  rule = cache.lookup(op);
  return rule ? OpKind::Rule : OpKind::NoRule;
}

/// The state of one function's propagation.
class FunctionPropagation {
public:
  FunctionPropagation(func::FuncOp fn, FlatSymbolRefAttr meshRef,
                      const Mesh &mesh, const ::spmd::DeviceProfile &profile,
                      bool explain)
      : fn(fn), meshRef(meshRef), mesh(mesh), explain(explain),
        profile(profile), costParams(profile.comm) {}

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
    const ShardingRule *rule = nullptr;
    OpKind kind = classify(op, ruleCache, rule);
    if (kind == OpKind::Rule)
      rules[op] = rule;
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

  /// decide()'s inputs for one op, one entry per slot (`known` points into
  /// `storage`: copies, as state() may grow the map and move its entries).
  struct SlotInputs {
    SmallVector<PartialLayout> storage;
    SmallVector<const PartialLayout *> known;
    SmallVector<double> bytes;
    SmallVector<bool> pinned;
    SmallVector<unsigned> users;
    SmallVector<Type> types;
    SmallVector<double> share;
    double work = 0;
    SmallVector<ArrayRef<Layout>> copies;
    bool reduceKnownPartials = false;
    SlotInfo info() const {
      return {known, bytes,  pinned,
              users, types,  share,
              work,  copies, reduceKnownPartials};
    }
  };
  /// Fills `in` for `op`: `layoutOf(v, isResult)` gives a tensor slot's
  /// known placements, `isPartial(v)` whether an operand is partial (its
  /// reduction is then shared by its users).
  void gatherSlots(Operation *op, const ShardingRule &rule,
                   function_ref<PartialLayout(Value, bool)> layoutOf,
                   function_ref<bool(Value)> isPartial, SlotInputs &in) {
    unsigned numSlots = op->getNumOperands() + op->getNumResults();
    in.storage.assign(numSlots, PartialLayout());
    in.known.assign(numSlots, nullptr);
    in.bytes.assign(numSlots, 0);
    in.pinned.assign(numSlots, false);
    in.users.assign(numSlots, 1);
    in.types.assign(numSlots, Type());
    in.share.assign(numSlots, 1.0);
    in.copies.assign(numSlots, {});
    in.reduceKnownPartials = false;
    in.work = workOf(op);
    for (unsigned s = 0; s < numSlots; ++s) {
      Value v = slotValue(op, s);
      bool isResult = rule.isResult(s);
      in.types[s] = v.getType();
      in.pinned[s] = isResult && userResultLayouts.count(v);
      if (!isResult && isPartial(v))
        in.users[s] = numUsers(v);
      if (!rule.slotDims[s] || !isRankedTensor(v))
        continue;
      in.storage[s] = layoutOf(v, isResult);
      in.known[s] = &in.storage[s];
      in.bytes[s] = movedBytes(v, isResult);
      // (Only a partial result pays a share: an op with no partial
      // alternative makes none.)
      if (isResult && !rule.alts.empty())
        in.share[s] = shareOf(v);
    }
  }
  // Per-op facts that follow from the op's signature (ShardingRuleCache)
  // are computed once per signature: the layers of a model share them.
  template <typename T, typename Compute>
  T perSignature(DenseMap<Operation *, T> &perOp, DenseMap<unsigned, T> &perSig,
                 Operation *op, Compute compute) {
    if (auto it = perOp.find(op); it != perOp.end())
      return it->second;
    std::optional<unsigned> sig = ruleCache.signature(op);
    T value;
    if (!sig)
      value = compute(op);
    else if (auto it = perSig.find(*sig); it != perSig.end())
      value = it->second;
    else
      value = perSig[*sig] = compute(op);
    perOp[op] = value;
    return value;
  }
  double workOf(Operation *op) {
    return perSignature(works, worksBySignature, op,
                        [&](Operation *o) { return opWork(o, profile); });
  }
  bool linearSumOf(Operation *op) {
    return perSignature(linearSums, linearSumsBySignature, op,
                        [](Operation *o) { return isLinearSum(o); });
  }
  bool contractionOf(Operation *op) {
    return perSignature(contractions, contractionsBySignature, op,
                        [](Operation *o) { return isContraction(o); });
  }
  double shareOf(Value v) {
    auto it = shares.find(v);
    if (it != shares.end())
      return it->second;
    double share = resultShare(
        v, [&](Operation *op) { return linearSumOf(op); },
        [&](Operation *op) { return contractionOf(op); });
    shares[v] = share;
    return share;
  }

  /// Fills unknown placements from `op`'s choice; enqueues neighbours.
  /// With `force` false, a choice that communicates is deferred (see run()).
  void visit(Operation *op, bool force = false);
  void assign(Value v, int64_t axis, Placement p);
  void enqueue(Operation *op);
  void enqueueNeighbours(Value v);

  /// The value of `v` in layout `to` before `before`: `v` itself or a
  /// (shared) constrain.
  Value constrainTo(Value v, const Layout &to, Operation *before,
                    const Twine &why);
  LogicalResult materialize();
  /// Tensors read inside an op's region from above are made whole first.
  void pinCapturedTensors();
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
  ::spmd::DeviceProfile profile;
  CommCostParams costParams;
  DenseMap<Operation *, double> works;
  DenseMap<unsigned, double> worksBySignature;
  DenseMap<Operation *, bool> linearSums;
  DenseMap<unsigned, bool> linearSumsBySignature;
  DenseMap<Operation *, bool> contractions;
  DenseMap<unsigned, bool> contractionsBySignature;
  DenseMap<Value, double> shares;
  DenseMap<Value, PartialLayout> layouts;
  /// gatherSlots' output, reused by every visit (its vectors keep their
  /// capacity: a visit allocates nothing).
  SlotInputs scratch;
  DenseMap<Operation *, OpKind> kinds;
  ::spmd::ShardingRuleCache ruleCache;
  DenseMap<Operation *, const ShardingRule *> rules;
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
  /// actual's entry for `v` without a copy (null if none).
  const Layout *actualOf(Value v) const {
    auto it = actual.find(v);
    return it == actual.end() ? nullptr : &it->second;
  }
  DenseMap<std::pair<Value, Attribute>, Value> constrainCache;
  /// The layouts of each value's entries in constrainCache.
  DenseMap<Value, SmallVector<Layout, 1>> copies;
  void cacheCopy(Value v, const Layout &l, Value copy) {
    if (constrainCache.try_emplace({v, Attribute(attr(l))}, copy).second)
      copies[v].push_back(l);
  }
};

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
  const ShardingRule &rule = *rules.lookup(op);
  unsigned numSlots = op->getNumOperands() + op->getNumResults();
  // A visit only fills unknown placements: with every slot's known, it
  // would change nothing (the second visit most ops get, from a neighbour).
  bool complete = true;
  for (unsigned s = 0; s < numSlots && complete; ++s) {
    if (!rule.slotDims[s])
      continue;
    Value v = slotValue(op, s);
    if (!isRankedTensor(v))
      continue;
    auto it = layouts.find(v);
    complete = it != layouts.end() &&
               llvm::all_of(it->second, [](const std::optional<Placement> &p) {
                 return p.has_value();
               });
  }
  if (complete)
    return;
  SlotInputs &in = scratch;
  gatherSlots(
      op, rule, [&](Value v, bool) { return state(v); },
      [&](Value v) { return isPartialAnywhere(v); }, in);
  const SmallVector<const PartialLayout *> &known = in.known;
  double cost = 0;
  SmallVector<AxisChoice> choices =
      decide(rule, mesh, costParams, in.info(), &cost);
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
                                       Operation *before, const Twine &why) {
  if (const Layout *l = actualOf(v); l && *l == to)
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
    cacheCopy(v, to, copy->getResult(0));
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
    cacheCopy(v, to, clone->getResult(0));
    actual[clone->getResult(0)] = to;
    return clone->getResult(0);
  }
  // Nor has a fill of one: fill another empty in `to` (partial only in a
  // kind the fill's rule allows: its value is that reduction's identity).
  if (linalg::FillOp fill = refillable(v)) {
    const ShardingRule *rule = ruleCache.lookup(fill);
    bool canMake = rule && llvm::all_of(to.placements, [&](const Placement &p) {
                     return !p.isPartial() ||
                            llvm::any_of(rule->alts, [&](const auto &alt) {
                              return llvm::is_contained(alt.kinds, p.reduce);
                            });
                   });
    if (canMake) {
      Value init = constrainTo(fill.getOutputs()[0], to, before, why);
      auto clone = cast<linalg::FillOp>(builder.clone(*fill));
      clone.getOutputsMutable()[0].set(init);
      clone->setAttr(::spmd::SPMDDialect::kLayoutAttrName, toAttr);
      cacheCopy(v, to, clone->getResult(0));
      actual[clone->getResult(0)] = to;
      return clone->getResult(0);
    }
  }
  // Reshard from the closest copy another user already made (a slice of a
  // gathered copy moves nothing), else from the value itself.
  Value from = v;
  Layout fromLayout = actual.lookup(v);
  if (auto it = copies.find(v); it != copies.end()) {
    double bytes = movedBytes(v, /*isResult=*/true);
    double fromCost =
        ::spmd::reshardCost(mesh, fromLayout, to, bytes, costParams);
    for (const Layout &l : it->second) {
      double c = ::spmd::reshardCost(mesh, l, to, bytes, costParams);
      Value copy = constrainCache.lookup({v, Attribute(attr(l))});
      if (c < fromCost && copy.getParentBlock() == before->getBlock()) {
        from = copy;
        fromLayout = l;
        fromCost = c;
      }
    }
  }
  auto constrain = ::spmd::ConstrainOp::create(builder, before->getLoc(),
                                               v.getType(), from, toAttr);
  if (explain) {
    std::string reason;
    llvm::raw_string_ostream os(reason);
    os << "reshard from " << attr(fromLayout) << " to " << toAttr << " for "
       << why;
    explainConstrain(constrain, reason);
  }
  cacheCopy(v, to, constrain.getResult());
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
      cacheCopy(constrain.getInput(), constrain.getLayout().toLayout(),
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
          operand.set(constrainTo(v, declared.toLayout(), op,
                                  "result " + Twine(i) + " of the function"));
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
              "operand " + Twine(operand.getOperandNumber()) + " of '" +
                  op->getName().getStringRef() + "' (no rule)"));
      for (Value r : op->getResults())
        if (isRankedTensor(r))
          actual[r] = Layout::replicated(mesh.rank());
      break;
    case OpKind::Rule: {
      const ShardingRule &rule = *rules.lookup(op);
      // Operands as their producers finally made them (and the copies
      // made of them since); results as propagated.
      SlotInputs &in = scratch;
      gatherSlots(
          op, rule,
          [&](Value v, bool isResult) {
            if (isResult)
              return state(v);
            PartialLayout l;
            if (const Layout *a = actualOf(v))
              l.append(a->placements.begin(), a->placements.end());
            return l;
          },
          [&](Value v) {
            const Layout *l = actualOf(v);
            return l && l->hasPartial();
          },
          in);
      for (OpOperand &operand : op->getOpOperands())
        if (auto it = copies.find(operand.get()); it != copies.end())
          in.copies[operand.getOperandNumber()] = it->second;
      in.reduceKnownPartials = true;
      const SmallVector<const PartialLayout *> &known = in.known;
      SmallVector<AxisChoice> choices =
          decide(rule, mesh, costParams, in.info());
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
                                "operand " + Twine(s) + " of '" +
                                    op->getName().getStringRef() + "'"));
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
    for (OpResult r : op->getResults()) {
      const Layout *l = actualOf(r);
      resultAttrs.push_back(attr(l ? *l : Layout()));
    }
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

void FunctionPropagation::pinCapturedTensors() {
  // A linalg body that reads a tensor from above (tensor.extract at indices
  // it computes: a gather, MoE's expert weights picked per token) reads it
  // at global coordinates, so every rank needs all of it: the body reads a
  // replicated copy, constrained once per op and tensor.
  Layout replicated = Layout::replicated(mesh.rank());
  for (Operation &op : fn.getBody().front()) {
    if (op.getNumRegions() == 0)
      continue;
    DenseMap<Value, Value> copies;
    op.walk([&](Operation *inner) {
      if (inner == &op)
        return;
      for (OpOperand &use : inner->getOpOperands()) {
        Value v = use.get();
        if (!isRankedTensor(v) ||
            op.isAncestor(v.getParentRegion()->getParentOp()))
          continue;
        Value &copy = copies[v];
        if (!copy) {
          OpBuilder builder(&op);
          copy = ::spmd::ConstrainOp::create(builder, op.getLoc(), v.getType(),
                                             v, attr(replicated));
          if (explain)
            explainConstrain(cast<::spmd::ConstrainOp>(copy.getDefiningOp()),
                             "read inside a region at computed indices: "
                             "whole on every rank");
        }
        use.set(copy);
      }
    });
  }
}

LogicalResult FunctionPropagation::run() {
  if (!fn.getBody().hasOneBlock())
    return fn.emitOpError()
           << "spmd-propagate handles single-block functions only";
  pinCapturedTensors();
  // Seeds: argument annotations, pre-existing op result annotations.
  StringAttr layoutName =
      StringAttr::get(fn.getContext(), ::spmd::SPMDDialect::kLayoutAttrName);
  for (BlockArgument arg : fn.getArguments())
    if (auto l =
            fn.getArgAttrOfType<LayoutAttr>(arg.getArgNumber(), layoutName))
      setKnown(arg, l.toLayout());
  for (Operation &op : fn.getBody().front()) {
    // A constrain's result has its layout: users see it from the start.
    if (auto constrain = dyn_cast<::spmd::ConstrainOp>(op)) {
      setKnown(constrain.getResult(), constrain.getLayout().toLayout());
      continue;
    }
    Attribute a = op.getAttr(layoutName);
    if (!a)
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
  // Every value gets a state and every op a kind: sized once, not grown.
  size_t numOps = 0, numValues = fn.getNumArguments();
  for (Operation &op : fn.getBody().front()) {
    ++numOps;
    numValues += op.getNumResults();
  }
  layouts.reserve(numValues + numValues / 4);
  actual.reserve(numValues + numValues / 4);
  kinds.reserve(numOps);
  rules.reserve(numOps);
  queued.reserve(numOps);
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

struct SPMDPropagatePass
    : public ::spmd::impl::SPMDPropagateBase<SPMDPropagatePass> {
  using SPMDPropagateBase::SPMDPropagateBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    SPMDPropagateBase::getDependentDialects(registry);
    ::spmd::registerShardingRuleExternalModels(registry);
  }

  void runOnOperation() override {
    std::optional<::spmd::DeviceProfile> profile =
        ::spmd::deviceProfile(device);
    if (!profile) {
      getOperation().emitError() << "spmd-propagate: unknown device '" << device
                                 << "' (known: h100, cpu)";
      return signalPassFailure();
    }
    bool failed = false;
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      FailureOr<FlatSymbolRefAttr> meshRef = ::spmd::functionMesh(fn);
      if (mlir::failed(meshRef)) {
        failed = true;
        continue;
      }
      if (!*meshRef)
        continue;
      ::spmd::MeshOp meshOp = ::spmd::lookupMesh(fn, *meshRef);
      if (!meshOp) {
        failed = true;
        continue;
      }
      FunctionPropagation propagation(fn, *meshRef, meshOp.toMesh(), *profile,
                                      explain);
      if (mlir::failed(propagation.run()))
        failed = true;
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
