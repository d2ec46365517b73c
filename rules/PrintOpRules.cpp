//===- PrintOpRules.cpp - spmd-print-op-rules -----------------------------===//

#include "rules/Passes.h"
#include "rules/ShardingRuleOpInterface.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDPRINTOPRULES
#include "rules/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {
struct SPMDPrintOpRulesPass
    : public spmd::impl::SPMDPrintOpRulesBase<SPMDPrintOpRulesPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    spmd::registerShardingRuleExternalModels(registry);
  }

  void runOnOperation() override {
    auto isTensor = [](Value v) { return isa<RankedTensorType>(v.getType()); };
    getOperation()->walk([&](Operation *op) {
      // Terminators (func.return) pass values on; they compute nothing.
      if (op->hasTrait<OpTrait::IsTerminator>())
        return;
      if (!llvm::any_of(op->getOperands(), isTensor) &&
          !llvm::any_of(op->getResults(), isTensor))
        return;
      std::optional<spmd::ShardingRule> rule = spmd::getShardingRule(op);
      if (!rule) {
        op->emitRemark() << "no sharding rule";
        return;
      }
      std::string text;
      llvm::raw_string_ostream os(text);
      rule->print(os);
      op->emitRemark() << "sharding rule: " << text;
    });
  }
};
} // namespace
