//===- CostModelTest.cpp - alpha-beta reshard cost ------------------------===//

#include "core/CostModel.h"
#include "core/RedistributePlanner.h"

#include <gtest/gtest.h>

using namespace spmd;

namespace {

const CommCostParams kParams{/*alpha=*/1.0, /*beta=*/0.5};

TEST(CostModel, AxisTransitions) {
  Placement r = Placement::replicate(), s0 = Placement::shard(0),
            s1 = Placement::shard(1), sum = Placement::partial(),
            max = Placement::partial(ReduceKind::Max);
  // k = 4, 400 bytes: (k-1)/k * bytes = 300, times beta 0.5 = 150.
  EXPECT_DOUBLE_EQ(axisReshardCost(r, s0, 4, 400, kParams), 0.0);
  EXPECT_DOUBLE_EQ(axisReshardCost(r, sum, 4, 400, kParams), 0.0);
  EXPECT_DOUBLE_EQ(axisReshardCost(s0, s0, 4, 400, kParams), 0.0);
  EXPECT_DOUBLE_EQ(axisReshardCost(s0, r, 4, 400, kParams), 1.0 + 150.0);
  EXPECT_DOUBLE_EQ(axisReshardCost(sum, s1, 4, 400, kParams), 1.0 + 150.0);
  EXPECT_DOUBLE_EQ(axisReshardCost(sum, r, 4, 400, kParams), 1.0 + 300.0);
  EXPECT_DOUBLE_EQ(axisReshardCost(sum, max, 4, 400, kParams), 1.0 + 300.0);
  EXPECT_DOUBLE_EQ(axisReshardCost(s0, s1, 4, 400, kParams), 1.0 + 37.5);
  EXPECT_DOUBLE_EQ(axisReshardCost(s0, sum, 4, 400, kParams), 1.0 + 150.0);
  // A mesh axis of size 1 never costs anything.
  EXPECT_DOUBLE_EQ(axisReshardCost(sum, r, 1, 400, kParams), 0.0);
}

TEST(CostModel, OrderingMatchesCollectives) {
  Placement r = Placement::replicate(), s0 = Placement::shard(0),
            s1 = Placement::shard(1), sum = Placement::partial();
  CommCostParams p;
  double bytes = 1 << 20;
  double gather = axisReshardCost(s0, r, 8, bytes, p);
  double allReduce = axisReshardCost(sum, r, 8, bytes, p);
  double reduceScatter = axisReshardCost(sum, s0, 8, bytes, p);
  double allToAll = axisReshardCost(s0, s1, 8, bytes, p);
  EXPECT_LT(allToAll, gather);
  EXPECT_DOUBLE_EQ(gather, reduceScatter);
  EXPECT_LT(reduceScatter, allReduce);
}

TEST(CostModel, WholeLayoutOnTwoAxes) {
  Mesh mesh{{"dp", "tp"}, {2, 4}};
  Layout from{{Placement::shard(0), Placement::partial()}};
  Layout to{{Placement::shard(0), Placement::replicate()}};
  // The tp group sees the dp shard: 800 / 2 = 400 bytes, all_reduce on 4.
  EXPECT_DOUBLE_EQ(axisGroupBytes(mesh, from, 1, 800), 400.0);
  EXPECT_DOUBLE_EQ(reshardCost(mesh, from, to, 800, kParams), 1.0 + 300.0);
  // Two axes changing cost the sum of both steps.
  Layout gathered = Layout::replicated(2);
  EXPECT_DOUBLE_EQ(reshardCost(mesh, from, gathered, 800, kParams),
                   (1.0 + 0.5 * 0.5 * 800 / 1) + (1.0 + 300.0));
  EXPECT_DOUBLE_EQ(reshardCost(mesh, to, to, 800, kParams), 0.0);
}

TEST(CostModel, RingFactorsAndPerAxisBandwidth) {
  EXPECT_DOUBLE_EQ(ringSendFactor(CollectiveKind::AllGather, 4), 3.0);
  EXPECT_DOUBLE_EQ(ringSendFactor(CollectiveKind::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(ringSendFactor(CollectiveKind::ReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(ringSendFactor(CollectiveKind::AllToAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(collectiveTime(CollectiveKind::AllReduce, 1, 400, 1, 1),
                   0.0);
  // A group over several axes runs at its slowest axis.
  CommCostParams p{/*alpha=*/1.0, /*beta=*/0.5, /*axisBeta=*/{0.25, 2.0}};
  EXPECT_DOUBLE_EQ(p.betaOf({0}), 0.25);
  EXPECT_DOUBLE_EQ(p.betaOf({0, 1}), 2.0);
  EXPECT_DOUBLE_EQ(p.betaOf({2}), 0.5);
  Placement s0 = Placement::shard(0), r = Placement::replicate();
  EXPECT_DOUBLE_EQ(axisReshardCost(s0, r, 4, 400, p, 1), 1.0 + 2.0 * 300.0);
}

// Propagation and the redistribute planner price a one-axis change alike:
// they share the model. (On several axes the planner may order the steps
// better than reshardCost's per-axis sum, e.g. slice before gathering.)
TEST(CostModel, PlannerAgreesWithReshardCost) {
  Mesh mesh{{"dp", "tp"}, {2, 4}};
  CommCostParams p;
  RedistributeCostModel model;
  model.comm = p;
  std::vector<int64_t> shape = {64, 32};
  double global = 64 * 32 * 4;
  Layout r = Layout::replicated(2);
  Layout s0p{{Placement::shard(0), Placement::partial()}};
  Layout s0r{{Placement::shard(0), Placement::replicate()}};
  Layout rs1{{Placement::replicate(), Placement::shard(1)}};
  Layout s1r{{Placement::shard(1), Placement::replicate()}};
  for (auto [from, to] :
       std::vector<std::pair<Layout, Layout>>{{s0p, s0r}, {rs1, r}, {s1r, r}}) {
    RedistributePlan plan = planRedistribute(mesh, shape, 4, from, to, model);
    ASSERT_TRUE(plan.ok()) << plan.error;
    ASSERT_EQ(plan.numCollectives(), 1) << plan.str(mesh);
    EXPECT_NEAR(plan.cost, reshardCost(mesh, from, to, global, p), 1e-12)
        << from.str() << " -> " << to.str();
  }
}

TEST(CostModel, RooflineWithCacheTier) {
  DeviceProfile p;
  p.flops32 = 1e9;
  p.memBandwidth = 1e9;
  // No cache tier: bytes at memory bandwidth, the slower side decides.
  EXPECT_DOUBLE_EQ(p.computeTime(2e9, 1e9, 32), 2.0);
  EXPECT_DOUBLE_EQ(p.computeTime(1e9, 3e9, 32), 3.0);
  // The first cacheBytes move at cacheBandwidth, the rest at memBandwidth:
  // continuous in the bytes, so splitting an op never costs more.
  p.cacheBytes = 1e9;
  p.cacheBandwidth = 4e9;
  EXPECT_DOUBLE_EQ(p.memoryTime(0.5e9), 0.125);
  EXPECT_DOUBLE_EQ(p.memoryTime(1e9), 0.25);
  EXPECT_DOUBLE_EQ(p.memoryTime(3e9), 2.25);
  EXPECT_DOUBLE_EQ(p.computeTime(1e9, 3e9, 32), 2.25);
  EXPECT_DOUBLE_EQ(p.computeTime(1e9, 1e9, 32), 1.0);
  // The named cpu profile has the tier, h100's streams from HBM.
  EXPECT_GT(deviceProfile("cpu")->cacheBandwidth,
            deviceProfile("cpu")->memBandwidth);
  EXPECT_EQ(deviceProfile("h100")->cacheBandwidth, 0);
}

} // namespace
