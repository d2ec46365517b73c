//===- Partition.cpp - spmd-partition: global program to local program ----===//
//
// Two phases per function. The check phase reads every tensor value's layout
// and checks each op against its sharding rule, touching nothing, so that a
// rejected program is left as it was. The rewrite phase then changes types
// in place (linalg and elementwise ops keep their form), rebuilds the ops
// whose attributes or operands depend on local sizes (tensor.empty, splat
// constants) and replaces each spmd.constrain by the redistribute planner's
// steps.
//
//===----------------------------------------------------------------------===//

#include "dialects/spmd/SPMDOps.h"
#include "passes/partition/Passes.h"
#include "core/RedistributePlanner.h"

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
// How a value depends on the partial operands of an op
//===----------------------------------------------------------------------===//

/// Within one op and for one mesh axis: `Const` does not depend on the
/// operands that are partial on the axis, `Term` is a valid partial term of
/// the result (linear in them for sum/avg, monotone for max/min), `Bad`
/// mixes them in a way that is not.
enum class Dep { Const, Term, Bad };

/// The dependence of the result of `op` on its operands `deps` when the
/// partial reduction is `kind`.
Dep combine(Operation *op, ArrayRef<Dep> deps, ::spmd::ReduceKind kind) {
  if (llvm::all_of(deps, [](Dep d) { return d == Dep::Const; }))
    return Dep::Const;
  if (llvm::is_contained(deps, Dep::Bad))
    return Dep::Bad;
  bool allTerms = llvm::all_of(deps, [](Dep d) { return d == Dep::Term; });
  auto termAndConst = [&] { return deps.size() == 2 && deps[0] != deps[1]; };
  bool linear =
      kind == ::spmd::ReduceKind::Sum || kind == ::spmd::ReduceKind::Avg;
  if (linear) {
    // Sums of terms; terms scaled by something the same on every rank.
    if (isa<arith::AddFOp, arith::AddIOp, arith::SubFOp, arith::SubIOp>(op))
      return allTerms ? Dep::Term : Dep::Bad;
    if (isa<arith::MulFOp, arith::MulIOp>(op))
      return termAndConst() ? Dep::Term : Dep::Bad;
    if (isa<arith::DivFOp>(op))
      return deps[0] == Dep::Term && deps[1] == Dep::Const ? Dep::Term
                                                           : Dep::Bad;
    if (isa<arith::NegFOp, arith::ExtFOp, arith::TruncFOp>(op))
      return Dep::Term;
    return Dep::Bad;
  }
  // max/min: the reduction commutes with itself and with adding something
  // the same on every rank.
  bool isMax = kind == ::spmd::ReduceKind::Max;
  if (isMax &&
      isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp, arith::MaxUIOp>(
          op))
    return Dep::Term;
  if (!isMax &&
      isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp, arith::MinUIOp>(
          op))
    return Dep::Term;
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return termAndConst() ? Dep::Term : Dep::Bad;
  if (isa<arith::SubFOp, arith::SubIOp>(op))
    return deps[0] == Dep::Term && deps[1] == Dep::Const ? Dep::Term : Dep::Bad;
  if (isa<arith::ExtFOp, arith::TruncFOp>(op))
    return Dep::Term;
  return Dep::Bad;
}

