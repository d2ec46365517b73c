//===- Passes.td - sharding rule passes --------------------*- tablegen -*-===//

#ifndef SPMD_RULES_PASSES_TD
#define SPMD_RULES_PASSES_TD

include "mlir/Pass/PassBase.td"

def SPMDPrintOpRules : Pass<"spmd-print-op-rules"> {
  let summary = "emit a remark with the sharding rule of every op touching "
                "tensors (a test aid)";
  let description = [{
    For every op but terminators with a ranked tensor operand or result, emits the remark
    `sharding rule: <rule>` in the format of ShardingRule::print
    (rules/ShardingRule.h), or `no sharding rule` when getShardingRule()
    has none. Changes nothing.
  }];
}

#endif // SPMD_RULES_PASSES_TD
