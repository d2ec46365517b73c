//===- ShardingRuleOpInterface.cpp - rule lookup and shared builders ------===//

#include "rules/Linearity.h"
#include "rules/RuleModels.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

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

std::optional<unsigned> ShardingRuleCache::signature(Operation *op) {
  auto [opIt, inserted] = opIds.try_emplace(op);
  if (!inserted)
    return opIt->second;
  std::optional<unsigned> id = computeSignature(op);
  // (try_emplace above is the only insertion: `opIt` is still valid.)
  opIt->second = id;
  return id;
}

std::optional<unsigned> ShardingRuleCache::computeSignature(Operation *op) {
  // (Many operands: rare, and the key's scan for repeats is quadratic.)
  if (op->getNumOperands() > 64 ||
      (op->getNumRegions() != 0 &&
       (!isa<linalg::LinalgOp>(op) ||
        isa<linalg::GenericOp, linalg::MapOp, linalg::ReduceOp>(op))))
    return std::nullopt;
  // The key: name, properties, discardable attributes (all uniqued), then
  // per operand its type, its constant value or null, and the position of
  // its first occurrence; per result its type.
  SmallVector<const void *, 24> key;
  key.push_back(op->getName().getAsOpaquePointer());
  key.push_back(op->getPropertiesAsAttribute().getAsOpaquePointer());
  key.push_back(op->getRawDictionaryAttrs().getAsOpaquePointer());
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    key.push_back(v.getType().getAsOpaquePointer());
    Attribute constant;
    if (Operation *def = v.getDefiningOp();
        def && def->hasTrait<OpTrait::ConstantLike>())
      matchPattern(v, m_Constant(&constant));
    key.push_back(constant.getAsOpaquePointer());
    unsigned first = i;
    for (unsigned j = 0; j < i; ++j)
      if (op->getOperand(j) == v) {
        first = j;
        break;
      }
    key.push_back(reinterpret_cast<const void *>(uintptr_t(first)));
  }
  for (Type t : op->getResultTypes())
    key.push_back(t.getAsOpaquePointer());
  auto it = ids.find(ArrayRef<const void *>(key));
  if (it != ids.end())
    return it->second;
  auto *stored = keyStorage.Allocate<const void *>(key.size());
  llvm::copy(key, stored);
  unsigned id = shared.size();
  ids[ArrayRef<const void *>(stored, key.size())] = id;
  shared.emplace_back();
  return id;
}

const ShardingRule *ShardingRuleCache::lookup(Operation *op) {
  auto compute = [&]() -> const ShardingRule * {
    std::optional<ShardingRule> rule = getShardingRule(op);
    if (!rule)
      return nullptr;
    rules.push_back(std::move(*rule));
    return &rules.back();
  };
  std::optional<unsigned> id = signature(op);
  if (!id)
    return compute();
  if (!shared[*id])
    shared[*id] = compute();
  return *shared[*id];
}
