//===- ShardingRuleOpInterface.td - an op's sharding rule --*- tablegen -*-===//

#ifndef SPMD_RULES_SHARDINGRULEOPINTERFACE_TD
#define SPMD_RULES_SHARDINGRULEOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let description = [{
    An op that knows how it can be sharded: its factor rule (see
    rules/ShardingRule.h). Upstream ops get it through external models
    (registerShardingRuleExternalModels); passes look rules up with
    spmd::getShardingRule(), which also covers ops without the interface.
  }];
  let cppNamespace = "::spmd";
  let methods = [
    InterfaceMethod<
      /*desc=*/[{
        The rule of this op instance; none when this instance cannot be
        sharded (it is then computed replicated).
      }],
      /*retTy=*/"std::optional<::spmd::ShardingRule>",
      /*methodName=*/"getShardingRule">,
  ];
}

#endif // SPMD_RULES_SHARDINGRULEOPINTERFACE_TD
