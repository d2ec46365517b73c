//===- Partition.cpp - spmd-partition: global program to local program ----===//
//
// Two phases per function. The check phase reads every tensor value's layout
// and checks each op against its sharding rule (rules/, the same rules
// spmd-propagate uses), touching nothing, so that a rejected program is left
// as it was. Beyond the rule it checks only what the rewrite can or cannot
// do: a splat constant is rebuilt in any layout (its rule keeps it
// replicated for propagation), a fill's partial result is made with
// spmd.partial_from_replicated, slices with dynamic offsets, sizes or
// strides are local only when replicated, and elementwise ops with scalar
// operands are not rewritten. The rewrite phase then changes types
// in place (linalg and elementwise ops keep their form), rebuilds the ops
// whose attributes or operands depend on local sizes (tensor.empty, splat
// constants) and replaces each spmd.constrain by the redistribute planner's
// steps.
//
//===----------------------------------------------------------------------===//

#include "core/RedistributePlanner.h"
#include "dialects/spmd/SPMDOps.h"
#include "passes/partition/Passes.h"
#include "rules/Linearity.h"
#include "rules/ShardingRuleOpInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDPARTITION
#include "passes/partition/Passes.h.inc"
} // namespace spmd

using namespace mlir;
using namespace spmd;

namespace {

//===----------------------------------------------------------------------===//
// The partitioner of one function
//===----------------------------------------------------------------------===//

class FunctionPartitioner {
public:
  FunctionPartitioner(func::FuncOp fn, bool explain)
      : fn(fn), explain(explain), ctx(fn.getContext()) {}

  /// Reads and checks every layout; emits errors and fails on
  /// inconsistencies. Changes nothing.
  LogicalResult check();
  /// Rewrites the checked function into its local form.
  LogicalResult rewrite();

private:
  // Check phase.
  LogicalResult collectLayouts();
  LogicalResult checkOp(Operation *op);
  /// The op's layouts against its sharding rule.
  LogicalResult checkRule(Operation *op, const ShardingRule &rule);
  /// The error for `slot` sharding its dim `dim`, which has no factor.
  LogicalResult noFactorError(const ShardingRule &rule, Operation *op,
                              unsigned slot, int64_t dim, int64_t axis);
  LogicalResult recordIndexOffset(Operation *op, const ShardingRule &rule,
                                  int factor, int64_t axis);
  LogicalResult checkConstant(arith::ConstantOp op);
  LogicalResult checkReturn(func::ReturnOp op);
  LogicalResult checkConstrain(ConstrainOp op);

  // Rewrite phase.
  LogicalResult rewriteConstrain(ConstrainOp op);
  void rewriteEmpty(tensor::EmptyOp op);
  void rewriteCollapse(tensor::CollapseShapeOp op);
  void rewriteExpand(tensor::ExpandShapeOp op);
  SmallVector<OpFoldResult> localSliceSizes(OpBuilder &b, Location loc,
                                            Value whole, Value sliced,
                                            ArrayRef<OpFoldResult> sizes);
  void rewriteExtract(tensor::ExtractSliceOp op);
  void rewriteInsert(tensor::InsertSliceOp op);
  /// The local size of dim `d` of `global` in `layout`: a constant if it is
  /// the same on every rank, else spmd.local_size.
  OpFoldResult localSize(OpBuilder &b, Location loc, RankedTensorType global,
                         LayoutAttr layout, int64_t d);
  LogicalResult rewriteConstant(arith::ConstantOp op);
  void offsetIndices(linalg::LinalgOp op);
  Value makePartial(OpBuilder &b, Location loc, Value v, LayoutAttr layout);

  RankedTensorType localType(Value global) const {
    return localType(cast<RankedTensorType>(global.getType()),
                     layouts.lookup(global));
  }
  RankedTensorType localType(RankedTensorType global, LayoutAttr layout) const;
  ::spmd::Layout layoutOf(Value v) const {
    return layouts.lookup(v).toLayout();
  }
  ArrayAttr axisNames(ArrayRef<int64_t> axes) const;
  /// Replaces `old` (except in `except`) by `repl`, which takes over its
  /// layout: later ops look up the layouts of their (new) operands.
  void replaceValue(Value old, Value repl, Operation *except = nullptr) {
    layouts[repl] = layouts.lookup(old);
    if (except)
      old.replaceAllUsesExcept(repl, except);
    else
      old.replaceAllUsesWith(repl);
  }

  func::FuncOp fn;
  bool explain;
  MLIRContext *ctx;
  /// The function's mesh (one per function).
  FlatSymbolRefAttr meshRef;
  ::spmd::Mesh mesh;
  DenseMap<Value, LayoutAttr> layouts;
  ::spmd::ShardingRuleCache ruleCache;
  DenseMap<Operation *, ::spmd::RedistributePlan> plans;
  /// Per linalg op: the sharded loops its body reads with linalg.index, the
  /// mesh axes sharding each (mesh order) and the loop's global size.
  struct IndexOffset {
    unsigned loop;
    SmallVector<int64_t> axes;
    int64_t size;
  };
  DenseMap<Operation *, SmallVector<IndexOffset>> indexOffsets;
  /// Plans by (global type, source, target): the same reshard repeats in
  /// every layer of a deep model.
  DenseMap<std::tuple<Type, Attribute, Attribute>, ::spmd::RedistributePlan>
      planCache;
  /// localType() by (global type, layout).
  mutable DenseMap<std::pair<Type, Attribute>, RankedTensorType> localTypes;
};

bool isTensor(Value v) { return isa<RankedTensorType>(v.getType()); }

} // namespace

