//===- RedistributePlannerTest.cpp - redistribute planner -----------------===//
//
// Besides collective counts, an exhaustive semantic check: a small simulator
// runs every planned step on every device with the documented semantics of
// the spmd collectives, and after every step compares what each device holds
// with what core/Layout.h says that step's layout holds. A dropped,
// duplicated or misplaced element changes a value and fails the test.
//
//===----------------------------------------------------------------------===//

#include "core/RedistributePlanner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

using namespace spmd;

namespace {

using Kind = RedistributeStep::Kind;

Mesh mesh(std::vector<int64_t> sizes) {
  Mesh m;
  for (size_t i = 0; i < sizes.size(); ++i)
    m.axisNames.push_back("a" + std::to_string(i));
  m.axisSizes = std::move(sizes);
  return m;
}

Placement R() { return Placement::replicate(); }
Placement S(int64_t d) { return Placement::shard(d); }
Placement P(ReduceKind k = ReduceKind::Sum) { return Placement::partial(k); }
Layout L(std::vector<Placement> p) { return Layout{std::move(p)}; }

//===----------------------------------------------------------------------===//
// Collective counts
//===----------------------------------------------------------------------===//

RedistributePlan plan(const Mesh &m, std::vector<int64_t> shape,
                      const Layout &from, const Layout &to) {
  RedistributePlan p = planRedistribute(m, shape, 4, from, to);
  EXPECT_TRUE(p.ok()) << p.error;
  return p;
}

TEST(Planner, DTensor2x2Cases) {
  Mesh m = mesh({2, 2});
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{8, 8, 8}, {5, 7, 3}, {6, 6, 6}}) {
    RedistributePlan a = plan(m, shape, L({S(0), S(1)}), L({S(0), S(0)}));
    EXPECT_EQ(a.numCollectives(), 1) << a.str(m);
    EXPECT_EQ(a.steps.at(0).kind, Kind::AllToAll) << a.str(m);
    RedistributePlan b = plan(m, shape, L({S(0), S(0)}), L({S(1), S(1)}));
    EXPECT_LE(b.numCollectives(), 2) << b.str(m);
    RedistributePlan c = plan(m, shape, L({S(1), S(1)}), L({S(1), S(2)}));
    EXPECT_EQ(c.numCollectives(), 1) << c.str(m);
    EXPECT_EQ(c.steps.at(0).kind, Kind::AllToAll) << c.str(m);
  }
  // When the flat split of 4 equals the nested 2x2 split, one all_to_all
  // over both axes does (S0,S0) -> (S1,S1).
  RedistributePlan even = plan(m, {8, 8}, L({S(0), S(0)}), L({S(1), S(1)}));
  ASSERT_EQ(even.steps.size(), 1u) << even.str(m);
  EXPECT_EQ(even.steps[0].axes, (std::vector<int64_t>{0, 1}));
}

TEST(Planner, OneDimTransitions) {
  Mesh m = mesh({4});
  std::vector<int64_t> shape = {13, 6};
  Layout r = L({R()}), s0 = L({S(0)}), s1 = L({S(1)}), p = L({P()});
  struct Case {
    Layout from, to;
    std::vector<Kind> kinds;
  };
  std::vector<Case> cases = {
      {r, s0, {Kind::LocalShard}},
      {r, s1, {Kind::LocalShard}},
      {r, p, {Kind::LocalPartial}},
      {s0, r, {Kind::AllGather}},
      {s1, r, {Kind::AllGather}},
      {p, r, {Kind::AllReduce}},
      {p, s0, {Kind::ReduceScatter}},
      {p, s1, {Kind::ReduceScatter}},
      {s0, s1, {Kind::AllToAll}},
      {s1, s0, {Kind::AllToAll}},
      {r, r, {}},
  };
  for (const Case &c : cases) {
    RedistributePlan got = plan(m, shape, c.from, c.to);
    std::vector<Kind> kinds;
    for (const RedistributeStep &s : got.steps)
      kinds.push_back(s.kind);
    EXPECT_EQ(kinds, c.kinds)
        << c.from.str() << " -> " << c.to.str() << ": " << got.str(m);
  }
  // S -> P has no direct step: gather, then keep it on one rank.
  RedistributePlan sp = plan(m, shape, s0, p);
  EXPECT_EQ(sp.numCollectives(), 1) << sp.str(m);
}

