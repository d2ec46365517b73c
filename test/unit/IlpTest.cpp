//===- IlpTest.cpp - IlpModel on CBC
//---------------------------------------===//

#include "core/Ilp.h"

#include <gtest/gtest.h>

using namespace spmd;

namespace {

constexpr double kInf = 1e30;

// A knapsack whose LP relaxation is fractional: the integer optimum needs
// branching (max 10a + 13b + 7c, 3a + 4b + 2c <= 6: b + c, 20).
TEST(Ilp, KnapsackNeedsIntegrality) {
  IlpModel m;
  int a = m.addVar(-10, 0, 1, true);
  int b = m.addVar(-13, 0, 1, true);
  int c = m.addVar(-7, 0, 1, true);
  m.addRow({{a, 3}, {b, 4}, {c, 2}}, -kInf, 6);
  IlpModel::Result r = m.solve(10);
  ASSERT_EQ(r.status, IlpModel::Status::Optimal);
  EXPECT_NEAR(r.objective, -20, 1e-6);
  EXPECT_NEAR(r.values[a], 0, 1e-6);
  EXPECT_NEAR(r.values[b], 1, 1e-6);
  EXPECT_NEAR(r.values[c], 1, 1e-6);
}

// One-hot choices tied by an edge block (the form spmd-auto-shard builds):
// node costs favour u=0 and v=1, the edge charges every mismatch 5.
TEST(Ilp, EdgeBlockMarginals) {
  IlpModel m;
  int u0 = m.addVar(0, 0, 1, true), u1 = m.addVar(2, 0, 1, true);
  int v0 = m.addVar(3, 0, 1, true), v1 = m.addVar(0, 0, 1, true);
  m.addRow({{u0, 1}, {u1, 1}}, 1, 1);
  m.addRow({{v0, 1}, {v1, 1}}, 1, 1);
  int y = m.numVars();
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < 2; ++t)
      m.addVar(s == t ? 0 : 5, 0, 1, false);
  for (int s = 0; s < 2; ++s)
    m.addRow({{u0 + s, -1}, {y + 2 * s, 1}, {y + 2 * s + 1, 1}}, 0, 0);
  for (int t = 0; t < 2; ++t)
    m.addRow({{v0 + t, -1}, {y + t, 1}, {y + 2 + t, 1}}, 0, 0);
  IlpModel::Result r = m.solve(10);
  ASSERT_EQ(r.status, IlpModel::Status::Optimal);
  // Agreeing on 0 costs 3, on 1 costs 2, disagreeing 5 or more.
  EXPECT_NEAR(r.objective, 2, 1e-6);
  EXPECT_NEAR(r.values[u1], 1, 1e-6);
  EXPECT_NEAR(r.values[v1], 1, 1e-6);
}

// A model re-solved under a new objective (spmd-auto-shard weighting
// communication up): the rows stay, coefficients not given are 0, and the
// previous optimum is a valid start.
TEST(Ilp, SetObjectiveResolves) {
  IlpModel m;
  int a = m.addVar(1, 0, 1, true), b = m.addVar(2, 0, 1, true);
  m.addRow({{a, 1}, {b, 1}}, 1, 1);
  IlpModel::Result first = m.solve(10);
  ASSERT_EQ(first.status, IlpModel::Status::Optimal);
  EXPECT_NEAR(first.values[a], 1, 1e-6);
  EXPECT_EQ(m.objective(), (std::vector<double>{1, 2}));
  m.setObjective({3});
  EXPECT_EQ(m.objective(), (std::vector<double>{3, 0}));
  IlpModel::Result second = m.solve(10, first.values);
  ASSERT_EQ(second.status, IlpModel::Status::Optimal);
  EXPECT_NEAR(second.values[b], 1, 1e-6);
  EXPECT_NEAR(second.objective, 0, 1e-6);
}

// Terms naming a variable twice are summed: x + x <= 1 with x binary
// leaves x = 0, though the objective wants 1.
TEST(Ilp, DuplicateTermsAreSummed) {
  IlpModel m;
  int x = m.addVar(-1, 0, 1, true);
  m.addRow({{x, 1}, {x, 1}}, -kInf, 1);
  IlpModel::Result r = m.solve(10);
  ASSERT_EQ(r.status, IlpModel::Status::Optimal);
  EXPECT_NEAR(r.values[x], 0, 1e-6);
}

TEST(Ilp, Infeasible) {
  IlpModel m;
  int x = m.addVar(1, 0, 1, true), y = m.addVar(1, 0, 1, true);
  m.addRow({{x, 1}, {y, 1}}, 3, kInf);
  EXPECT_EQ(m.solve(10).status, IlpModel::Status::Infeasible);
}

} // namespace
