//===- RuleCacheTest.cpp - ShardingRuleCache shares only what is alike ----===//

#include "rules/ShardingRuleOpInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class RuleCacheTest : public ::testing::Test {
protected:
  RuleCacheTest() {
    DialectRegistry registry;
    registry.insert<arith::ArithDialect, func::FuncDialect,
                    linalg::LinalgDialect, tensor::TensorDialect>();
    spmd::registerShardingRuleExternalModels(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  /// The ops of the only function of `source`, in order.
  SmallVector<Operation *> ops(StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    SmallVector<Operation *> out;
    module->walk([&](Operation *op) {
      if (op->getParentOp() && isa<func::FuncOp>(op->getParentOp()))
        out.push_back(op);
    });
    return out;
  }
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(RuleCacheTest, AlikeOpsShareOneRuleEqualToTheUncachedOne) {
  SmallVector<Operation *> o = ops(R"mlir(
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>,
                 %e: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
      %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
      %1 = linalg.matmul ins(%0, %c : tensor<4x8xf32>, tensor<8x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
      %2 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
      return %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>
    }
  )mlir");
  ASSERT_EQ(o.size(), 4u);
  spmd::ShardingRuleCache cache;
  const spmd::ShardingRule *r0 = cache.lookup(o[0]);
  ASSERT_NE(r0, nullptr);
  EXPECT_EQ(cache.lookup(o[1]), r0);
  EXPECT_EQ(cache.signature(o[0]), cache.signature(o[1]));
  // %a as both input and init: another signature (a rule may read it).
  EXPECT_NE(cache.signature(o[2]), cache.signature(o[0]));
  std::optional<spmd::ShardingRule> fresh = spmd::getShardingRule(o[1]);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->factors.size(), r0->factors.size());
  EXPECT_EQ(fresh->slotDims, r0->slotDims);
  EXPECT_EQ(fresh->alts.size(), r0->alts.size());
  // No rule (func.return): null, every time.
  EXPECT_EQ(cache.lookup(o[3]), nullptr);
  EXPECT_EQ(cache.lookup(o[3]), nullptr);
}

TEST_F(RuleCacheTest, ConstantsRepeatsAndBodiesKeepOpsApart) {
  SmallVector<Operation *> o = ops(R"mlir(
    #id = affine_map<(i) -> (i)>
    func.func @f(%a: tensor<8xf32>, %b: tensor<8xf32>, %e: tensor<8xf32>)
        -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
            tensor<8xf32>, tensor<8xf32>) {
      %zero = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %0 = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
      %1 = linalg.fill ins(%one : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
      %2 = arith.subf %a, %b : tensor<8xf32>
      %3 = arith.subf %a, %a : tensor<8xf32>
      %4 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
          ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
        ^bb0(%x: f32, %y: f32):
          %s = arith.addf %x, %y : f32
          linalg.yield %s : f32
      } -> tensor<8xf32>
      %5 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
          ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
        ^bb0(%x: f32, %y: f32):
          %s = arith.mulf %x, %y : f32
          linalg.yield %s : f32
      } -> tensor<8xf32>
      return %0, %1, %2, %3, %4, %5 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
    }
  )mlir");
  ASSERT_EQ(o.size(), 9u);
  spmd::ShardingRuleCache cache;
  // The fill value decides the partial alternatives (0 is sum's identity).
  EXPECT_NE(cache.signature(o[2]), cache.signature(o[3]));
  EXPECT_GT(cache.lookup(o[2])->alts.size(), cache.lookup(o[3])->alts.size());
  // a - a is not linear in a alone: no sharing with a - b.
  EXPECT_NE(cache.signature(o[4]), cache.signature(o[5]));
  // linalg.generic's body is its own: never shared.
  EXPECT_EQ(cache.signature(o[6]), std::nullopt);
  EXPECT_NE(cache.lookup(o[6]), cache.lookup(o[7]));
}

} // namespace
