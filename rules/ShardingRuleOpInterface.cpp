//===- ShardingRuleOpInterface.cpp - rule lookup and shared builders ------===//

#include "rules/Linearity.h"
#include "rules/RuleModels.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace spmd;

#include "rules/ShardingRuleOpInterface.cpp.inc"

SmallVector<ReduceKind> spmd::allReduceKinds() {
  return {ReduceKind::Sum, ReduceKind::Avg, ReduceKind::Max, ReduceKind::Min};
}

ShardingRule spmd::identityRule(Operation *op, int64_t rank) {
  ShardingRule rule;
  rule.numOperands = op->getNumOperands();
  SmallVector<int> dims = llvm::to_vector(llvm::seq<int>(0, rank));
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (type && rule.factors.empty())
      for (int64_t size : type.getShape())
        rule.addFactor(
            {Factor::Kind::Parallel, ShapedType::isDynamic(size) ? -1 : size});
    rule.slotDims.push_back(type ? std::optional(dims) : std::nullopt);
  }
  rule.factors.resize(rank);
  rule.initOf.assign(rule.numOperands, -1);
  rule.resultCombiner.assign(op->getNumResults(), std::nullopt);
  return rule;
}

void spmd::addLinearAlts(ShardingRule &rule, Operation *op,
                         ArrayRef<unsigned> candidates,
                         ArrayRef<unsigned> always) {
  // Subsets are enumerated: keep it small.
  if (candidates.empty() || candidates.size() > 4)
    return;
  for (unsigned mask = 1; mask < (1u << candidates.size()); ++mask) {
    PartialAlt alt;
    for (auto [i, c] : llvm::enumerate(candidates))
      if (mask & (1u << i))
        alt.operands.push_back(c);
    llvm::append_range(alt.operands, always);
    auto terms = [&](ReduceKind kind) {
      std::optional<SmallVector<Dep>> deps =
          resultDependence(op, alt.operands, kind);
      return deps && llvm::all_of(*deps, [](Dep d) { return d == Dep::Term; });
    };
    if (terms(ReduceKind::Sum))
      alt.kinds = {ReduceKind::Sum, ReduceKind::Avg};
    for (ReduceKind kind : {ReduceKind::Max, ReduceKind::Min})
      if (terms(kind))
        alt.kinds.push_back(kind);
    if (!alt.kinds.empty())
      rule.alts.push_back(std::move(alt));
  }
}

std::optional<ShardingRule> spmd::elementwiseRule(Operation *op) {
  if (op->getNumResults() == 0)
    return std::nullopt;
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!result)
    return std::nullopt;
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        t && t.getRank() != result.getRank())
      return std::nullopt;
  ShardingRule rule = identityRule(op, result.getRank());
  SmallVector<unsigned> candidates;
  for (OpOperand &o : op->getOpOperands())
    if (isa<RankedTensorType>(o.get().getType()))
      candidates.push_back(o.getOperandNumber());
  addLinearAlts(rule, op, candidates, {});
  return rule;
}

/// Does `rule` describe `op`'s slots (a dim list of the right rank for
/// every ranked tensor, factors and alternatives in range)?
static bool fits(const ShardingRule &rule, Operation *op) {
  if (rule.numOperands != op->getNumOperands() ||
      rule.numSlots() != op->getNumOperands() + op->getNumResults() ||
      rule.initOf.size() != op->getNumOperands() ||
      rule.resultCombiner.size() != op->getNumResults())
    return false;
  for (auto [s, v] : llvm::enumerate(
           llvm::concat<Value>(op->getOperands(), op->getResults()))) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    const auto &dims = rule.slotDims[s];
    if (bool(type) != dims.has_value() ||
        (type && int64_t(dims->size()) != type.getRank()) ||
        (dims && llvm::any_of(*dims, [&](int f) {
           return f >= int(rule.factors.size());
         })))
      return false;
  }
  return llvm::all_of(rule.alts, [&](const PartialAlt &alt) {
    return llvm::all_of(alt.operands,
                        [&](unsigned o) { return o < rule.numOperands; });
  });
}

std::optional<ShardingRule> spmd::getShardingRule(Operation *op) {
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op)) {
    std::optional<ShardingRule> rule = iface.getShardingRule();
    // A rule that does not fit its op is a bug in its model; treating the
    // op as having no rule keeps the passes safe.
    if (rule && !fits(*rule, op))
      return std::nullopt;
    return rule;
  }
  if (op->getNumRegions() == 0 && OpTrait::hasElementwiseMappableTraits(op))
    return elementwiseRule(op);
  return std::nullopt;
}

void spmd::registerShardingRuleExternalModels(DialectRegistry &registry) {
  registerLinalgRuleModels(registry);
  registerTensorRuleModels(registry);
  registerArithRuleModels(registry);
}