RankedTensorType FunctionPartitioner::localType(RankedTensorType global,
                                                LayoutAttr layout) const {
  // Asked for most values; the layers of a model repeat a few pairs.
  RankedTensorType &cached = localTypes[{global, layout}];
  if (cached)
    return cached;
  std::vector<int64_t> shape(global.getShape().begin(),
                             global.getShape().end());
  SmallVector<int64_t> local;
  for (std::optional<int64_t> d :
       ::spmd::uniformLocalShape(mesh, layout.toLayout(), shape))
    local.push_back(d ? *d : ShapedType::kDynamic);
  cached = RankedTensorType::get(local, global.getElementType(),
                                 global.getEncoding());
  return cached;
}

ArrayAttr FunctionPartitioner::axisNames(ArrayRef<int64_t> axes) const {
  SmallVector<Attribute> names;
  for (int64_t a : axes)
    names.push_back(StringAttr::get(ctx, mesh.axisNames[a]));
  return ArrayAttr::get(ctx, names);
}

//===----------------------------------------------------------------------===//
// Check phase
//===----------------------------------------------------------------------===//

LogicalResult FunctionPartitioner::collectLayouts() {
  auto use = [&](Operation *anchor, Value v, LayoutAttr layout,
                 const Twine &what) -> LogicalResult {
    auto type = cast<RankedTensorType>(v.getType());
    if (!type.hasStaticShape())
      return anchor->emitOpError()
             << what << " has the dynamic global type " << type
             << "; spmd-partition needs static global shapes";
    if (!meshRef) {
      meshRef = layout.getMesh();
      MeshOp meshOp = lookupMesh(fn, meshRef);
      if (!meshOp)
        return failure();
      mesh = meshOp.toMesh();
    } else if (layout.getMesh() != meshRef) {
      return anchor->emitOpError()
             << what << " is on mesh " << layout.getMesh()
             << " but the function already uses " << meshRef
             << "; spmd-partition supports one mesh per function";
    }
    layouts[v] = layout;
    return success();
  };

  Block &entry = fn.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    if (!isTensor(arg))
      continue;
    auto layout = fn.getArgAttrOfType<LayoutAttr>(arg.getArgNumber(),
                                                  SPMDDialect::kLayoutAttrName);
    if (!layout)
      return fn.emitError() << "argument " << arg.getArgNumber()
                            << " has no spmd.layout; the program is not "
                               "layout-consistent (run spmd-propagate first)";
    if (failed(use(fn, arg, layout, "argument " + Twine(arg.getArgNumber()))))
      return failure();
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (isa<RankedTensorType>(fn.getResultTypes()[i]) &&
        !fn.getResultAttrOfType<LayoutAttr>(i, SPMDDialect::kLayoutAttrName))
      return fn.emitError() << "result " << i
                            << " has no spmd.layout; the program is not "
                               "layout-consistent (run spmd-propagate first)";

  auto visit = [&](Operation *op) -> LogicalResult {
    if (op->getParentOp() != fn) {
      // Inside a region: only the scalar bodies of linalg ops are supported,
      // reading tensors from above only if they are replicated (whole on
      // every rank: the body indexes them globally; spmd-propagate makes
      // them so).
      Operation *top = nullptr;
      for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
        if (!isa<ShapedType>(v.getType()))
          continue;
        if (!top)
          top = fn.getBody().front().findAncestorOpInBlock(*op);
        bool fromAbove = isTensor(v) && top &&
                         !top->isAncestor(v.getParentRegion()->getParentOp());
        if (!fromAbove)
          return op->emitOpError()
                 << "inside a region is not supported by spmd-partition";
        LayoutAttr layout = layouts.lookup(v);
        if (layout && !layout.toLayout().isReplicated())
          return op->emitOpError()
                 << "reads a tensor from above whose layout is " << layout
                 << "; inside a region spmd-partition needs it replicated "
                    "(run spmd-propagate, which makes it so)";
      }
      return success();
    }
    if (op->getNumRegions() && !isa<linalg::LinalgOp, tensor::PadOp>(op))
      for (Region &region : op->getRegions())
        if (!region.empty())
          return op->emitOpError()
                 << "has regions, which spmd-partition does not support";
    for (Value v : op->getOperands())
      if (isa<ShapedType>(v.getType()) && !isTensor(v))
        return op->emitOpError() << "has an operand of type " << v.getType()
                                 << "; only ranked tensors are supported";
    SmallVector<LayoutAttr> opLayouts;
    if (auto constrain = dyn_cast<ConstrainOp>(op)) {
      opLayouts.push_back(constrain.getLayout());
    } else if (Attribute attr = op->getAttr(SPMDDialect::kLayoutAttrName)) {
      if (auto single = dyn_cast<LayoutAttr>(attr))
        opLayouts.push_back(single);
      else
        for (Attribute a : cast<ArrayAttr>(attr))
          opLayouts.push_back(cast<LayoutAttr>(a));
    }
    for (OpResult result : op->getResults()) {
      if (isa<ShapedType>(result.getType()) && !isTensor(result))
        return op->emitOpError() << "has a result of type " << result.getType()
                                 << "; only ranked tensors are supported";
      if (!isTensor(result))
        continue;
      if (opLayouts.empty())
        return op->emitOpError()
               << "result " << result.getResultNumber()
               << " has no spmd.layout; the program is not layout-consistent "
                  "(run spmd-propagate first)";
      LayoutAttr layout = opLayouts.size() == 1
                              ? opLayouts[0]
                              : opLayouts[result.getResultNumber()];
      if (failed(use(op, result, layout,
                     "result " + Twine(result.getResultNumber()))))
        return failure();
    }
    return success();
  };
  WalkResult walk =
      fn.getBody().walk([&](Operation *op) { return WalkResult(visit(op)); });
  return failure(walk.wasInterrupted());
}

