//===- LayoutTest.cpp - layout arithmetic ---------------------------------===//

#include "core/Layout.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

using namespace spmd;

namespace {

std::vector<int64_t> chunkSizes(int64_t n, int64_t k) {
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < k; ++i)
    sizes.push_back(chunkRange(n, k, i).size);
  return sizes;
}

// Reference: torch.chunk computed on an explicit list of indices, padded
// with empty chunks up to k (torch itself returns fewer chunks).
std::vector<std::vector<int64_t>> referenceChunks(std::vector<int64_t> items,
                                                  int64_t k) {
  int64_t n = static_cast<int64_t>(items.size());
  int64_t c = (n + k - 1) / k;
  std::vector<std::vector<int64_t>> chunks(k);
  for (int64_t i = 0; i < n; ++i)
    chunks[c ? i / c : 0].push_back(items[i]);
  return chunks;
}

Mesh mesh(std::vector<int64_t> sizes) {
  Mesh m;
  for (size_t i = 0; i < sizes.size(); ++i)
    m.axisNames.push_back("a" + std::to_string(i));
  m.axisSizes = std::move(sizes);
  return m;
}

TEST(Chunk, TorchChunkExamples) {
  EXPECT_EQ(chunkSizes(5, 4), (std::vector<int64_t>{2, 2, 1, 0}));
  EXPECT_EQ(chunkSizes(12, 8), (std::vector<int64_t>{2, 2, 2, 2, 2, 2, 0, 0}));
  EXPECT_EQ(chunkSizes(13, 4), (std::vector<int64_t>{4, 4, 4, 1}));
  EXPECT_EQ(chunkSizes(3, 4), (std::vector<int64_t>{1, 1, 1, 0}));
  EXPECT_EQ(chunkSizes(0, 3), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(chunkSizes(7, 1), (std::vector<int64_t>{7}));
  EXPECT_EQ(chunkRange(13, 4, 3), (Range{12, 1}));
  EXPECT_EQ(chunkRange(5, 4, 3), (Range{5, 0}));
}

TEST(Chunk, ExhaustiveAgainstReference) {
  for (int64_t n = 0; n <= 40; ++n) {
    for (int64_t k = 1; k <= 12; ++k) {
      std::vector<int64_t> items(n);
      std::iota(items.begin(), items.end(), 0);
      auto ref = referenceChunks(items, k);
      int64_t covered = 0;
      for (int64_t i = 0; i < k; ++i) {
        Range r = chunkRange(n, k, i);
        ASSERT_EQ(r.size, static_cast<int64_t>(ref[i].size()))
            << "n=" << n << " k=" << k << " i=" << i;
        if (r.size)
          ASSERT_EQ(r.offset, ref[i].front());
        ASSERT_LE(r.size, chunkCapacity(n, k));
        covered += r.size;
      }
      ASSERT_EQ(covered, n);
    }
  }
}

TEST(Chunk, SizesNearInt64Max) {
  // (n + k - 1) / k wrapped negative: a global dim of INT64_MAX elements
  // on 4 devices became local tensors of -2305843009213693951 elements.
  constexpr int64_t kMax = INT64_MAX;
  EXPECT_EQ(chunkCapacity(kMax, 4), int64_t(1) << 61);
  EXPECT_EQ(chunkSizes(kMax, 4),
            (std::vector<int64_t>{int64_t(1) << 61, int64_t(1) << 61,
                                  int64_t(1) << 61, (int64_t(1) << 61) - 1}));
  EXPECT_EQ(chunkRange(kMax, 4, 3),
            (Range{3 * (int64_t(1) << 61), (int64_t(1) << 61) - 1}));
  // Trailing empty chunks whose start index * capacity passes int64.
  EXPECT_EQ(chunkRange(kMax - 1, kMax, kMax - 1), (Range{kMax - 1, 0}));
  EXPECT_EQ(chunkRange(kMax, 3, 2).offset + chunkRange(kMax, 3, 2).size, kMax);
}

TEST(Chunk, NestedExamples) {
  // n=5 on 2x2 as [S(0), S(0)]: 2,1,1,1 (not the flat 2,2,1,0).
  Mesh m = mesh({2, 2});
  Layout l{{Placement::shard(0), Placement::shard(0)}};
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < 4; ++d)
    sizes.push_back(localShape(m, l, {5}, m.coords(d))[0]);
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_EQ(localRanges(m, l, {5}, {1, 0})[0], (Range{3, 1}));
  EXPECT_EQ(localRanges(m, l, {5}, {1, 1})[0], (Range{4, 1}));
}