TEST(Planner, PartialAndShardOnDifferentAxes) {
  Mesh m = mesh({2, 4});
  // Reduce over dp only, keep the tp sharding.
  RedistributePlan a = plan(m, {16, 16}, L({P(), S(1)}), L({R(), S(1)}));
  ASSERT_EQ(a.steps.size(), 1u) << a.str(m);
  EXPECT_EQ(a.steps[0].kind, Kind::AllReduce);
  EXPECT_EQ(a.steps[0].axes, (std::vector<int64_t>{0}));
  // Both partial: one all_reduce over both axes.
  RedistributePlan b = plan(m, {16, 16}, L({P(), P()}), L({R(), R()}));
  ASSERT_EQ(b.steps.size(), 1u) << b.str(m);
  EXPECT_EQ(b.steps[0].axes, (std::vector<int64_t>{0, 1}));
}

TEST(Planner, NestingIsRespected) {
  Mesh m = mesh({2, 2});
  // Only the inner axis may be gathered alone: [S0,S0] -> [S0,R] gathers
  // axis 1; [S0,S0] -> [R,S0] cannot just gather axis 0.
  RedistributePlan a = plan(m, {8, 4}, L({S(0), S(0)}), L({S(0), R()}));
  ASSERT_EQ(a.steps.size(), 1u) << a.str(m);
  EXPECT_EQ(a.steps[0].axes, (std::vector<int64_t>{1}));
  RedistributePlan b = plan(m, {8, 4}, L({S(0), S(0)}), L({R(), S(0)}));
  for (const RedistributeStep &s : b.steps)
    if (s.kind == Kind::AllGather && s.axes == std::vector<int64_t>{0})
      EXPECT_TRUE(false) << "gathers an outer axis alone: " << b.str(m);
}

TEST(Planner, RejectsInvalidInput) {
  Mesh m = mesh({2, 2});
  EXPECT_FALSE(planRedistribute(m, {4}, 4, L({S(1), R()}), L({R(), R()})).ok());
  EXPECT_FALSE(planRedistribute(m, {4}, 4, L({R()}), L({R(), R()})).ok());
  EXPECT_FALSE(
      planRedistribute(m, {4}, 4, L({P(ReduceKind::Max), P()}), L({R(), R()}))
          .ok());
  EXPECT_TRUE(
      planRedistribute(m, {4}, 4, L({P(ReduceKind::Avg), P()}), L({R(), R()}))
          .ok());
}

/// The number of collectives torch DTensor's redistribute uses (its
/// _gen_transform_infos: replicate mesh dims whose nested sharding does not
/// line up, innermost first, then fix the rest outermost first), or -1
/// where DTensor does not support a step (S -> P, P -> P of another kind).
int64_t dtensorCollectives(const Layout &src, const Layout &dst) {
  std::vector<Placement> cur = src.placements, tgt = dst.placements;
  int64_t n = static_cast<int64_t>(cur.size()), count = 0;
  bool supported = true;
  auto step = [&](int64_t dim, Placement target) {
    const Placement &from = cur[dim];
    if (from == target)
      return;
    if (target.isPartial() && !from.isReplicate())
      supported = false;
    if (!from.isReplicate())
      ++count;
    cur[dim] = target;
  };
  for (int64_t m = n - 1; m >= 0; --m) {
    Placement target = tgt[m];
    if (cur[m].isShard()) {
      std::vector<int64_t> curOrder, tgtOrder;
      for (int64_t i = 0; i < m; ++i) {
        if (cur[i].isShard(cur[m].dim))
          curOrder.push_back(i);
        if (tgt[i].isShard(cur[m].dim))
          tgtOrder.push_back(i);
      }
      if (curOrder != tgtOrder)
        target = R();
    }
    step(m, target);
  }
  for (int64_t m = 0; m < n; ++m)
    step(m, tgt[m]);
  return supported ? count : -1;
}

