//===- ArithRules.cpp - Sharding rules of arith and math ops --------------===//
//
//  * arith.constant: R only (its result has no factors).
//  * elementwise arith and math ops on tensors: one parallel factor per dim
//    shared by every operand and result; partial alternatives from
//    Linearity.h (addf/subf/addi/subi {a, b}: sum|avg; mulf/muli {a} or
//    {b}: sum|avg; divf {a}: sum|avg; negf {a}: sum|avg; extf/truncf {a}:
//    any kind; maximumf... {a, b}: max; addf {a} or {b}: max|min; ...).
//
//===----------------------------------------------------------------------===//

#include "rules/RuleModels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace spmd;

namespace {
struct ConstantRuleModel
    : ShardingRuleOpInterface::ExternalModel<ConstantRuleModel,
                                             arith::ConstantOp> {
  std::optional<ShardingRule> getShardingRule(Operation *op) const {
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type)
      return std::nullopt;
    return ShardingRule::empty({}, {type.getRank()});
  }
};

template <typename OpTy>
struct ElementwiseRuleModel
    : ShardingRuleOpInterface::ExternalModel<ElementwiseRuleModel<OpTy>, OpTy> {
  std::optional<ShardingRule> getShardingRule(Operation *op) const {
    return elementwiseRule(op);
  }
};
} // namespace

/// Attaches the elementwise model to the elementwise-mappable ops of a list.
template <typename... OpTys>
static void attachElementwiseModels(MLIRContext *ctx) {
  auto attach = [&](auto tag) {
    using OpTy = typename decltype(tag)::type;
    if constexpr (OpTy::template hasTrait<OpTrait::Elementwise>() &&
                  OpTy::template hasTrait<OpTrait::Scalarizable>() &&
                  OpTy::template hasTrait<OpTrait::Vectorizable>() &&
                  OpTy::template hasTrait<OpTrait::Tensorizable>())
      OpTy::template attachInterface<ElementwiseRuleModel<OpTy>>(*ctx);
  };
  (attach(llvm::type_identity<OpTys>()), ...);
}

void spmd::registerArithRuleModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    arith::ConstantOp::attachInterface<ConstantRuleModel>(*ctx);
    attachElementwiseModels<
#define GET_OP_LIST
#include "mlir/Dialect/Arith/IR/ArithOps.cpp.inc"
        >(ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, math::MathDialect *) {
    attachElementwiseModels<
#define GET_OP_LIST
#include "mlir/Dialect/Math/IR/MathOps.cpp.inc"
        >(ctx);
  });
}