LogicalResult FunctionPartitioner::check() {
  if (fn.getBody().getBlocks().size() != 1)
    return fn.emitError()
           << "has several blocks; spmd-partition supports one block";
  if (failed(collectLayouts()))
    return failure();
  for (Operation &op : fn.getBody().front())
    if (failed(checkOp(&op)))
      return failure();
  return success();
}

LogicalResult FunctionPartitioner::checkOp(Operation *op) {
  if (auto constrain = dyn_cast<ConstrainOp>(op))
    return checkConstrain(constrain);
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    return checkReturn(ret);
  if (!llvm::any_of(op->getOperands(), isTensor) &&
      !llvm::any_of(op->getResults(), isTensor))
    return success();
  // What the rule cannot express. A splat constant is rebuilt at any local
  // shape (the rule, for propagation, keeps constants replicated).
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return checkConstant(constant);
  if (auto slice = dyn_cast<OffsetSizeAndStrideOpInterface>(op)) {
    bool dynamic = !slice.getOffsets().empty() || !slice.getSizes().empty() ||
                   !slice.getStrides().empty();
    if (dynamic && llvm::any_of(op->getOperands(), [&](Value v) {
          return isTensor(v) && !layoutOf(v).isReplicated();
        }))
      return op->emitOpError()
             << "has dynamic offsets, sizes or strides on a non-replicated "
                "value; only static ones are supported";
  }
  if (OpTrait::hasElementwiseMappableTraits(op) &&
      llvm::any_of(op->getOperands(), [](Value v) { return !isTensor(v); }))
    return op->emitOpError()
           << "mixes tensor and scalar operands; spmd-partition supports "
              "elementwise ops on tensors only";

  const ShardingRule *rule = ruleCache.lookup(op);
  // An op without a rule, or whose rule splits nothing, computes the same
  // on every rank if all its tensors are replicated.
  if (!rule || (rule->factors.empty() && rule->alts.empty())) {
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
      if (!isTensor(v) || layoutOf(v).isReplicated())
        continue;
      return op->emitOpError()
             << "has no spmd-partition rule and its "
             << (isa<OpResult>(v) && v.getDefiningOp() == op ? "result"
                                                             : "operand")
             << " is not replicated (layout " << layouts.lookup(v) << ")";
    }
    return success();
  }
  return checkRule(op, *rule);
}

/// How diagnostics name a slot, a factor and the unsplittable dims of the
/// op kinds whose vocabulary users know (loops of linalg ops, the dims a
/// tensor op slices, pads, ...). Wording only: legality is the rule's.
namespace {
struct RuleWording {
  Operation *op;
  const ShardingRule &rule;

  std::string slot(unsigned s) const {
    return rule.isResult(s) ? "result " + std::to_string(s - rule.numOperands)
                            : "operand " + std::to_string(s);
  }
  std::string factor(int f) const {
    if (isa<linalg::LinalgOp>(op))
      return "loop " + std::to_string(f);
    return "factor " + ShardingRule::factorName(f);
  }
};
} // namespace

LogicalResult FunctionPartitioner::noFactorError(const ShardingRule &rule,
                                                 Operation *op, unsigned slot,
                                                 int64_t dim, int64_t axis) {
  Value v = slot < rule.numOperands ? op->getOperand(slot)
                                    : op->getResult(slot - rule.numOperands);
  LayoutAttr layout = layouts.lookup(v);
  StringRef axisName = mesh.axisNames[axis];
  auto shards = [&](StringRef verb) {
    return op->emitOpError()
           << verb << " dim " << dim << ", which " << layout << " shards";
  };
  if (isa<tensor::PadOp>(op))
    return shards("pads");
  if (isa<tensor::ExtractSliceOp, tensor::InsertSliceOp>(op))
    return shards("slices") << "; a sharded dim must be taken whole";
  if (isa<tensor::ConcatOp>(op))
    return shards("concatenates") << "; it must be replicated";
  if (isa<tensor::DimOp>(op))
    return shards("reads the size of");
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
    return op->emitOpError()
           << "cannot carry the sharding on mesh axis '" << axisName
           << "' from " << layouts.lookup(op->getOperand(0)) << " to "
           << layouts.lookup(op->getResult(0))
           << ": a sharded dim must be the outermost dim of its reshaped group";
  RuleWording words{op, rule};
  if (isa<linalg::LinalgOp>(op))
    return op->emitOpError()
           << words.slot(slot) << " is "
           << layout.toLayout().placements[axis].str() << " on mesh axis '"
           << axisName << "' but its indexing map does not index dim " << dim
           << " by a single loop";
  return op->emitOpError() << words.slot(slot) << " is "
                           << layout.toLayout().placements[axis].str()
                           << " on mesh axis '" << axisName
                           << "' but the op's sharding rule gives dim " << dim
                           << " no factor";
}

