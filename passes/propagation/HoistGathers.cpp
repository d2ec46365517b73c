//===- HoistGathers.cpp - gather a sharded region's inputs, not outputs ---===//
//
// spmd-propagate decides op by op: a sharded operand makes an elementwise op
// sharded for free (its replicated operands are sliced locally), so sharding
// spreads through chains such as an optimizer update until a replicated
// result pulls it back with one all_gather per result. When the chain has
// fewer sharded inputs than gathered results (AdamW on a sequence-sharded
// gradient: one gradient in; parameter and two moments out) gathering the
// inputs and computing the chain replicated moves fewer bytes.
//
// The same holds for partial values: LayerNorm's bias gradient sums a
// partial activation gradient and is all-reduced on its own, although that
// gradient is all-reduced anyway for the next op's backward; reading the
// reduced one makes the bias gradient replicated for free.
//
// A region is a connected set of layout-agnostic ops (all-parallel linalg
// ops, reductions where nothing is sharded, reshapes, elementwise arith/math
// on tensors) joined by values that are sharded or partial. Replicating it
// changes, per the alpha-beta model of CostModel.h:
//   * every sharded or partial input now reshards to R (a constrain's input
//     reshards directly: a slice of a replicated value is replaced by that
//     value), free where another user has it reshard to R anyway;
//   * every constrain consuming a result now starts from R (free);
//   * the ops compute the whole tensor: their result bytes are charged at
//     `kComputeBytesPerSecond` for the part the other ranks used to compute.
// A region, or else a downstream-closed part of it, is replicated when that
// lowers the total. The program stays layout-consistent: layouts still
// change only at spmd.constrain.
//
//===----------------------------------------------------------------------===//

#include "core/CostModel.h"
#include "passes/propagation/Passes.h"

#include "dialects/spmd/SPMDDialect.h"
#include "dialects/spmd/SPMDOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDHOISTGATHERS
#include "passes/propagation/Passes.h.inc"
} // namespace spmd

using namespace mlir;
using ::spmd::ConstrainOp;
using ::spmd::LayoutAttr;
using ::spmd::SPMDDialect;

namespace {
/// Recomputing a byte on every rank is charged like reading it at this
/// rate (a conservative memory bandwidth).
constexpr double kComputeBytesPerSecond = 200e9;

bool isRankedTensor(Value v) { return isa<RankedTensorType>(v.getType()); }

/// Bytes of a static tensor, or nullopt.
std::optional<double> tensorBytes(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  return double(type.getNumElements()) *
         double(std::max<unsigned>(1, type.getElementTypeBitWidth() / 8));
}

/// The layout attribute of a tensor value after spmd-propagate.
LayoutAttr layoutOf(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    return fn ? fn.getArgAttrOfType<LayoutAttr>(arg.getArgNumber(),
                                                SPMDDialect::kLayoutAttrName)
              : LayoutAttr();
  }
  Operation *def = v.getDefiningOp();
  if (auto constrain = dyn_cast<ConstrainOp>(def))
    return constrain.getLayout();
  Attribute attr = def->getAttr(SPMDDialect::kLayoutAttrName);
  if (auto single = dyn_cast_or_null<LayoutAttr>(attr))
    return single;
  if (auto array = dyn_cast_or_null<ArrayAttr>(attr)) {
    unsigned i = cast<OpResult>(v).getResultNumber();
    return i < array.size() ? dyn_cast<LayoutAttr>(array[i]) : LayoutAttr();
  }
  return LayoutAttr();
}

bool isSharded(LayoutAttr l) {
  return l && llvm::any_of(l.getPlacements(), [](const ::spmd::Placement &p) {
           return p.isShard();
         });
}
bool hasPartial(LayoutAttr l) {
  return l && llvm::any_of(l.getPlacements(), [](const ::spmd::Placement &p) {
           return p.isPartial();
         });
}
/// Sharded or partial on some axis.
bool isDistributed(LayoutAttr l) { return isSharded(l) || hasPartial(l); }

/// Ops a region may hold: computed the same way whatever the layout, every
/// tensor operand and result static. Reductions only where nothing is
/// sharded (partial terms summed over the whole tensor on every rank
/// already), so replicating them adds no compute.
bool isRegionOp(Operation *op) {
  bool kind = false;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    kind = linalgOp.hasPureTensorSemantics() &&
           (linalgOp.getNumReductionLoops() == 0 ||
            llvm::none_of(op->getOperands(), [](Value v) {
              return isRankedTensor(v) && isSharded(layoutOf(v));
            }));
  else
    kind =
        isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op) ||
        (op->getNumRegions() == 0 &&
         OpTrait::hasElementwiseMappableTraits(op) &&
         llvm::all_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>));
  if (!kind || op->getNumResults() == 0)
    return false;
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    if (!isRankedTensor(v))
      continue;
    if (!layoutOf(v) || !tensorBytes(v))
      return false;
  }
  return true;
}