TEST(Planner, NoMoreCollectivesThanDTensor) {
  int64_t compared = 0;
  for (std::vector<int64_t> sizes :
       {std::vector<int64_t>{2, 2}, {2, 4}, {2, 2, 2}}) {
    Mesh m = mesh(sizes);
    std::vector<Placement> options = {R(), S(0), S(1), S(2), P()};
    std::vector<Layout> layouts;
    std::function<void(Layout)> rec = [&](Layout l) {
      if (static_cast<int64_t>(l.placements.size()) == m.rank()) {
        layouts.push_back(l);
        return;
      }
      for (const Placement &p : options) {
        Layout next = l;
        next.placements.push_back(p);
        rec(next);
      }
    };
    rec(Layout{});
    std::vector<std::vector<int64_t>> shapes = {{8, 8, 8}, {5, 7, 3}};
    if (m.rank() == 3)
      shapes.pop_back(); // 125^2 pairs: one shape is enough
    for (const std::vector<int64_t> &shape : shapes)
      for (const Layout &from : layouts)
        for (const Layout &to : layouts) {
          int64_t reference = dtensorCollectives(from, to);
          if (reference < 0)
            continue;
          RedistributePlan p = planRedistribute(m, shape, 4, from, to);
          ASSERT_TRUE(p.ok()) << p.error;
          ++compared;
          EXPECT_LE(p.numCollectives(), reference)
              << from.str() << " -> " << to.str() << ": " << p.str(m);
        }
  }
  EXPECT_GT(compared, 10000);
}

//===----------------------------------------------------------------------===//
// Reference simulator
//===----------------------------------------------------------------------===//

/// A dense N-D block, row-major.
struct Block {
  std::vector<int64_t> shape;
  std::vector<double> data;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
};

int64_t product(const std::vector<int64_t> &v, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i)
    n *= v[i];
  return n;
}

/// Elements [offset, offset + size) of `b` along `dim`.
Block slice(const Block &b, int64_t dim, Range r) {
  Block out;
  out.shape = b.shape;
  out.shape[dim] = r.size;
  int64_t outer = product(b.shape, 0, dim);
  int64_t inner = product(b.shape, dim + 1, b.shape.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < r.size; ++i)
      for (int64_t j = 0; j < inner; ++j)
        out.data.push_back(
            b.data[(o * b.shape[dim] + r.offset + i) * inner + j]);
  return out;
}

Block concat(const std::vector<Block> &parts, int64_t dim) {
  Block out;
  out.shape = parts.at(0).shape;
  out.shape[dim] = 0;
  for (const Block &p : parts) {
    for (size_t d = 0; d < p.shape.size(); ++d)
      if (static_cast<int64_t>(d) != dim)
        EXPECT_EQ(p.shape[d], out.shape[d]) << "concat of mismatched blocks";
    out.shape[dim] += p.shape[dim];
  }
  int64_t outer = product(out.shape, 0, dim);
  int64_t inner = product(out.shape, dim + 1, out.shape.size());
  for (int64_t o = 0; o < outer; ++o)
    for (const Block &p : parts)
      for (int64_t i = 0; i < p.shape[dim] * inner; ++i)
        out.data.push_back(p.data[o * p.shape[dim] * inner + i]);
  return out;
}