/// The layouts against the rule, per mesh axis: the axis splits at most one
/// factor (the one of every S(d)), which must be splittable (over all axes
/// splitting it, for the chunk boundaries of reshapes); then every slot is
/// what splitting it gives (S(d) where the factor is, P(combiner) for the
/// results and inits of a reduction factor, R elsewhere). With no factor
/// split, the partial operands must form one of the rule's alternatives (or,
/// for ops with a payload, be linear per Linearity.h), and the results are
/// then partial of that kind.
LogicalResult FunctionPartitioner::checkRule(Operation *op,
                                             const ShardingRule &rule) {
  RuleWording words{op, rule};
  auto slotValue = [&](unsigned s) {
    return s < rule.numOperands ? op->getOperand(s)
                                : op->getResult(s - rule.numOperands);
  };
  // linalg.fill: a replicated value is a valid P(avg|max|min) term and the
  // rewrite makes a P(sum) with spmd.partial_from_replicated, so partials
  // are as good as R.
  bool partialsFree = isa<linalg::FillOp>(op);
  auto placement = [&](unsigned s, int64_t a) {
    ::spmd::Placement p = layouts.lookup(slotValue(s)).getPlacements()[a];
    return partialsFree && p.isPartial() ? ::spmd::Placement::replicate() : p;
  };
  SmallVector<unsigned> slots;
  for (unsigned s = 0; s < rule.numSlots(); ++s)
    if (rule.slotDims[s] && isTensor(slotValue(s)))
      slots.push_back(s);

  // The factor each axis splits.
  SmallVector<int> split(mesh.rank(), -1);
  for (int64_t a = 0; a < mesh.rank(); ++a) {
    std::optional<::spmd::Placement> first;
    for (unsigned s : slots) {
      ::spmd::Placement p = placement(s, a);
      if (!p.isShard())
        continue;
      int f = rule.factorOf(s, p.dim);
      if (f < 0)
        return noFactorError(rule, op, s, p.dim, a);
      if (split[a] >= 0 && split[a] != f)
        return op->emitOpError()
               << "has operands sharded differently on mesh axis '"
               << mesh.axisNames[a] << "' (" << first->str() << " and "
               << p.str() << "): they split " << words.factor(split[a])
               << " and " << words.factor(f);
      split[a] = f;
      first = p;
    }
  }

  for (int64_t a = 0; a < mesh.rank(); ++a) {
    StringRef axis = mesh.axisNames[a];
    if (int f = split[a]; f >= 0) {
      if (rule.factors[f].kind == ::spmd::Factor::Kind::NeedReplication)
        return op->emitOpError()
               << words.factor(f) << " is sharded on mesh axis '" << axis
               << "' but cannot be split (the op's sharding rule needs it "
                  "replicated)";
      SmallVector<int64_t> axes;
      for (int64_t b = 0; b < mesh.rank(); ++b)
        if (split[b] == f)
          axes.push_back(b);
      if (!rule.splitOk(f, mesh, axes)) {
        // Only reshape factors have chunk-boundary conditions.
        Value collapsed = op->getOperand(0);
        if (cast<RankedTensorType>(op->getResult(0).getType()).getRank() <
            cast<RankedTensorType>(collapsed.getType()).getRank())
          collapsed = op->getResult(0);
        unsigned collapsedSlot =
            isa<OpResult>(collapsed) ? rule.numOperands : 0;
        return op->emitOpError()
               << "reshapes sharded dim " << rule.dimOf(collapsedSlot, f)
               << " of " << collapsed.getType()
               << " but the chunk boundaries of "
               << layouts.lookup(op->getOperand(0)) << " and "
               << layouts.lookup(op->getResult(0))
               << " do not match on every rank";
      }
      for (unsigned s : slots) {
        ::spmd::Placement need = rule.shardPlacement(s, f);
        ::spmd::Placement have = placement(s, a);
        if (have == need)
          continue;
        if (need.isShard() && isa<linalg::LinalgOp>(op))
          return op->emitOpError()
                 << words.slot(s) << " must be " << need.str()
                 << " on mesh axis '" << axis
                 << "' like the other operands indexed by " << words.factor(f)
                 << ", but it is " << have.str();
        if (need.isShard() &&
            isa<tensor::ExtractSliceOp, tensor::InsertSliceOp>(op))
          return op->emitOpError()
                 << "must keep the layout: the whole tensor is "
                 << layouts.lookup(
                        op->getOperand(isa<tensor::InsertSliceOp>(op)))
                 << " but the slice is "
                 << layouts.lookup(isa<tensor::InsertSliceOp>(op)
                                       ? op->getOperand(0)
                                       : op->getResult(0));
        if (need.isShard())
          return op->emitOpError()
                 << "needs every operand and result " << need.str()
                 << " on mesh axis '" << axis << "', but one is " << have.str()
                 << " (" << words.slot(s) << ")";
        if (need.isPartial())
          return op->emitOpError()
                 << "reduces over " << words.factor(f)
                 << " sharded on mesh axis '" << axis << "', so "
                 << words.slot(s) << " must be " << need.str() << ", but it is "
                 << have.str();
        return op->emitOpError()
               << words.slot(s) << " does not use " << words.factor(f)
               << " sharded on mesh axis '" << axis
               << "', so it must be R there, but it is " << have.str();
      }
      if (failed(recordIndexOffset(op, rule, f, a)))
        return failure();
      continue;
    }

    // Nothing split on this axis: partial operands.
    std::optional<::spmd::ReduceKind> kind;
    SmallVector<unsigned> partial;
    for (unsigned s : slots) {
      if (rule.isResult(s))
        continue;
      ::spmd::Placement p = placement(s, a);
      if (!p.isPartial())
        continue;
      if (kind && *kind != p.reduce)
        return op->emitOpError()
               << "mixes partial kinds on mesh axis '" << axis << "'";
      kind = p.reduce;
      partial.push_back(s);
    }
    // Per result: the placement the operands give it (none: not a valid
    // partial term).
    auto matches = [&](const ::spmd::PartialAlt &alt, ::spmd::ReduceKind k) {
      SmallVector<unsigned> operands(alt.operands);
      llvm::sort(operands);
      return llvm::is_contained(alt.kinds, k) && operands == partial;
    };
    SmallVector<std::optional<::spmd::Placement>> expected(
        op->getNumResults(), ::spmd::Placement::replicate());
    bool linalgWording = isa<linalg::LinalgOp>(op);
    if (!kind) {
      // Results may be partial only through an alternative with no partial
      // operand (an undefined or identity value).
      for (OpResult r : op->getResults()) {
        if (!isTensor(r))
          continue;
        ::spmd::Placement p =
            placement(rule.numOperands + r.getResultNumber(), a);
        if (p.isPartial() && llvm::any_of(rule.alts, [&](auto &alt) {
              return matches(alt, p.reduce);
            }))
          expected[r.getResultNumber()] = p;
      }
    } else if (llvm::any_of(rule.alts,
                            [&](auto &alt) { return matches(alt, *kind); })) {
      expected.assign(op->getNumResults(), ::spmd::Placement::partial(*kind));
    } else if (std::optional<SmallVector<::spmd::Dep>> deps =
                   ::spmd::resultDependence(op, partial, *kind)) {
      for (auto [r, dep] : llvm::enumerate(*deps))
        expected[r] = dep == ::spmd::Dep::Const
                          ? std::optional(::spmd::Placement::replicate())
                      : dep == ::spmd::Dep::Term
                          ? std::optional(::spmd::Placement::partial(*kind))
                          : std::nullopt;
    } else {
      expected.assign(op->getNumResults(), std::nullopt);
      linalgWording = false;
    }
    for (OpResult r : op->getResults()) {
      if (!isTensor(r))
        continue;
      unsigned i = r.getResultNumber();
      ::spmd::Placement p = placement(rule.numOperands + i, a);
      if (!expected[i]) {
        if (isa<tensor::PadOp>(op))
          return op->emitOpError()
                 << "pads a " << layouts.lookup(op->getOperand(0))
                 << " partial value with something other than 0";
        if (linalgWording)
          return op->emitOpError()
                 << "result " << i
                 << " is not linear in the operands that are partial on mesh "
                    "axis '"
                 << axis << "'; they must be reduced first";
        return op->emitOpError()
               << "is not linear in its partial operands on mesh axis '" << axis
               << "'; they must be reduced first";
      }
      if (p == *expected[i])
        continue;
      if (linalgWording)
        return op->emitOpError()
               << "result " << i << " is "
               << (expected[i]->isPartial() ? expected[i]->str()
                                            : std::string("replicated"))
               << " on mesh axis '" << axis
               << "' by its operands but its layout says " << p.str();
      return op->emitOpError()
             << "computes a "
             << (expected[i]->isPartial() ? expected[i]->str()
                                          : std::string("replicated"))
             << " value on mesh axis '" << axis << "' but its result is "
             << p.str();
    }
  }
  return success();
}

