//===- PropagateChoice.cpp - spmd-propagate's choices and costs -----------===//

#include "passes/propagation/PropagateChoice.h"

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

double spmd::propagation::movedBytes(Value v, bool isResult) {
  if (!isResult && v.getDefiningOp<tensor::EmptyOp>())
    return 0;
  return globalBytes(v.getType());
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