Block reduce(const std::vector<Block> &parts, ReduceKind kind) {
  Block out = parts.at(0);
  for (size_t m = 1; m < parts.size(); ++m) {
    EXPECT_EQ(parts[m].shape, out.shape) << "reduction of mismatched blocks";
    if (parts[m].shape != out.shape)
      return out;
    for (size_t i = 0; i < out.data.size(); ++i) {
      double v = parts[m].data[i];
      switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::Avg:
        out.data[i] += v;
        break;
      case ReduceKind::Max:
        out.data[i] = std::max(out.data[i], v);
        break;
      case ReduceKind::Min:
        out.data[i] = std::min(out.data[i], v);
        break;
      }
    }
  }
  if (kind == ReduceKind::Avg)
    for (double &v : out.data)
      v /= static_cast<double>(parts.size());
  return out;
}

/// The global tensor: element e (row-major) holds 1 + e.
Block globalTensor(const std::vector<int64_t> &shape) {
  Block g;
  g.shape = shape;
  for (int64_t e = 0; e < g.numElements(); ++e)
    g.data.push_back(1.0 + static_cast<double>(e));
  return g;
}

/// The part of `g` a device holds under `layout`, partial axes ignored.
Block ownedBlock(const Mesh &m, const Layout &layout, const Block &g,
                 int64_t device) {
  Block b = g;
  std::vector<Range> ranges = localRanges(m, layout, g.shape, m.coords(device));
  for (size_t d = 0; d < ranges.size(); ++d)
    b = slice(b, static_cast<int64_t>(d), ranges[d]);
  return b;
}

std::vector<int64_t> partialAxes(const Layout &layout) {
  std::vector<int64_t> axes;
  for (size_t a = 0; a < layout.placements.size(); ++a)
    if (layout.placements[a].isPartial())
      axes.push_back(static_cast<int64_t>(a));
  return axes;
}

/// Every device's local block of `g` in `layout`, partial terms chosen so
/// that they are not just copies (the reduction still gives `g` exactly).
std::vector<Block> distribute(const Mesh &m, const Layout &layout,
                              const Block &g) {
  std::vector<int64_t> paxes = partialAxes(layout);
  int64_t n = m.groupSize(paxes);
  double avgDivisor = 1;
  for (int64_t a : paxes)
    if (layout.placements[a].reduce == ReduceKind::Avg)
      avgDivisor *= static_cast<double>(m.axisSizes[a]);
  ReduceKind kind =
      paxes.empty() ? ReduceKind::Sum : layout.placements[paxes[0]].reduce;
  std::vector<Block> blocks;
  for (int64_t dev = 0; dev < m.numDevices(); ++dev) {
    Block b = ownedBlock(m, layout, g, dev);
    if (!paxes.empty()) {
      int64_t gi = m.groupIndex(dev, paxes);
      for (size_t e = 0; e < b.data.size(); ++e) {
        int64_t v = static_cast<int64_t>(b.data[e]);
        auto noise = [&](int64_t i) {
          return double((v * 7 + i * 13) % 11 - 5);
        };
        if (kind == ReduceKind::Max) {
          b.data[e] = gi == v % n ? b.data[e] : b.data[e] - 1 - (v + gi) % 3;
        } else if (kind == ReduceKind::Min) {
          b.data[e] = gi == v % n ? b.data[e] : b.data[e] + 1 + (v + gi) % 3;
        } else if (gi == 0) {
          double rest = 0;
          for (int64_t i = 1; i < n; ++i)
            rest += noise(i);
          b.data[e] = b.data[e] * avgDivisor - rest;
        } else {
          b.data[e] = noise(gi);
        }
      }
    }
    blocks.push_back(std::move(b));
  }
  return blocks;
}