/// linalg.index of a loop split on a mesh axis reads the local index: the
/// rewrite adds the rank's chunk offset (offsetIndices).
LogicalResult FunctionPartitioner::recordIndexOffset(Operation *op,
                                                     const ShardingRule &rule,
                                                     int factor, int64_t axis) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasIndexSemantics())
    return success();
  bool read = false;
  linalgOp.getBlock()->walk([&](linalg::IndexOp index) {
    read |= index.getDim() == unsigned(factor);
  });
  if (!read)
    return success();
  int64_t size = rule.factors[factor].size;
  if (size < 0)
    return op->emitOpError()
           << "reads the index of loop " << factor
           << ", which is sharded on mesh axis '" << mesh.axisNames[axis]
           << "', but the loop's global size is not static";
  auto &offsets = indexOffsets[op];
  auto it = llvm::find_if(offsets, [&](const IndexOffset &o) {
    return o.loop == unsigned(factor);
  });
  if (it == offsets.end())
    offsets.push_back({unsigned(factor), {axis}, size});
  else
    it->axes.push_back(axis);
  return success();
}

LogicalResult FunctionPartitioner::checkConstrain(ConstrainOp op) {
  LayoutAttr from = layouts.lookup(op.getInput());
  LayoutAttr to = op.getLayout();
  auto type = op.getType();
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  Type element = type.getElementType();
  int64_t bytes = ::spmd::elementBytes(element).value_or(8);
  auto key = std::make_tuple(Type(type), Attribute(from), Attribute(to));
  auto cached = planCache.find(key);
  if (cached == planCache.end())
    cached = planCache
                 .try_emplace(key, ::spmd::planRedistribute(mesh, shape, bytes,
                                                            from.toLayout(),
                                                            to.toLayout()))
                 .first;
  const ::spmd::RedistributePlan &plan = cached->second;
  if (!plan.ok())
    return op.emitOpError() << "cannot redistribute from " << from << " to "
                            << to << ": " << plan.error;
  plans[op] = plan;
  return success();
}

LogicalResult FunctionPartitioner::checkReturn(func::ReturnOp op) {
  for (auto [i, v] : llvm::enumerate(op.getOperands())) {
    if (!isTensor(v))
      continue;
    auto declared =
        fn.getResultAttrOfType<LayoutAttr>(i, SPMDDialect::kLayoutAttrName);
    if (layouts.lookup(v) != declared)
      return op.emitOpError()
             << "returns operand " << i << " in layout " << layouts.lookup(v)
             << " but result " << i << " is declared " << declared
             << "; an spmd.constrain must change it first";
  }
  return success();
}

