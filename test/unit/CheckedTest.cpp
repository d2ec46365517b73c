//===- CheckedTest.cpp - Overflow-checked size arithmetic -----------------===//

#include "core/Checked.h"

#include <gtest/gtest.h>

#include <vector>

using namespace spmd;

namespace {

constexpr int64_t kMax = INT64_MAX;

TEST(Checked, AddAndMul) {
  EXPECT_EQ(checkedAdd(2, 3), std::optional<int64_t>(5));
  EXPECT_EQ(checkedAdd(kMax, 0), std::optional<int64_t>(kMax));
  EXPECT_EQ(checkedAdd(kMax, 1), std::nullopt);
  EXPECT_EQ(checkedMul(int64_t(1) << 31, int64_t(1) << 31),
            std::optional<int64_t>(int64_t(1) << 62));
  EXPECT_EQ(checkedMul(int64_t(1) << 32, int64_t(1) << 31), std::nullopt);
}

TEST(Checked, Product) {
  EXPECT_EQ(checkedProduct(std::vector<int64_t>{}), std::optional<int64_t>(1));
  EXPECT_EQ(checkedProduct(std::vector<int64_t>{2, 3}, 4),
            std::optional<int64_t>(24));
  EXPECT_EQ(checkedProduct(std::vector<int64_t>{0, kMax}, 8),
            std::optional<int64_t>(0));
  // The fuzzer's tensor<1152921504606846976x4xf32>: 2^64 bytes, which the
  // unchecked product wrapped to 0.
  EXPECT_EQ(checkedProduct(std::vector<int64_t>{int64_t(1) << 60, 4}, 4),
            std::nullopt);
  EXPECT_EQ(checkedProduct(std::vector<int64_t>{4, -1}), std::nullopt);
}

TEST(Checked, FitsWithin) {
  EXPECT_TRUE(fitsWithin(64, 64, 128));
  EXPECT_FALSE(fitsWithin(65, 64, 128));
  EXPECT_FALSE(fitsWithin(-1, 1, 128));
  // The fuzzer's buffer at offset INT64_MAX: the sum wrapped negative and
  // passed the bound check.
  EXPECT_FALSE(fitsWithin(kMax, 64, 128));
  EXPECT_FALSE(fitsWithin(64, kMax, kMax));
}

} // namespace
