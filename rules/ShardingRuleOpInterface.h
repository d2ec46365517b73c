//===- ShardingRuleOpInterface.h - an op's sharding rule --------*- C++ -*-===//
//
// The op interface giving an op's ShardingRule, the registration of the
// external models for upstream dialects (one file per dialect:
// LinalgRules.cpp, TensorRules.cpp, ArithRules.cpp) and the lookup that
// passes use.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RULES_SHARDINGRULEOPINTERFACE_H
#define SPMD_RULES_SHARDINGRULEOPINTERFACE_H

#include "rules/ShardingRule.h"

#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Allocator.h"

#include <deque>
#include <optional>
#include <vector>

#include "rules/ShardingRuleOpInterface.h.inc"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace spmd {

/// Attaches the interface to the linalg, tensor, arith and math ops that
/// have rules. Passes reading rules call it from getDependentDialects.
void registerShardingRuleExternalModels(mlir::DialectRegistry &registry);

/// The rule of `op`: the interface's when `op` implements it (none if it
/// does not fit the op's operands and results); otherwise,
/// for an elementwise-mappable op (any dialect) on ranked tensors of one
/// rank, the elementwise rule; otherwise none ("no rule": the passes compute
/// it replicated).
std::optional<ShardingRule> getShardingRule(mlir::Operation *op);

/// getShardingRule with memory. A rule reads an op's name, attributes and
/// properties, operand and result types, which operands are constants (and
/// their values) or the same value, and the bodies of ops with regions; ops
/// alike in all of these (the layers of a model) share one computed rule.
/// Ops with regions are shared only when their body follows from the rest
/// (linalg's named ops), so linalg.generic and friends are computed each.
class ShardingRuleCache {
public:
  /// `op`'s rule, or null for none; valid while the cache lives.
  const ShardingRule *lookup(mlir::Operation *op);
  /// A number shared by the ops alike in all of the above (so anything
  /// derived from them alone can be memoized per signature), or none for
  /// ops that are not shared. Memoized per op: an op must not change while
  /// the cache lives (the passes build one per analysis).
  std::optional<unsigned> signature(mlir::Operation *op);

private:
  std::optional<unsigned> computeSignature(mlir::Operation *op);

  llvm::BumpPtrAllocator keyStorage;
  llvm::DenseMap<llvm::ArrayRef<const void *>, unsigned> ids;
  llvm::DenseMap<mlir::Operation *, std::optional<unsigned>> opIds;
  /// Per signature: its rule once computed (null: none).
  std::vector<std::optional<const ShardingRule *>> shared;
  std::deque<ShardingRule> rules;
};

/// The elementwise rule: one parallel factor per dim shared by every tensor
/// operand and result, the partial alternatives from Linearity.h. None
/// unless every tensor operand and result has the result's rank.
std::optional<ShardingRule> elementwiseRule(mlir::Operation *op);

/// A rule with one fresh parallel factor per dim of `rank`, shared by every
/// ranked-tensor operand and result of `op` (which must all have `rank`).
ShardingRule identityRule(mlir::Operation *op, int64_t rank);

/// Adds to `rule` the partial alternatives of `op` from Linearity.h: every
/// non-empty subset of `candidates` (operand numbers, at most 4), plus
/// `always`, for which each result is a term; kinds sum|avg, max, min as
/// linearity allows.
void addLinearAlts(ShardingRule &rule, mlir::Operation *op,
                   llvm::ArrayRef<unsigned> candidates,
                   llvm::ArrayRef<unsigned> always);

/// Every partial kind.
llvm::SmallVector<ReduceKind> allReduceKinds();

} // namespace spmd

#endif // SPMD_RULES_SHARDINGRULEOPINTERFACE_H