/// Executes one step on all devices with the semantics documented in
/// dialects/spmd/SPMDOps.td.
std::vector<Block> execute(const Mesh &m, const RedistributeStep &step,
                           const std::vector<Block> &in) {
  std::vector<Block> out;
  int64_t k = m.groupSize(step.axes);
  for (int64_t dev = 0; dev < m.numDevices(); ++dev) {
    std::vector<int64_t> group = m.group(dev, step.axes);
    int64_t me = m.groupIndex(dev, step.axes);
    EXPECT_EQ(group.at(me), dev);
    std::vector<Block> members;
    for (int64_t g : group)
      members.push_back(in[g]);
    const Block &mine = in[dev];
    switch (step.kind) {
    case Kind::AllGather:
      out.push_back(concat(members, step.dim));
      break;
    case Kind::AllReduce:
      out.push_back(reduce(members, step.reduce));
      break;
    case Kind::ReduceScatter: {
      Block r = reduce(members, step.reduce);
      out.push_back(slice(r, step.dim, chunkRange(r.shape[step.dim], k, me)));
      break;
    }
    case Kind::AllToAll: {
      std::vector<Block> pieces;
      for (const Block &b : members)
        pieces.push_back(
            slice(b, step.splitDim, chunkRange(b.shape[step.splitDim], k, me)));
      out.push_back(concat(pieces, step.concatDim));
      break;
    }
    case Kind::LocalShard:
      out.push_back(
          slice(mine, step.dim, chunkRange(mine.shape[step.dim], k, me)));
      break;
    case Kind::LocalPartial: {
      Block b = mine;
      if (step.reduce == ReduceKind::Sum && me != 0)
        std::fill(b.data.begin(), b.data.end(), 0.0);
      out.push_back(std::move(b));
      break;
    }
    }
  }
  return out;
}

/// Checks that `blocks` hold `g` in `layout`: exact shapes, and the values
/// themselves or (for partial layouts) the reduction over each partial
/// group.
::testing::AssertionResult holds(const Mesh &m, const Layout &layout,
                                 const Block &g,
                                 const std::vector<Block> &blocks) {
  std::vector<int64_t> paxes = partialAxes(layout);
  for (int64_t dev = 0; dev < m.numDevices(); ++dev) {
    Block want = ownedBlock(m, layout, g, dev);
    if (blocks[dev].shape != want.shape)
      return ::testing::AssertionFailure()
             << "device " << dev << " has the wrong local shape";
    Block got = blocks[dev];
    if (!paxes.empty()) {
      // Reduce in two stages: max/min never mix with others, and sum/avg
      // mixtures are linear: sum everything, divide by the avg axes' sizes.
      std::vector<Block> members;
      for (int64_t member : m.group(dev, paxes))
        members.push_back(blocks[member]);
      ReduceKind kind = layout.placements[paxes[0]].reduce;
      bool linear = kind == ReduceKind::Sum || kind == ReduceKind::Avg;
      got = reduce(members, linear ? ReduceKind::Sum : kind);
      if (linear)
        for (int64_t a : paxes)
          if (layout.placements[a].reduce == ReduceKind::Avg)
            for (double &v : got.data)
              v /= static_cast<double>(m.axisSizes[a]);
    }
    if (got.data != want.data)
      return ::testing::AssertionFailure()
             << "device " << dev << " holds the wrong values";
  }
  return ::testing::AssertionSuccess();
}

/// Every layout of a rank-`rank` tensor on `m` with the given partial kinds
/// whose value is well defined.
std::vector<Layout> allLayouts(const Mesh &m, int64_t rank,
                               const std::vector<ReduceKind> &kinds) {
  std::vector<Placement> options = {R()};
  for (int64_t d = 0; d < rank; ++d)
    options.push_back(S(d));
  for (ReduceKind k : kinds)
    options.push_back(P(k));
  std::vector<Layout> layouts;
  std::function<void(Layout)> rec = [&](Layout l) {
    if (static_cast<int64_t>(l.placements.size()) == m.rank()) {
      if (partialKindsCommute(l))
        layouts.push_back(l);
      return;
    }
    for (const Placement &p : options) {
      Layout next = l;
      next.placements.push_back(p);
      rec(next);
    }
  };
  rec(Layout{});
  return layouts;
}

struct Stats {
  int64_t plans = 0;
  int64_t multiAxisSteps = 0;
};