/// A tensor constant: a splat is rebuilt at the local shape of any layout
/// (a replicated value is a valid P(avg|max|min), and P(sum) is made with
/// spmd.partial_from_replicated unless the value is 0); any other constant
/// must be replicated.
LogicalResult FunctionPartitioner::checkConstant(arith::ConstantOp constant) {
  Value result = constant.getResult();
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (layoutOf(result).isReplicated())
    return success();
  if (!dense || !dense.isSplat())
    return constant->emitOpError()
           << "is a non-splat tensor constant in layout "
           << layouts.lookup(result) << "; only replicated ones are supported";
  if (!localType(result).hasStaticShape())
    return constant->emitOpError()
           << "is a splat constant whose local shape under "
           << layouts.lookup(result)
           << " differs between ranks; use tensor.empty + linalg.fill";
  return success();
}

//===----------------------------------------------------------------------===//
// Rewrite phase
//===----------------------------------------------------------------------===//

/// spmd.partial_from_replicated over the axes where `layout` is P(sum):
/// turns a value computed the same on every rank into P(sum) terms. Other
/// partial kinds need nothing.
Value FunctionPartitioner::makePartial(OpBuilder &b, Location loc, Value v,
                                       LayoutAttr layout) {
  SmallVector<int64_t> axes;
  ::spmd::Layout l = layout.toLayout();
  for (int64_t a = 0; a < mesh.rank(); ++a)
    if (l.placements[a].isPartial() &&
        l.placements[a].reduce == ::spmd::ReduceKind::Sum)
      axes.push_back(a);
  if (axes.empty())
    return v;
  return PartialFromReplicatedOp::create(
      b, loc, v.getType(), v, meshRef, axisNames(axes),
      ReductionKindAttr::get(ctx, ReductionKind::sum));
}

/// Whether a collective's result has a rank-dependent size only its layout
/// knows: a dim it splits or joins from an input dim that is rank-dependent
/// too, or (for one that moves data) a rank-dependent dim it leaves alone.
static bool needsResultSizes(Operation *op) {
  auto in = cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = cast<RankedTensorType>(op->getResult(0).getType());
  std::optional<int64_t> split = collectiveSplitDim(op);
  std::optional<int64_t> join = collectiveJoinDim(op);
  auto collective = dyn_cast<CollectiveOpInterface>(op);
  bool moves = collective && collective.communicates();
  for (int64_t d = 0; d < out.getRank(); ++d) {
    if (!out.isDynamicDim(d))
      continue;
    bool splitOrJoined = (split && *split == d) || (join && *join == d);
    if (splitOrJoined ? in.isDynamicDim(d) : moves)
      return true;
  }
  return false;
}

LogicalResult FunctionPartitioner::rewriteConstrain(ConstrainOp op) {
  using Kind = ::spmd::RedistributeStep::Kind;
  const ::spmd::RedistributePlan &plan = plans[op];
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto global = cast<RankedTensorType>(op.getType());
  Value v = op.getInput();
  auto reason = op->getAttrOfType<StringAttr>("reason");
  for (const ::spmd::RedistributeStep &step : plan.steps) {
    Type type = localType(global, LayoutAttr::get(meshRef, step.after));
    ArrayAttr axes = axisNames(step.axes);
    auto i64 = [&](int64_t x) { return b.getI64IntegerAttr(x); };
    auto kind = [&] {
      return ReductionKindAttr::get(ctx, toReductionKind(step.reduce));
    };
    Operation *created = nullptr;
    switch (step.kind) {
    case Kind::AllGather:
      created =
          AllGatherOp::create(b, loc, type, v, meshRef, axes, i64(step.dim));
      break;
    case Kind::AllReduce:
      created = AllReduceOp::create(b, loc, type, v, meshRef, axes, kind());
      break;
    case Kind::ReduceScatter:
      created = ReduceScatterOp::create(b, loc, type, v, meshRef, axes,
                                        i64(step.dim), kind());
      break;
    case Kind::AllToAll:
      created = AllToAllOp::create(b, loc, type, v, meshRef, axes,
                                   i64(step.splitDim), i64(step.concatDim));
      break;
    case Kind::LocalShard:
      created = ShardOp::create(b, loc, type, v, meshRef, axes, i64(step.dim));
      break;
    case Kind::LocalPartial:
      // avg/max/min: a replicated value already is a valid partial term.
      if (step.reduce == ::spmd::ReduceKind::Sum)
        created = PartialFromReplicatedOp::create(b, loc, type, v, meshRef,
                                                  axes, kind());
      break;
    }
    if (!created)
      continue;
    v = created->getResult(0);
    if (needsResultSizes(created)) {
      // The result's rank-dependent sizes as the layout defines them: for
      // bufferization, a dim split or joined by this collective whose input
      // is itself uneven on another axis (two axes nested on one dim) has
      // no size the collective alone can know; for spmd-comm-report, the
      // bound of a rank-dependent dim the collective leaves alone.
      created->setAttr(SPMDDialect::kResultGlobalTypeAttrName,
                       TypeAttr::get(global));
      created->setAttr(SPMDDialect::kResultLayoutAttrName,
                       LayoutAttr::get(meshRef, step.after));
    }
    if (explain) {
      InFlightDiagnostic remark = created->emitRemark();
      remark << "spmd-partition: " << created->getName() << " over " << axes
             << " inserted because spmd.constrain changes "
             << LayoutAttr::get(meshRef, layoutOf(op.getInput())) << " to "
             << op.getLayout() << " (step: " << step.str(mesh) << ")";
      if (reason)
        remark << "; reason: " << reason.getValue();
    }
  }
  replaceValue(op.getResult(), v);
  op.erase();
  return success();
}