/// The dependence of `v` (inside a linalg body) on the block arguments in
/// `terms`.
Dep classify(Value v, const DenseSet<Value> &terms, Block *body,
             ::spmd::ReduceKind kind, DenseMap<Value, Dep> &memo) {
  if (terms.contains(v))
    return Dep::Term;
  auto it = memo.find(v);
  if (it != memo.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  Dep result = Dep::Const;
  // Block arguments that are not terms and values from outside the body are
  // the same on every rank.
  if (def && def->getBlock() == body) {
    SmallVector<Dep> deps;
    for (Value operand : def->getOperands())
      deps.push_back(classify(operand, terms, body, kind, memo));
    result = combine(def, deps, kind);
  }
  memo[v] = result;
  return result;
}

/// The reduction kind of a linalg body's combiner for output `index`:
/// `out = add(out, x)` is sum, `max(out, x)` max, `min(out, x)` min.
std::optional<::spmd::ReduceKind> combinerKind(linalg::LinalgOp op,
                                               unsigned index) {
  Block *body = op.getBlock();
  Value yielded = body->getTerminator()->getOperand(index);
  Operation *def = yielded.getDefiningOp();
  BlockArgument out = op.getRegionOutputArgs()[index];
  if (!def || def->getNumOperands() != 2 ||
      !llvm::is_contained(def->getOperands(), Value(out)))
    return std::nullopt;
  if (isa<arith::AddFOp, arith::AddIOp>(def))
    return ::spmd::ReduceKind::Sum;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp, arith::MaxUIOp>(
          def))
    return ::spmd::ReduceKind::Max;
  if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp, arith::MinUIOp>(
          def))
    return ::spmd::ReduceKind::Min;
  return std::nullopt;
}

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
  LogicalResult checkLinalg(linalg::LinalgOp op);
  LogicalResult checkElementwise(Operation *op);
  LogicalResult checkCreation(Operation *op, Value result);
  LogicalResult checkReturn(func::ReturnOp op);
  LogicalResult checkReshape(Operation *op, Value small, Value big,
                             ArrayRef<ReassociationIndices> groups);
  LogicalResult checkSlice(Operation *op, Value sliced, Value whole,
                           ArrayRef<Value> same, ArrayRef<int64_t> offsets,
                           ArrayRef<int64_t> sizes, ArrayRef<int64_t> strides,
                           bool dynamic);
  LogicalResult checkConstrain(ConstrainOp op);
  LogicalResult checkConcat(tensor::ConcatOp op);
  LogicalResult checkPad(tensor::PadOp op);

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
};

bool isTensor(Value v) { return isa<RankedTensorType>(v.getType()); }

/// "S(0)" style name of placement `a` of `layout` for messages.
std::string placementStr(const ::spmd::Layout &layout, int64_t axis) {
  return layout.placements[axis].str();
}

} // namespace

RankedTensorType FunctionPartitioner::localType(RankedTensorType global,
                                                LayoutAttr layout) const {
  std::vector<int64_t> shape(global.getShape().begin(),
                             global.getShape().end());
  SmallVector<int64_t> local;
  for (std::optional<int64_t> d :
       ::spmd::uniformLocalShape(mesh, layout.toLayout(), shape))
    local.push_back(d ? *d : ShapedType::kDynamic);
  return RankedTensorType::get(local, global.getElementType(),
                               global.getEncoding());
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
      // Inside a region: only the scalar bodies of linalg ops are supported
      // (a tensor used there would be indexed globally).
      for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
        if (isa<ShapedType>(v.getType()))
          return op->emitOpError()
                 << "inside a region is not supported by spmd-partition";
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
  if (isa<tensor::EmptyOp>(op))
    return success(); // any layout: the contents are undefined
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return checkCreation(op, fill.getResult(0));
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return isTensor(constant) ? checkCreation(op, constant) : success();
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return checkReshape(op, collapse.getResult(), collapse.getSrc(),
                        collapse.getReassociationIndices());
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return checkReshape(op, expand.getSrc(), expand.getResult(),
                        expand.getReassociationIndices());
  if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op))
    return checkSlice(op, extract.getResult(), extract.getSource(), {},
                      extract.getStaticOffsets(), extract.getStaticSizes(),
                      extract.getStaticStrides(),
                      !extract.getOffsets().empty() ||
                          !extract.getSizes().empty() ||
                          !extract.getStrides().empty());
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
    return checkSlice(op, insert.getSource(), insert.getResult(),
                      {insert.getDest()}, insert.getStaticOffsets(),
                      insert.getStaticSizes(), insert.getStaticStrides(),
                      !insert.getOffsets().empty() ||
                          !insert.getSizes().empty() ||
                          !insert.getStrides().empty());
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    // Reads the global size: only an unsharded dim has it locally.
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!isTensor(dim.getSource()))
      return success();
    if (!index)
      return op->emitOpError() << "has a non-constant dim index on a value in "
                               << layouts.lookup(dim.getSource());
    if (!layoutOf(dim.getSource()).shardAxes(*index).empty())
      return op->emitOpError()
             << "reads the size of dim " << *index << ", which "
             << layouts.lookup(dim.getSource()) << " shards";
    return success();
  }
  if (auto castOp = dyn_cast<tensor::CastOp>(op)) {
    if (layouts.lookup(castOp.getSource()) != layouts.lookup(castOp))
      return op->emitOpError()
             << "changes the layout from " << layouts.lookup(castOp.getSource())
             << " to " << layouts.lookup(castOp);
    return success();
  }
  if (auto concat = dyn_cast<tensor::ConcatOp>(op))
    return checkConcat(concat);
  if (auto pad = dyn_cast<tensor::PadOp>(op))
    return checkPad(pad);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return checkLinalg(linalgOp);
  if (OpTrait::hasElementwiseMappableTraits(op) &&
      llvm::any_of(op->getResults(), isTensor))
    return checkElementwise(op);

  // Anything else computes the same on every rank if all its tensors are
  // replicated.
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    if (!isTensor(v))
      continue;
    if (!layoutOf(v).isReplicated())
      return op->emitOpError()
             << "has no spmd-partition rule and its "
             << (isa<OpResult>(v) && v.getDefiningOp() == op ? "result"
                                                             : "operand")
             << " is not replicated (layout " << layouts.lookup(v) << ")";
  }
  return success();
}

