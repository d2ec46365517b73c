//===- RuleModels.h - Per-dialect rule registration (internal) --*- C++ -*-===//
//
// Each file registers the external models of one dialect's ops;
// registerShardingRuleExternalModels() calls them all.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RULES_RULEMODELS_H
#define SPMD_RULES_RULEMODELS_H

#include "rules/ShardingRuleOpInterface.h"

#include "mlir/IR/DialectRegistry.h"

namespace spmd {
void registerLinalgRuleModels(mlir::DialectRegistry &registry);
void registerTensorRuleModels(mlir::DialectRegistry &registry);
void registerArithRuleModels(mlir::DialectRegistry &registry);
} // namespace spmd

#endif // SPMD_RULES_RULEMODELS_H