void FunctionPartitioner::rewriteEmpty(tensor::EmptyOp op) {
  RankedTensorType type = localType(op.getResult());
  auto global = op.getType();
  ::spmd::Layout layout = layoutOf(op.getResult());
  OpBuilder b(op);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d))
      continue;
    std::vector<int64_t> axes = layout.shardAxes(d);
    sizes.push_back(LocalSizeOp::create(
        b, op.getLoc(), b.getIndexType(), meshRef,
        axisNames(SmallVector<int64_t>(axes.begin(), axes.end())),
        b.getI64IntegerAttr(global.getDimSize(d))));
  }
  auto local = tensor::EmptyOp::create(b, op.getLoc(), type, sizes);
  replaceValue(op.getResult(), local.getResult());
  op.erase();
}

OpFoldResult FunctionPartitioner::localSize(OpBuilder &b, Location loc,
                                            RankedTensorType global,
                                            LayoutAttr layout, int64_t d) {
  RankedTensorType local = localType(global, layout);
  if (!local.isDynamicDim(d))
    return b.getIndexAttr(local.getDimSize(d));
  std::vector<int64_t> axes = layout.toLayout().shardAxes(d);
  return LocalSizeOp::create(
             b, loc, b.getIndexType(), meshRef,
             axisNames(SmallVector<int64_t>(axes.begin(), axes.end())),
             b.getI64IntegerAttr(global.getDimSize(d)))
      .getResult();
}

void FunctionPartitioner::rewriteCollapse(tensor::CollapseShapeOp op) {
  RankedTensorType type = localType(op.getResult());
  OpBuilder b(op);
  Value local = tensor::CollapseShapeOp::create(b, op.getLoc(), op.getSrc(),
                                                op.getReassociationIndices());
  // The inferred type can be more dynamic than the layout's (a dim of 0).
  if (local.getType() != type)
    local = tensor::CastOp::create(b, op.getLoc(), type, local);
  replaceValue(op.getResult(), local);
  op.erase();
}

void FunctionPartitioner::rewriteExpand(tensor::ExpandShapeOp op) {
  RankedTensorType type = localType(op.getResult());
  LayoutAttr layout = layouts.lookup(op.getResult());
  OpBuilder b(op);
  SmallVector<OpFoldResult> shape;
  for (int64_t d = 0; d < type.getRank(); ++d)
    shape.push_back(localSize(b, op.getLoc(), op.getResultType(), layout, d));
  auto local = tensor::ExpandShapeOp::create(
      b, op.getLoc(), type, op.getSrc(), op.getReassociationIndices(), shape);
  replaceValue(op.getResult(), local.getResult());
  op.erase();
}

/// Slice sizes with every sharded dim replaced by the local size of `whole`
/// (taken whole, see the rule of tensor slices).
SmallVector<OpFoldResult>
FunctionPartitioner::localSliceSizes(OpBuilder &b, Location loc, Value whole,
                                     Value sliced,
                                     ArrayRef<OpFoldResult> sizes) {
  ::spmd::Layout layout = layoutOf(whole);
  auto local = cast<RankedTensorType>(whole.getType());
  SmallVector<OpFoldResult> result(sizes.begin(), sizes.end());
  for (int64_t d = 0; d < local.getRank(); ++d) {
    if (layout.shardAxes(d).empty())
      continue;
    if (local.isDynamicDim(d))
      result[d] = tensor::DimOp::create(b, loc, whole, d).getResult();
    else
      result[d] = b.getIndexAttr(local.getDimSize(d));
  }
  return result;
}

void FunctionPartitioner::rewriteExtract(tensor::ExtractSliceOp op) {
  RankedTensorType type = localType(op.getResult());
  OpBuilder b(op);
  SmallVector<OpFoldResult> sizes = localSliceSizes(
      b, op.getLoc(), op.getSource(), op.getResult(), op.getMixedSizes());
  auto local = tensor::ExtractSliceOp::create(
      b, op.getLoc(), type, op.getSource(), op.getMixedOffsets(), sizes,
      op.getMixedStrides());
  replaceValue(op.getResult(), local.getResult());
  op.erase();
}

void FunctionPartitioner::rewriteInsert(tensor::InsertSliceOp op) {
  OpBuilder b(op);
  // The source is taken whole on sharded dims, so its local sizes are the
  // slice sizes there.
  SmallVector<OpFoldResult> sizes = localSliceSizes(
      b, op.getLoc(), op.getSource(), op.getSource(), op.getMixedSizes());
  auto local = tensor::InsertSliceOp::create(b, op.getLoc(), op.getSource(),
                                             op.getDest(), op.getMixedOffsets(),
                                             sizes, op.getMixedStrides());
  replaceValue(op.getResult(), local.getResult());
  op.erase();
}

/// A constant 0 (float or integer, scalar or splat): a valid P(sum) term
/// on every rank as it is.
static bool isZero(Value v) {
  return matchPattern(v, m_AnyZeroFloat()) || matchPattern(v, m_Zero());
}

LogicalResult FunctionPartitioner::rewriteConstant(arith::ConstantOp op) {
  RankedTensorType type = localType(op.getResult());
  LayoutAttr layout = layouts.lookup(op.getResult());
  op->removeAttr(SPMDDialect::kLayoutAttrName);
  OpBuilder b(op);
  Value v = op.getResult();
  if (type != op.getType()) {
    auto dense = cast<DenseElementsAttr>(op.getValue());
    v = arith::ConstantOp::create(
        b, op.getLoc(), type,
        DenseElementsAttr::get(type, dense.getSplatValue<Attribute>()));
  }
  b.setInsertionPointAfter(v.getDefiningOp());
  Value result =
      isZero(op.getResult()) ? v : makePartial(b, op.getLoc(), v, layout);
  if (v != op.getResult()) {
    replaceValue(op.getResult(), result);
    op.erase();
  } else if (result != v) {
    replaceValue(v, result, result.getDefiningOp());
  }
  return success();
}