// Every combination of mesh shape (up to 3 axes of size 1..3), placement per
// axis over a rank-2 tensor, and global shape up to 7x7: the devices that
// differ only on non-sharding axes hold the same block, and the blocks of one
// representative per sharding coordinate tile the tensor exactly once, in the
// nested reference order.
TEST(Layout, ExhaustiveTiling) {
  std::vector<Placement> choices = {Placement::replicate(), Placement::shard(0),
                                    Placement::shard(1), Placement::partial()};
  for (int64_t meshRank = 1; meshRank <= 3; ++meshRank) {
    std::vector<int64_t> sizes(meshRank, 1);
    while (true) {
      Mesh m = mesh(sizes);
      int64_t numLayouts = 1;
      for (int64_t i = 0; i < meshRank; ++i)
        numLayouts *= choices.size();
      for (int64_t code = 0; code < numLayouts; ++code) {
        Layout l;
        for (int64_t i = 0, c = code; i < meshRank; ++i, c /= choices.size())
          l.placements.push_back(choices[c % choices.size()]);
        ASSERT_EQ(l.validate(m, 2), "");
        for (int64_t r = 0; r <= 7; ++r) {
          for (int64_t c = 0; c <= 7; ++c) {
            std::vector<int64_t> shape = {r, c};
            std::vector<int> hits(r * c, 0);
            auto uniform = uniformLocalShape(m, l, shape);
            auto maxShape = maxLocalShape(m, l, shape);
            for (int64_t dev = 0; dev < m.numDevices(); ++dev) {
              auto coords = m.coords(dev);
              auto ranges = localRanges(m, l, shape, coords);
              // Reference: nested torch.chunk of explicit index lists.
              for (int64_t d = 0; d < 2; ++d) {
                std::vector<int64_t> items(shape[d]);
                std::iota(items.begin(), items.end(), 0);
                for (int64_t a : l.shardAxes(d))
                  items = referenceChunks(items, m.axisSizes[a])[coords[a]];
                ASSERT_EQ(ranges[d].size, static_cast<int64_t>(items.size()));
                if (!items.empty())
                  ASSERT_EQ(ranges[d].offset, items.front());
                if (uniform[d])
                  ASSERT_EQ(*uniform[d], ranges[d].size);
                ASSERT_LE(ranges[d].size, maxShape[d]);
              }
              // Count coverage on devices whose non-sharding coords are 0.
              bool representative = true;
              for (int64_t a = 0; a < meshRank; ++a)
                if (!l.placements[a].isShard() && coords[a] != 0)
                  representative = false;
              if (!representative)
                continue;
              for (int64_t i = 0; i < ranges[0].size; ++i)
                for (int64_t j = 0; j < ranges[1].size; ++j)
                  ++hits[(ranges[0].offset + i) * c + ranges[1].offset + j];
            }
            for (int h : hits)
              ASSERT_EQ(h, 1) << "mesh " << meshRank << " layout " << l.str()
                              << " shape " << r << "x" << c;
          }
        }
      }
      int64_t i = 0;
      while (i < meshRank && ++sizes[i] > 3)
        sizes[i++] = 1;
      if (i == meshRank)
        break;
    }
  }
}

TEST(Layout, UniformAndMaxShapes) {
  Mesh m = mesh({2, 4});
  Layout l{{Placement::shard(0), Placement::shard(1)}};
  auto u = uniformLocalShape(m, l, {8, 13});
  EXPECT_EQ(u[0], std::optional<int64_t>(4));
  EXPECT_EQ(u[1], std::nullopt);
  EXPECT_EQ(maxLocalShape(m, l, {8, 13}), (std::vector<int64_t>{4, 4}));
  // 12 on 8: 2,2,2,2,2,2,0,0.
  Mesh m8 = mesh({8});
  Layout s0{{Placement::shard(0)}};
  EXPECT_EQ(uniformLocalShape(m8, s0, {12})[0], std::nullopt);
  EXPECT_EQ(localShape(m8, s0, {12}, {6})[0], 0);
  EXPECT_EQ(localShape(m8, s0, {12}, {5})[0], 2);
  EXPECT_EQ(uniformLocalShape(m8, s0, {16})[0], std::optional<int64_t>(2));
}

