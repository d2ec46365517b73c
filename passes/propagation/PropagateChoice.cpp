//===- PropagateChoice.cpp - spmd-propagate's choices and costs -----------===//

#include "passes/propagation/PropagateChoice.h"

#include "rules/Linearity.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace spmd;
using namespace spmd::propagation;

/// Cost (seconds) charged for not producing a user-written result layout:
/// more than any reshard.
static constexpr double kPinnedMismatchCost = 1e6;

Placement spmd::propagation::required(const ShardingRule &rule, unsigned slot,
                                      const AxisChoice &choice) {
  switch (choice.kind) {
  case AxisChoice::Kind::None:
    return Placement::replicate();
  case AxisChoice::Kind::Shard:
    return rule.shardPlacement(slot, choice.factor);
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

linalg::FillOp spmd::propagation::refillable(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  if (fill && fill.hasPureTensorSemantics() &&
      fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
    return fill;
  return {};
}

double spmd::propagation::movedBytes(Value v, bool isResult) {
  if (!isResult && (v.getDefiningOp<tensor::EmptyOp>() || refillable(v)))
    return 0;
  return globalBytes(v.getType());
}

std::optional<OpCounts> spmd::propagation::opCounts(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics())
    return std::nullopt;
  double iterations = 1;
  for (int64_t range : linalgOp.getStaticLoopRanges())
    iterations *= ShapedType::isDynamic(range) ? 1024.0 : double(range);
  double payloadOps = 0;
  if (Block *body = linalgOp.getBlock())
    payloadOps = double(body->getOperations().size()) - 1; // not the yield
  OpCounts c;
  c.flops = iterations * std::max(1.0, payloadOps);
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (auto type = dyn_cast<RankedTensorType>(v.getType())) {
      c.bytes += globalBytes(type);
      if (type.getElementType().isIntOrFloat())
        c.bits = type.getElementType().getIntOrFloatBitWidth();
    }
  return c;
}

double spmd::propagation::opWork(Operation *op, const DeviceProfile &profile) {
  std::optional<OpCounts> c = opCounts(op);
  return c ? profile.computeTime(c->flops, c->bytes, c->bits) : 0;
}

bool spmd::propagation::isLinearSum(Operation *op) {
  SmallVector<unsigned> inputs;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    if (linalgOp.getNumReductionLoops() != 0)
      return false;
    for (OpOperand *input : linalgOp.getDpsInputOperands())
      if (isa<RankedTensorType>(input->get().getType()))
        inputs.push_back(input->getOperandNumber());
  } else if (op->getNumResults() == 1 &&
             OpTrait::hasElementwiseMappableTraits(op)) {
    for (OpOperand &operand : op->getOpOperands())
      inputs.push_back(operand.getOperandNumber());
  }
  if (inputs.size() < 2)
    return false;
  std::optional<SmallVector<Dep>> deps =
      resultDependence(op, inputs, ReduceKind::Sum);
  return deps && deps->size() == 1 && (*deps)[0] == Dep::Term;
}

/// Contractions summed into `v` by linear sums (see resultShare), visiting
/// at most `budget` ops (a residual stream is a long chain of sums).
static double summedContractions(Value v,
                                 llvm::SmallDenseMap<Value, double, 16> &memo,
                                 int &budget,
                                 function_ref<bool(Operation *)> linearSum,
                                 function_ref<bool(Operation *)> contraction) {
  auto it = memo.find(v);
  if (it != memo.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  double n = 0;
  if (def && budget-- > 0) {
    if (contraction(def)) {
      n = 1;
    } else if (linearSum(def)) {
      auto dps = dyn_cast<DestinationStyleOpInterface>(def);
      // A term read elsewhere too (a residual stream read by the next
      // norm) is reduced for that reader, not as part of this sum.
      for (OpOperand &operand : def->getOpOperands())
        if ((!dps || !dps.isDpsInit(&operand)) && operand.get().hasOneUse())
          n += summedContractions(operand.get(), memo, budget, linearSum,
                                  contraction);
    }
  }
  memo[v] = n;
  return n;
}

double
spmd::propagation::resultShare(Value v,
                               function_ref<bool(Operation *)> linearSum,
                               function_ref<bool(Operation *)> contraction) {
  // Up to the value the sum ends in: while the only user sums it.
  Value root = v;
  for (int depth = 0; depth < 16 && root.hasOneUse(); ++depth) {
    Operation *user = *root.user_begin();
    if (user->getNumResults() != 1 || !linearSum(user))
      break;
    root = user->getResult(0);
  }
  llvm::SmallDenseMap<Value, double, 16> memo;
  int budget = 64;
  return std::max(
      1.0, summedContractions(root, memo, budget, linearSum, contraction));
}

bool spmd::propagation::isContraction(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumReductionLoops() != 0;
}

SmallVector<AxisChoice>
spmd::propagation::decide(const ShardingRule &rule, const Mesh &mesh,
                          const CommCostParams &costParams,
                          const SlotInfo &slots, double *totalCost) {
  ArrayRef<const PartialLayout *> known = slots.known;
  ArrayRef<double> bytes = slots.bytes;
  ArrayRef<bool> pinned = slots.pinned;
  ArrayRef<unsigned> users = slots.users;
  ArrayRef<Type> slotTypes = slots.types;
  SmallVector<AxisChoice> choices;
  if (totalCost)
    *totalCost = 0;
  for (int64_t a = 0; a < mesh.rank(); ++a) {
    // Axes already splitting each factor (for reshape boundaries).
    auto splitOk = [&](int f) {
      SmallVector<int64_t> axes;
      for (auto [b, c] : llvm::enumerate(choices))
        if (c.kind == AxisChoice::Kind::Shard && c.factor == f)
          axes.push_back(b);
      axes.push_back(a);
      return rule.splitOk(f, mesh, axes);
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
    // The op's compute left on each rank after the axes decided before.
    double work = slots.work;
    for (auto [b, c] : llvm::enumerate(choices))
      if (c.kind == AxisChoice::Kind::Shard)
        work /= double(mesh.axisSizes[b]);
    double bestCost = 0, bestComm = 0;
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
        const std::optional<Placement> &knownHere = (*known[s])[a];
        bool reducedLater =
            !knownHere ||
            (slots.reduceKnownPartials && rule.isResult(s) && !pinned[s] &&
             knownHere->isPartial() && c.kind == AxisChoice::Kind::Shard);
        if (reducedLater) {
          // Look ahead: a result made partial will have to be reduced
          // somewhere downstream (unless a consumer absorbs it, which the
          // consumer's own choice will weigh again). Charge that reduction
          // now so that a partial moves on only while it stays no more
          // expensive to reduce than the operand it came from.
          // A dynamic result's size is a guess: no lookahead there.
          // Summed with other partial products first, it is reduced once
          // for all of them: this one pays its share.
          if (rule.isResult(s) && need.isPartial() && bytes[s] != 0 &&
              cast<RankedTensorType>(slotTypes[s]).hasStaticShape())
            cost += ::spmd::axisReshardCost(need, Placement::replicate(),
                                            mesh.axisSizes[a], groupBytes,
                                            costParams) /
                    (s < slots.share.size() ? slots.share[s] : 1.0);
          if (!knownHere)
            continue;
        }
        Placement have = *knownHere;
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
        // A copy another user already made may be closer (the output
        // gradient gathered for one matmul also feeds the bias gradient).
        // Only a copy that is no further from any other axis' choice than
        // the value itself (the same placement there, or R) stands in for
        // it, so that the axes' costs still add up to one reshard.
        if (s < slots.copies.size())
          for (const Layout &copy : slots.copies[s]) {
            bool standsIn = true;
            for (int64_t b = 0; b < mesh.rank() && standsIn; ++b)
              standsIn =
                  b == a || copy.placements[b].isReplicate() ||
                  ((*known[s])[b] && copy.placements[b] == *(*known[s])[b]);
            if (standsIn)
              c = std::min(c,
                           ::spmd::axisReshardCost(
                               copy.placements[a], need, mesh.axisSizes[a],
                               ::spmd::axisGroupBytes(mesh, copy, a, bytes[s]),
                               costParams));
          }
        cost += c;
      }
      // Communication first; then the compute this choice leaves on every
      // rank (a split factor divides it, replication and partial terms do
      // not), so a contraction is not computed replicated to save a
      // reduction that costs less than the work it repeats.
      double comm = cost;
      cost += c.kind == AxisChoice::Kind::Shard
                  ? work / double(mesh.axisSizes[a])
                  : work;
      if (best < 0 || cost < bestCost * (1 - 1e-9)) {
        best = i;
        bestCost = cost;
        bestComm = comm;
      }
    }
    choices.push_back(candidates[best]);
    if (totalCost)
      *totalCost += bestComm;
  }
  return choices;
}