/// linalg.index of a sharded loop gives the local index: add this rank's
/// chunk offset (spmd.local_offset, computed once before the op) to get the
/// global index the body was written for.
void FunctionPartitioner::offsetIndices(linalg::LinalgOp op) {
  auto it = indexOffsets.find(op);
  if (it == indexOffsets.end())
    return;
  for (const IndexOffset &o : it->second) {
    OpBuilder b(op);
    Value offset =
        LocalOffsetOp::create(b, op->getLoc(), b.getIndexType(), meshRef,
                              axisNames(o.axes), b.getI64IntegerAttr(o.size));
    SmallVector<linalg::IndexOp> reads;
    op.getBlock()->walk([&](linalg::IndexOp index) {
      if (index.getDim() == o.loop)
        reads.push_back(index);
    });
    for (linalg::IndexOp index : reads) {
      b.setInsertionPointAfter(index);
      Value global =
          arith::AddIOp::create(b, index.getLoc(), index.getResult(), offset);
      index.getResult().replaceAllUsesExcept(global, global.getDefiningOp());
    }
  }
}

LogicalResult FunctionPartitioner::rewrite() {
  Block &entry = fn.getBody().front();
  // Signature.
  SmallVector<Type> argTypes, resultTypes;
  // Attributes are set all at once: one setArgAttr per argument would unique
  // a new array of all argument attributes each time (quadratic).
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  fn.getAllArgAttrs(argAttrs);
  fn.getAllResultAttrs(resultAttrs);
  auto withGlobalType = [&](DictionaryAttr dict, Type global) {
    NamedAttrList attrs(dict);
    attrs.set(SPMDDialect::kGlobalTypeAttrName, TypeAttr::get(global));
    return attrs.getDictionary(ctx);
  };
  for (BlockArgument arg : entry.getArguments()) {
    if (isTensor(arg)) {
      argAttrs[arg.getArgNumber()] =
          withGlobalType(argAttrs[arg.getArgNumber()], arg.getType());
      arg.setType(localType(arg));
    }
    argTypes.push_back(arg.getType());
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    Type t = fn.getResultTypes()[i];
    if (auto global = dyn_cast<RankedTensorType>(t)) {
      resultAttrs[i] = withGlobalType(resultAttrs[i], global);
      t = localType(global, fn.getResultAttrOfType<LayoutAttr>(
                                i, SPMDDialect::kLayoutAttrName));
    }
    resultTypes.push_back(t);
  }
  fn.setAllArgAttrs(argAttrs);
  fn.setAllResultAttrs(resultAttrs);
  fn.setType(FunctionType::get(ctx, argTypes, resultTypes));

  // Body, in order: operands are local before their users are visited.
  SmallVector<Operation *> ops;
  for (Operation &op : entry)
    ops.push_back(&op);
  for (Operation *op : ops) {
    // Fix result types first; the checks above guarantee operands fit.
    if (auto constrain = dyn_cast<ConstrainOp>(op)) {
      if (failed(rewriteConstrain(constrain)))
        return failure();
      continue;
    }
    if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      rewriteEmpty(empty);
      continue;
    }
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      rewriteCollapse(collapse);
      continue;
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      rewriteExpand(expand);
      continue;
    }
    if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op)) {
      rewriteExtract(extract);
      continue;
    }
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
      rewriteInsert(insert);
      continue;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      if (isTensor(constant) && failed(rewriteConstant(constant)))
        return failure();
      continue;
    }
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      offsetIndices(linalgOp);
    LayoutAttr fillLayout;
    if (auto fill = dyn_cast<linalg::FillOp>(op))
      fillLayout = layouts.lookup(fill.getResult(0));
    for (OpResult result : op->getResults())
      if (isTensor(result))
        result.setType(localType(result));
    op->removeAttr(SPMDDialect::kLayoutAttrName);
    if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      Value value = fill.getInputs()[0];
      if (fillLayout.toLayout().hasPartial() && !isZero(value)) {
        OpBuilder b(ctx);
        b.setInsertionPointAfter(fill);
        Value partial =
            makePartial(b, fill.getLoc(), fill.getResult(0), fillLayout);
        if (partial != fill.getResult(0))
          replaceValue(fill.getResult(0), partial, partial.getDefiningOp());
      }
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct PartitionPass : public spmd::impl::SPMDPartitionBase<PartitionPass> {
  using SPMDPartitionBase::SPMDPartitionBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    SPMDPartitionBase::getDependentDialects(registry);
    registerShardingRuleExternalModels(registry);
  }

  /// A function takes part if its signature or body names a layout.
  static bool hasLayouts(func::FuncOp fn) {
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, SPMDDialect::kLayoutAttrName))
        return true;
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      if (fn.getResultAttr(i, SPMDDialect::kLayoutAttrName))
        return true;
    bool found = false;
    fn.walk([&](Operation *op) {
      if (isa<ConstrainOp>(op) || op->hasAttr(SPMDDialect::kLayoutAttrName))
        found = true;
    });
    return found;
  }

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() || !hasLayouts(fn))
        continue;
      // Already partitioned functions carry spmd.global_type.
      bool local = false;
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        local |= bool(fn.getArgAttr(i, SPMDDialect::kGlobalTypeAttrName));
      if (local) {
        fn.emitError() << "is already partitioned (its arguments carry "
                       << SPMDDialect::kGlobalTypeAttrName << ")";
        return signalPassFailure();
      }
      FunctionPartitioner partitioner(fn, explain);
      if (failed(partitioner.check()) || failed(partitioner.rewrite()))
        return signalPassFailure();
    }
  }
};
} // namespace