TEST(Mesh, CoordsAndGroups) {
  Mesh m = mesh({2, 3, 4});
  EXPECT_EQ(m.numDevices(), 24);
  for (int64_t d = 0; d < 24; ++d)
    EXPECT_EQ(m.device(m.coords(d)), d);
  EXPECT_EQ(m.coords(23), (std::vector<int64_t>{1, 2, 3}));
  // Device 13 = (1, 0, 1). Group over axis 2: (1,0,*).
  EXPECT_EQ(m.group(13, {2}), (std::vector<int64_t>{12, 13, 14, 15}));
  EXPECT_EQ(m.groupIndex(13, {2}), 1);
  // Group over axes 0 and 2, row-major in the order given.
  EXPECT_EQ(m.group(13, {0, 2}),
            (std::vector<int64_t>{0, 1, 2, 3, 12, 13, 14, 15}));
  EXPECT_EQ(m.groupIndex(13, {0, 2}), 5);
  // Listed in the other order, axis 0 varies fastest.
  EXPECT_EQ(m.group(13, {2, 0}),
            (std::vector<int64_t>{0, 12, 1, 13, 2, 14, 3, 15}));
  EXPECT_EQ(m.groupIndex(13, {2, 0}), 3);
  EXPECT_EQ(m.groupSize({0, 2}), 8);
  // Every device's group index agrees with its position in its group.
  for (int64_t d = 0; d < 24; ++d)
    for (auto axes : std::vector<std::vector<int64_t>>{
             {0}, {1}, {2}, {0, 1}, {1, 2}, {2, 1, 0}}) {
      auto g = m.group(d, axes);
      ASSERT_EQ(g[m.groupIndex(d, axes)], d);
    }
  EXPECT_EQ(m.axisIndex("a1"), std::optional<int64_t>(1));
  EXPECT_EQ(m.axisIndex("x"), std::nullopt);
}

TEST(Mesh, Validate) {
  EXPECT_EQ(mesh({2, 4}).validate(), "");
  Mesh dup{{"dp", "dp"}, {2, 2}};
  EXPECT_NE(dup.validate().find("used twice"), std::string::npos);
  Mesh zero{{"dp"}, {0}};
  EXPECT_NE(zero.validate().find("non-positive"), std::string::npos);
  Mesh none;
  EXPECT_NE(none.validate().find("no axes"), std::string::npos);
  // 2^20 devices are fine; one more axis of 2 is too many, and sizes whose
  // product wraps int64 are caught rather than enumerated.
  EXPECT_EQ(mesh({1 << 10, 1 << 10}).validate(), "");
  EXPECT_NE(mesh({1 << 10, 1 << 10, 2}).validate().find("2^20"),
            std::string::npos);
  EXPECT_NE(mesh({int64_t(1) << 40}).validate().find("1099511627776 devices"),
            std::string::npos);
  EXPECT_NE(mesh({int64_t(1) << 32, int64_t(1) << 32})
                .validate()
                .find("overflows int64"),
            std::string::npos);
}

TEST(Placement, ParseAndPrint) {
  for (const char *text :
       {"R", "S(0)", "S(12)", "P(sum)", "P(avg)", "P(max)", "P(min)"}) {
    auto p = Placement::parse(text);
    ASSERT_TRUE(p) << text;
    EXPECT_EQ(p->str(), text);
  }
  EXPECT_EQ(Placement::parse(" S( 3 ) ")->str(), "S(3)");
  for (const char *bad :
       {"", "X", "S", "S()", "S(-1)", "S(a)", "P(prod)", "P()", "R(0)", "S(1"})
    EXPECT_FALSE(Placement::parse(bad)) << bad;
  EXPECT_EQ(Placement::shard(1), Placement::shard(1));
  EXPECT_NE(Placement::shard(1), Placement::shard(0));
  EXPECT_NE(Placement::partial(ReduceKind::Sum),
            Placement::partial(ReduceKind::Max));
}

TEST(Layout, ValidateAgainstMeshAndRank) {
  Mesh m = mesh({2, 2});
  EXPECT_EQ(
      (Layout{{Placement::shard(1), Placement::replicate()}}).validate(m, 2),
      "");
  EXPECT_NE((Layout{{Placement::shard(2), Placement::replicate()}})
                .validate(m, 2)
                .find("shards dim 2 of a rank-2 tensor"),
            std::string::npos);
  EXPECT_NE((Layout{{Placement::replicate()}}).validate(m).find("2 axes"),
            std::string::npos);
  EXPECT_EQ(Layout::replicated(2).str(), "[R, R]");
  EXPECT_TRUE(Layout::replicated(3).isReplicated());
  EXPECT_TRUE(
      (Layout{{Placement::partial(), Placement::replicate()}}).hasPartial());
}

} // namespace