struct HoistGathersPass : ::spmd::impl::SPMDHoistGathersBase<HoistGathersPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (!fn.getBody().hasOneBlock())
      return markAllAnalysesPreserved();
    // A rewrite changes the regions around it: recompute them until none
    // changes (bounded; each rewrite removes at least one reshard).
    int round = 0;
    while (round < 8 && replicateOnce(fn.getBody().front()))
      ++round;
    if (round == 0)
      markAllAnalysesPreserved();
  }

  /// Tries every region, and where replicating a whole region does not pay,
  /// its downstream-closed parts (an op and every region op consuming it);
  /// returns whether anything was rewritten.
  bool replicateOnce(Block &block) {
    // Regions: union region ops joined by a sharded or partial value.
    llvm::EquivalenceClasses<Operation *> classes;
    SmallVector<Operation *> regionOps;
    for (Operation &op : block)
      if (isRegionOp(&op)) {
        classes.insert(&op);
        regionOps.push_back(&op);
      }
    for (Operation *op : regionOps)
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && classes.contains(def) && isDistributed(layoutOf(v)))
          classes.unionSets(def, op);
    llvm::MapVector<Operation *, SmallVector<Operation *>> regions;
    for (Operation *op : regionOps)
      regions[classes.getLeaderValue(op)].push_back(op);
    bool changed = false;
    for (auto &[leader, ops] : regions) {
      auto mesh = meshOf(ops);
      if (!mesh)
        continue;
      if (maybeReplicate(ops, *mesh)) {
        changed = true;
        continue;
      }
      // Parts, latest first (ops are in block order). Bounded: the parts of
      // a region are quadratic in its size.
      if (ops.size() > 64)
        continue;
      for (Operation *start : llvm::reverse(ops)) {
        llvm::SmallPtrSet<Operation *, 16> part{start};
        for (Operation *op : ops)
          if (op != start && llvm::any_of(op->getOperands(), [&](Value v) {
                Operation *def = v.getDefiningOp();
                return def && part.contains(def) && isDistributed(layoutOf(v));
              }))
            part.insert(op);
        if (part.size() == ops.size())
          continue;
        SmallVector<Operation *> partOps;
        for (Operation *op : ops)
          if (part.contains(op))
            partOps.push_back(op);
        if (maybeReplicate(partOps, *mesh)) {
          changed = true;
          break;
        }
      }
    }
    return changed;
  }

  /// The mesh of a region's layouts.
  std::optional<std::pair<FlatSymbolRefAttr, ::spmd::Mesh>>
  meshOf(ArrayRef<Operation *> ops) {
    for (Operation *op : ops)
      for (Value r : op->getResults())
        if (LayoutAttr l = layoutOf(r)) {
          auto mesh = SymbolTable::lookupNearestSymbolFrom<::spmd::MeshOp>(
              op, l.getMesh());
          if (!mesh)
            return std::nullopt;
          return std::make_pair(l.getMesh(), mesh.toMesh());
        }
    return std::nullopt;
  }

  /// A constrain of `source` to `replicated` outside the region.
  static ConstrainOp
  replicaOf(Value source, LayoutAttr replicated,
            const llvm::SmallPtrSetImpl<Operation *> &region) {
    for (Operation *user : source.getUsers())
      if (auto c = dyn_cast<ConstrainOp>(user);
          c && c.getLayout() == replicated && !region.contains(user))
        return c;
    return ConstrainOp();
  }

  double reshard(const ::spmd::Mesh &mesh, LayoutAttr from, LayoutAttr to,
                 Value v) {
    return ::spmd::reshardCost(mesh, from.toLayout(), to.toLayout(),
                               *tensorBytes(v));
  }

  bool maybeReplicate(ArrayRef<Operation *> ops,
                      std::pair<FlatSymbolRefAttr, ::spmd::Mesh> meshPair) {
    const ::spmd::Mesh &mesh = meshPair.second;
    llvm::SmallPtrSet<Operation *, 16> inRegion(ops.begin(), ops.end());
    auto replicated = LayoutAttr::get(meshPair.first,
                                      ::spmd::Layout::replicated(mesh.rank()));
    double before = 0, after = 0;
    bool distributed = false;
    // Inputs: sharded or partial values from outside (tensor.empty inits are
    // free).
    llvm::SetVector<Value> inputs;
    for (Operation *op : ops)
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!isRankedTensor(v) || (def && inRegion.contains(def)) ||
            !isDistributed(layoutOf(v)) ||
            isa_and_nonnull<tensor::EmptyOp>(def))
          continue;
        inputs.insert(v);
      }
    for (Value v : inputs) {
      Value source = v;
      if (auto constrain = v.getDefiningOp<ConstrainOp>()) {
        source = constrain.getInput();
        // A constrain only the region reads disappears; one with other
        // users stays for them.
        if (llvm::all_of(constrain->getUsers(),
                         [&](Operation *u) { return inRegion.contains(u); }))
          before += reshard(mesh, layoutOf(source), layoutOf(v), v);
      }
      LayoutAttr from = layoutOf(source);
      if (!from)
        return false;
      // Free when replicated already, or reduced/gathered anyway for another
      // user (a partial gradient all-reduced for the next layer's backward).
      if (from == replicated || replicaOf(source, replicated, inRegion))
        continue;
      after += reshard(mesh, from, replicated, v);
    }
    // Results: constrains reading them start from R; the rest gets a slice.
    for (Operation *op : ops)
      for (Value r : op->getResults()) {
        LayoutAttr l = layoutOf(r);
        if (!isDistributed(l))
          continue;
        distributed = true;
        double devices = 1;
        for (auto [a, p] : llvm::enumerate(l.getPlacements()))
          if (p.isShard())
            devices *= double(mesh.axisSizes[a]);
        after += *tensorBytes(r) * (1 - 1 / devices) / kComputeBytesPerSecond;
        for (Operation *user : r.getUsers())
          if (auto constrain = dyn_cast<ConstrainOp>(user);
              constrain && !inRegion.contains(user))
            before += reshard(mesh, l, constrain.getLayout(), r);
      }
    if (!distributed || after >= before * (1 - 1e-9))
      return false;
    rewrite(ops, inRegion, inputs, replicated);
    return true;
  }

  void rewrite(ArrayRef<Operation *> ops,
               const llvm::SmallPtrSetImpl<Operation *> &inRegion,
               const llvm::SetVector<Value> &inputs, LayoutAttr replicated) {
    OpBuilder b(ops.front()->getContext());
    // A replicated version of each sharded input (or of what it slices).
    DenseMap<Value, Value> replicatedOf;
    llvm::SetVector<Operation *> emptiesSeen;
    auto constrainAfter = [&](Value v, LayoutAttr to) -> Value {
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
      return ConstrainOp::create(b, v.getLoc(), v.getType(), v, to);
    };
    for (Value v : inputs) {
      Value source = v;
      if (auto constrain = v.getDefiningOp<ConstrainOp>())
        source = constrain.getInput();
      LayoutAttr from = layoutOf(source);
      if (from == replicated) {
        replicatedOf[v] = source;
        continue;
      }
      // Right before the region's first use (ops are in block order), where
      // the old constrain usually was: a reduction in it keeps its freedom
      // to join a bucket of other gradients' reductions.
      Operation *firstUser = *llvm::find_if(ops, [&](Operation *op) {
        return llvm::is_contained(op->getOperands(), v);
      });
      if (ConstrainOp shared = replicaOf(source, replicated, inRegion)) {
        if (firstUser->isBeforeInBlock(shared))
          shared->moveBefore(firstUser);
        replicatedOf[v] = shared.getResult();
        continue;
      }
      b.setInsertionPoint(firstUser);
      replicatedOf[v] =
          ConstrainOp::create(b, v.getLoc(), v.getType(), source, replicated);
    }
    // Outside uses of the results keep their old layout (a free slice),
    // except constrains, which now start from R.
    SmallVector<std::pair<OpResult, LayoutAttr>> results;
    for (Operation *op : ops)
      for (OpResult r : op->getResults())
        if (LayoutAttr l = layoutOf(r); isDistributed(l))
          results.push_back({r, l});
    for (Operation *op : ops) {
      for (OpOperand &operand : op->getOpOperands()) {
        Value v = operand.get();
        if (Value rep = replicatedOf.lookup(v)) {
          operand.set(rep);
          continue;
        }
        // A sharded empty init: a replicated empty of its own.
        if (auto empty = v.getDefiningOp<tensor::EmptyOp>();
            empty && isDistributed(layoutOf(v))) {
          emptiesSeen.insert(empty);
          b.setInsertionPointAfter(empty);
          Operation *clone = b.clone(*empty);
          clone->setAttr(SPMDDialect::kLayoutAttrName, replicated);
          operand.set(clone->getResult(0));
        }
      }
      SmallVector<Attribute> attrs(op->getNumResults(), replicated);
      if (op->getAttr(SPMDDialect::kLayoutAttrName) ||
          isa<linalg::LinalgOp>(op))
        op->setAttr(SPMDDialect::kLayoutAttrName,
                    attrs.size() == 1 ? attrs.front() : b.getArrayAttr(attrs));
    }
    for (auto [r, old] : results) {
      Value slice;
      for (OpOperand &use : llvm::make_early_inc_range(r.getUses())) {
        Operation *user = use.getOwner();
        if (inRegion.contains(user))
          continue;
        if (auto constrain = dyn_cast<ConstrainOp>(user)) {
          if (constrain.getLayout() == replicated) {
            constrain.getResult().replaceAllUsesWith(r);
            constrain.erase();
          }
          continue;
        }
        if (!slice)
          slice = constrainAfter(r, old);
        use.set(slice);
      }
    }
    // Constrains and empties that only fed the region.
    for (Value v : inputs)
      if (auto constrain = v.getDefiningOp<ConstrainOp>();
          constrain && constrain.use_empty())
        constrain.erase();
    for (Operation *empty : emptiesSeen)
      if (empty->use_empty())
        empty->erase();
  }
};
} // namespace