void checkAllPairs(const Mesh &m, const std::vector<int64_t> &shape,
                   const std::vector<ReduceKind> &kinds, Stats &stats,
                   const RedistributeCostModel &model = {}) {
  Block g = globalTensor(shape);
  std::vector<Layout> layouts =
      allLayouts(m, static_cast<int64_t>(shape.size()), kinds);
  for (const Layout &from : layouts) {
    std::vector<Block> start = distribute(m, from, g);
    ASSERT_TRUE(holds(m, from, g, start)) << "simulator setup " << from.str();
    for (const Layout &to : layouts) {
      RedistributePlan p = planRedistribute(m, shape, 4, from, to, model);
      ASSERT_TRUE(p.ok()) << p.error;
      ++stats.plans;
      std::string where = "mesh " + std::to_string(m.numDevices()) + " shape " +
                          std::to_string(shape[0]) + ": " + from.str() +
                          " -> " + to.str() + ": " + p.str(m);
      std::vector<Block> state = start;
      Layout current = from;
      for (const RedistributeStep &step : p.steps) {
        state = execute(m, step, state);
        ASSERT_TRUE(holds(m, step.after, g, state))
            << where << " (after " << step.str(m) << ")";
        current = step.after;
        stats.multiAxisSteps += step.axes.size() > 1;
      }
      ASSERT_EQ(current, to) << where;
      // A plan never does worse than two collectives per mesh axis
      // (reduce or gather everything, then one step per axis).
      EXPECT_LE(p.numCollectives(), 2 * m.rank()) << where;
    }
  }
}

const std::vector<std::vector<int64_t>> kShapes2D = {
    {5, 3}, {3, 5}, {4, 4}, {1, 7}, {0, 3}, {6, 2}, {8, 4}};

TEST(PlannerSemantics, OneDimMeshes) {
  Stats stats;
  for (int64_t size : {1, 2, 3, 4})
    for (const std::vector<int64_t> &shape : kShapes2D)
      checkAllPairs(
          mesh({size}), shape,
          {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Avg, ReduceKind::Min},
          stats);
  for (int64_t n : {0, 1, 5, 13})
    checkAllPairs(mesh({4}), {n}, {ReduceKind::Sum}, stats);
  EXPECT_GT(stats.plans, 1000);
}

TEST(PlannerSemantics, TwoByTwoMesh) {
  Stats stats;
  for (const std::vector<int64_t> &shape : kShapes2D)
    checkAllPairs(mesh({2, 2}), shape,
                  {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Avg}, stats);
  for (int64_t n : {5, 7, 8})
    checkAllPairs(mesh({2, 2}), {n}, {ReduceKind::Sum}, stats);
  // The multi-axis collectives were exercised, not just per-axis ones.
  EXPECT_GT(stats.multiAxisSteps, 100);
}

// With a search budget of one layout every plan goes through the replicated
// layout; those plans must be right too.
TEST(PlannerSemantics, FallbackThroughReplicated) {
  Stats stats;
  RedistributeCostModel model;
  model.maxStates = 1;
  for (const std::vector<int64_t> &shape : kShapes2D)
    checkAllPairs(mesh({2, 2}), shape, {ReduceKind::Sum, ReduceKind::Max},
                  stats, model);
  checkAllPairs(mesh({2, 2, 2}), {5, 8}, {ReduceKind::Sum}, stats, model);
  EXPECT_GT(stats.plans, 1000);
}

TEST(PlannerSemantics, OtherMeshes) {
  Stats stats;
  for (const std::vector<int64_t> &shape :
       std::vector<std::vector<int64_t>>{{5, 3}, {6, 6}})
    checkAllPairs(mesh({2, 3}), shape, {ReduceKind::Sum}, stats);
  checkAllPairs(mesh({2, 2, 2}), {5, 8}, {ReduceKind::Sum}, stats);
  checkAllPairs(mesh({2, 2, 2}), {8, 3, 2}, {}, stats);
}

} // namespace