LogicalResult FunctionPartitioner::checkConstrain(ConstrainOp op) {
  LayoutAttr from = layouts.lookup(op.getInput());
  LayoutAttr to = op.getLayout();
  auto type = op.getType();
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  Type element = type.getElementType();
  int64_t bytes =
      element.isIntOrFloat()
          ? std::max<int64_t>(1, (element.getIntOrFloatBitWidth() + 7) / 8)
          : 8;
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

/// Reshapes: each dim of `small` is a group of dims of `big`. A sharding
/// survives when it is on the group's outermost dim on the big side, and
/// every rank's chunk of that dim, times the inner dims, is exactly its chunk
/// of the small dim (checked on every rank).
LogicalResult
FunctionPartitioner::checkReshape(Operation *op, Value small, Value big,
                                  ArrayRef<ReassociationIndices> groups) {
  ::spmd::Layout ls = layoutOf(small), lb = layoutOf(big);
  auto smallType = cast<RankedTensorType>(small.getType());
  auto bigType = cast<RankedTensorType>(big.getType());
  for (int64_t a = 0; a < mesh.rank(); ++a) {
    ::spmd::Placement ps = ls.placements[a], pb = lb.placements[a];
    if (!ps.isShard() && !pb.isShard()) {
      if (ps != pb)
        return op->emitOpError()
               << "changes the placement on mesh axis '" << mesh.axisNames[a]
               << "' from " << layouts.lookup(op->getOperand(0)) << " to "
               << layouts.lookup(op->getResult(0))
               << "; a reshape keeps R and P";
      continue;
    }
    if (!ps.isShard() || !pb.isShard() || groups[ps.dim].front() != pb.dim)
      return op->emitOpError()
             << "cannot carry the sharding on mesh axis '" << mesh.axisNames[a]
             << "' from " << layouts.lookup(op->getOperand(0)) << " to "
             << layouts.lookup(op->getResult(0))
             << ": a sharded dim must be the outermost dim of its reshaped "
                "group";
  }
  std::vector<int64_t> smallShape(smallType.getShape().begin(),
                                  smallType.getShape().end());
  std::vector<int64_t> bigShape(bigType.getShape().begin(),
                                bigType.getShape().end());
  for (auto [q, group] : llvm::enumerate(groups)) {
    if (ls.shardAxes(q).empty())
      continue;
    int64_t rest = 1;
    for (int64_t d : ArrayRef<int64_t>(group).drop_front())
      rest *= bigShape[d];
    bool aligned = rest != 0;
    for (int64_t dev = 0; aligned && dev < mesh.numDevices(); ++dev) {
      std::vector<int64_t> coords = mesh.coords(dev);
      ::spmd::Range rs = ::spmd::localRanges(mesh, ls, smallShape, coords)[q];
      ::spmd::Range rb =
          ::spmd::localRanges(mesh, lb, bigShape, coords)[group.front()];
      aligned = rs.offset == rb.offset * rest && rs.size == rb.size * rest;
    }
    if (!aligned)
      return op->emitOpError() << "reshapes sharded dim " << q << " of "
                               << smallType << " but the chunk boundaries of "
                               << layouts.lookup(op->getOperand(0)) << " and "
                               << layouts.lookup(op->getResult(0))
                               << " do not match on every rank";
  }
  return success();
}

/// extract_slice / insert_slice: the layout is unchanged (a slice of a
/// partial is a partial) and sharded dims are taken whole.
LogicalResult FunctionPartitioner::checkSlice(Operation *op, Value sliced,
                                              Value whole, ArrayRef<Value> same,
                                              ArrayRef<int64_t> offsets,
                                              ArrayRef<int64_t> sizes,
                                              ArrayRef<int64_t> strides,
                                              bool dynamic) {
  ::spmd::Layout lw = layoutOf(whole), ls = layoutOf(sliced);
  bool replicated = lw.isReplicated() && ls.isReplicated();
  for (Value v : same)
    replicated &= layoutOf(v).isReplicated();
  if (replicated)
    return success();
  for (Value v : same)
    if (layouts.lookup(v) != layouts.lookup(whole))
      return op->emitOpError()
             << "needs its destination and result in the same layout, got "
             << layouts.lookup(v) << " and " << layouts.lookup(whole);
  auto wholeType = cast<RankedTensorType>(whole.getType());
  auto slicedType = cast<RankedTensorType>(sliced.getType());
  bool hasShard = llvm::any_of(
      lw.placements, [](const ::spmd::Placement &p) { return p.isShard(); });
  if (hasShard && slicedType.getRank() != wholeType.getRank())
    return op->emitOpError()
           << "is rank-reducing on a sharded value (" << layouts.lookup(whole)
           << "); only replicated ones are supported";
  if (lw != ls)
    return op->emitOpError() << "must keep the layout: the whole tensor is "
                             << layouts.lookup(whole) << " but the slice is "
                             << layouts.lookup(sliced);
  if (dynamic)
    return op->emitOpError()
           << "has dynamic offsets, sizes or strides on a non-replicated "
              "value; only static ones are supported";
  for (int64_t d = 0; d < wholeType.getRank(); ++d)
    if (!lw.shardAxes(d).empty() &&
        (offsets[d] != 0 || sizes[d] != wholeType.getDimSize(d) ||
         strides[d] != 1))
      return op->emitOpError()
             << "slices dim " << d << ", which " << layouts.lookup(whole)
             << " shards; a sharded dim must be taken whole";
  return success();
}

/// concat: every operand in the result's layout, the concatenated dim not
/// sharded (a concat of partials is a partial).
LogicalResult FunctionPartitioner::checkConcat(tensor::ConcatOp op) {
  LayoutAttr layout = layouts.lookup(op.getResult());
  for (Value v : op.getInputs())
    if (layouts.lookup(v) != layout)
      return op.emitOpError() << "needs every operand in its result's layout "
                              << layout << ", but one is " << layouts.lookup(v);
  if (!layout.toLayout().shardAxes(op.getDim()).empty())
    return op.emitOpError() << "concatenates dim " << op.getDim() << ", which "
                            << layout << " shards; it must be replicated";
  return success();
}

/// pad: same layout, no padding on sharded dims, and a partial sum padded
/// only with 0 (anything else would be counted once per rank).
LogicalResult FunctionPartitioner::checkPad(tensor::PadOp op) {
  LayoutAttr layout = layouts.lookup(op.getResult());
  ::spmd::Layout l = layout.toLayout();
  if (layouts.lookup(op.getSource()) != layout)
    return op.emitOpError()
           << "changes the layout from " << layouts.lookup(op.getSource())
           << " to " << layout;
  if (l.isReplicated())
    return success();
  for (int64_t d = 0; d < op.getResultType().getRank(); ++d)
    if (!l.shardAxes(d).empty() &&
        (op.getStaticLow()[d] != 0 || op.getStaticHigh()[d] != 0))
      return op.emitOpError()
             << "pads dim " << d << ", which " << layout << " shards";
  bool sumPartial = llvm::any_of(l.placements, [](const ::spmd::Placement &p) {
    return p.isPartial() && (p.reduce == ::spmd::ReduceKind::Sum ||
                             p.reduce == ::spmd::ReduceKind::Avg);
  });
  Value padding = op.getConstantPaddingValue();
  if (sumPartial && (!padding || !(matchPattern(padding, m_AnyZeroFloat()) ||
                                   matchPattern(padding, m_Zero()))))
    return op.emitOpError() << "pads a " << layout
                            << " partial value with something other than 0";
  return success();
}

/// linalg.fill and constants: any layout. Shards are computed locally, a
/// replicated value is a valid P(avg|max|min), and P(sum) is made with
/// spmd.partial_from_replicated unless the value is 0.
LogicalResult FunctionPartitioner::checkCreation(Operation *op, Value result) {
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    ::spmd::Layout init = layoutOf(fill.getOutputs()[0]);
    ::spmd::Layout out = layoutOf(result);
    for (int64_t a = 0; a < mesh.rank(); ++a)
      if ((init.placements[a].isShard() || out.placements[a].isShard()) &&
          init.placements[a] != out.placements[a])
        return op->emitOpError()
               << "fills an init in layout "
               << layouts.lookup(fill.getOutputs()[0])
               << " but its result has layout " << layouts.lookup(result)
               << "; the shardings must agree on mesh axis '"
               << mesh.axisNames[a] << "'";
    return success();
  }
  auto constant = cast<arith::ConstantOp>(op);
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (layoutOf(result).isReplicated())
    return success();
  if (!dense || !dense.isSplat())
    return op->emitOpError()
           << "is a non-splat tensor constant in layout "
           << layouts.lookup(result) << "; only replicated ones are supported";
  if (!localType(result).hasStaticShape())
    return op->emitOpError()
           << "is a splat constant whose local shape under "
           << layouts.lookup(result)
           << " differs between ranks; use tensor.empty + linalg.fill";
  return success();
}

LogicalResult FunctionPartitioner::checkElementwise(Operation *op) {
  SmallVector<Value> tensors;
  for (Value v : op->getOperands())
    if (isTensor(v))
      tensors.push_back(v);
  for (Value v : op->getResults())
    tensors.push_back(v);
  for (Value v : op->getOperands())
    if (!isTensor(v))
      return op->emitOpError()
             << "mixes tensor and scalar operands; spmd-partition supports "
                "elementwise ops on tensors only";
  for (int64_t a = 0; a < mesh.rank(); ++a) {
    // Shardings must agree exactly.
    std::optional<::spmd::Placement> shard;
    for (Value v : tensors) {
      ::spmd::Placement p = layoutOf(v).placements[a];
      if (!p.isShard())
        continue;
      if (shard && *shard != p)
        return op->emitOpError()
               << "has operands sharded differently on mesh axis '"
               << mesh.axisNames[a] << "' (" << shard->str() << " and "
               << p.str() << ")";
      shard = p;
    }
    if (shard) {
      for (Value v : tensors)
        if (layoutOf(v).placements[a] != *shard)
          return op->emitOpError()
                 << "needs every operand and result " << shard->str()
                 << " on mesh axis '" << mesh.axisNames[a] << "', but one is "
                 << placementStr(layoutOf(v), a);
      continue;
    }
    // Partial operands: the op must be linear (or monotone) in them.
    std::optional<::spmd::ReduceKind> kind;
    SmallVector<Dep> deps;
    for (Value v : op->getOperands()) {
      ::spmd::Placement p = layoutOf(v).placements[a];
      if (p.isPartial()) {
        if (kind && *kind != p.reduce)
          return op->emitOpError() << "mixes partial kinds on mesh axis '"
                                   << mesh.axisNames[a] << "'";
        kind = p.reduce;
      }
      deps.push_back(p.isPartial() ? Dep::Term : Dep::Const);
    }
    Dep dep = kind ? combine(op, deps, *kind) : Dep::Const;
    for (Value v : op->getResults()) {
      ::spmd::Placement p = layoutOf(v).placements[a];
      if (dep == Dep::Bad)
        return op->emitOpError()
               << "is not linear in its partial operands on mesh axis '"
               << mesh.axisNames[a] << "'; they must be reduced first";
      if (dep == Dep::Const && !p.isReplicate())
        return op->emitOpError()
               << "computes a replicated value on mesh axis '"
               << mesh.axisNames[a] << "' but its result is " << p.str();
      if (dep == Dep::Term && p != ::spmd::Placement::partial(*kind))
        return op->emitOpError()
               << "computes a " << ::spmd::Placement::partial(*kind).str()
               << " value on mesh axis '" << mesh.axisNames[a]
               << "' but its result is " << p.str();
    }
  }
  return success();
}

LogicalResult FunctionPartitioner::checkLinalg(linalg::LinalgOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  // The tensor operands with their maps; results use their init's map.
  struct Use {
    Value value;
    AffineMap map;
    bool isResult;
    unsigned index; // operand number, or result number
  };
  SmallVector<Use> uses;
  for (OpOperand &operand : op->getOpOperands())
    if (isTensor(operand.get()))
      uses.push_back({operand.get(), op.getMatchingIndexingMap(&operand), false,
                      operand.getOperandNumber()});
  for (OpResult result : op->getResults())
    uses.push_back({result,
                    op.getMatchingIndexingMap(
                        op.getDpsInitOperand(result.getResultNumber())),
                    true, result.getResultNumber()});
  auto name = [&](const Use &u) {
    return (u.isResult ? "result " : "operand ") + std::to_string(u.index);
  };
  // Tensor dim -> loop, for projected permutations.
  auto loopOf = [&](const Use &u, int64_t dim) -> std::optional<unsigned> {
    if (auto e = dyn_cast<AffineDimExpr>(u.map.getResult(dim)))
      return e.getPosition();
    return std::nullopt;
  };
  auto dimOf = [&](const Use &u, unsigned loop) -> std::optional<int64_t> {
    for (unsigned d = 0; d < u.map.getNumResults(); ++d)
      if (auto e = dyn_cast<AffineDimExpr>(u.map.getResult(d)))
        if (e.getPosition() == loop)
          return d;
    return std::nullopt;
  };

  // A sharded loop must index operands only as a plain dim (a local index
  // is not the global one). A body reading the loop's index (linalg.index)
  // gets this rank's chunk offset added in the rewrite.
  auto checkPlainUse = [&](unsigned loop, StringRef axis) -> LogicalResult {
    if (op.hasIndexSemantics()) {
      bool read = false;
      op.getBlock()->walk(
          [&](linalg::IndexOp index) { read |= index.getDim() == loop; });
      if (read) {
        std::optional<int64_t> size;
        for (const Use &u : uses)
          if (std::optional<int64_t> d = dimOf(u, loop)) {
            size = cast<RankedTensorType>(u.value.getType()).getDimSize(*d);
            break;
          }
        if (!size || ShapedType::isDynamic(*size))
          return op->emitOpError()
                 << "reads the index of loop " << loop
                 << ", which is sharded on mesh axis '" << axis
                 << "', but the loop's global size is not static";
        int64_t axisIndex =
            llvm::find(mesh.axisNames, axis.str()) - mesh.axisNames.begin();
        auto &offsets = indexOffsets[op];
        auto it = llvm::find_if(
            offsets, [&](const IndexOffset &o) { return o.loop == loop; });
        if (it == offsets.end())
          offsets.push_back({loop, {axisIndex}, *size});
        else
          it->axes.push_back(axisIndex);
      }
    }
    for (const Use &u : uses)
      for (AffineExpr e : u.map.getResults())
        if (!isa<AffineDimExpr>(e) && e.isFunctionOfDim(loop))
          return op->emitOpError()
                 << name(u) << " indexes loop " << loop
                 << ", which is sharded on mesh axis '" << axis
                 << "' through a compound expression; only plain dims can "
                    "be sharded";
    return success();
  };

  for (int64_t a = 0; a < mesh.rank(); ++a) {
    StringRef axis = mesh.axisNames[a];
    // The loop this axis shards, if any.
    std::optional<unsigned> factor;
    for (const Use &u : uses) {
      ::spmd::Placement p = layoutOf(u.value).placements[a];
      if (!p.isShard())
        continue;
      std::optional<unsigned> loop = loopOf(u, p.dim);
      if (!loop)
        return op->emitOpError()
               << name(u) << " is " << p.str() << " on mesh axis '" << axis
               << "' but its indexing map does not index dim " << p.dim
               << " by a single loop";
      if (factor && *factor != *loop)
        return op->emitOpError()
               << "mesh axis '" << axis << "' shards loops " << *factor
               << " and " << *loop << "; operand layouts do not fit";
      factor = loop;
    }

    if (factor) {
      if (failed(checkPlainUse(*factor, axis)))
        return failure();
      bool reduction = iterators[*factor] == utils::IteratorType::reduction;
      for (const Use &u : uses) {
        ::spmd::Placement p = layoutOf(u.value).placements[a];
        std::optional<int64_t> dim = dimOf(u, *factor);
        if (dim) {
          if (!p.isShard(*dim))
            return op->emitOpError()
                   << name(u) << " must be S(" << *dim << ") on mesh axis '"
                   << axis << "' like the other operands indexed by loop "
                   << *factor << ", but it is " << p.str();
          continue;
        }
        if (!reduction ||
            !(u.isResult || op.isDpsInit(&op->getOpOperand(u.index)))) {
          if (!p.isReplicate())
            return op->emitOpError()
                   << name(u) << " does not use loop " << *factor
                   << " sharded on mesh axis '" << axis
                   << "', so it must be R there, but it is " << p.str();
          continue;
        }
        // Init or result of a reduction over the sharded loop: partial.
        unsigned out = u.isResult ? u.index : u.index - op.getNumDpsInputs();
        std::optional<::spmd::ReduceKind> kind = combinerKind(op, out);
        if (!kind)
          return op->emitOpError()
                 << "reduces over loop " << *factor << " sharded on mesh axis '"
                 << axis << "' but its body is not a sum, max or min into "
                 << "output " << out;
        if (p != ::spmd::Placement::partial(*kind))
          return op->emitOpError()
                 << "reduces over loop " << *factor << " sharded on mesh axis '"
                 << axis << "', so " << name(u) << " must be "
                 << ::spmd::Placement::partial(*kind).str() << ", but it is "
                 << p.str();
      }
      continue;
    }

    // No sharding on this axis: partial operands must flow linearly.
    std::optional<::spmd::ReduceKind> kind;
    DenseSet<Value> terms;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isTensor(operand.get()))
        continue;
      ::spmd::Placement p = layoutOf(operand.get()).placements[a];
      if (!p.isPartial())
        continue;
      if (kind && *kind != p.reduce)
        return op->emitOpError()
               << "mixes partial kinds on mesh axis '" << axis << "'";
      kind = p.reduce;
      terms.insert(op.getMatchingBlockArgument(&operand));
    }
    Block *body = op.getBlock();
    DenseMap<Value, Dep> memo;
    for (OpResult result : op->getResults()) {
      ::spmd::Placement p = layoutOf(result).placements[a];
      Dep dep = kind ? classify(body->getTerminator()->getOperand(
                                    result.getResultNumber()),
                                terms, body, *kind, memo)
                     : Dep::Const;
      if (dep == Dep::Bad)
        return op->emitOpError()
               << "result " << result.getResultNumber()
               << " is not linear in the operands that are partial on mesh "
                  "axis '"
               << axis << "'; they must be reduced first";
      if (dep == Dep::Const && !p.isReplicate())
        return op->emitOpError()
               << "result " << result.getResultNumber()
               << " is replicated on mesh axis '" << axis
               << "' by its operands but its layout says " << p.str();
      if (dep == Dep::Term && p != ::spmd::Placement::partial(*kind))
        return op->emitOpError()
               << "result " << result.getResultNumber() << " is "
               << ::spmd::Placement::partial(*kind).str() << " on mesh axis '"
               << axis << "' by its operands but its layout says " << p.str();
    }
  }
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
/// (taken whole, see checkSlice).
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
