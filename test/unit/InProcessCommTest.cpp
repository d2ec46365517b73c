//===- InProcessCommTest.cpp - in-process communicator --------------------===//

#include "runtime/InProcessComm.h"
#include "CollectiveCases.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

using namespace spmd;
using namespace spmd::testcases;

namespace {

Mesh makeMesh(const std::vector<int64_t> &sizes) {
  Mesh m;
  const char *names[] = {"x", "y", "z"};
  for (size_t i = 0; i < sizes.size(); ++i) {
    m.axisNames.push_back(names[i]);
    m.axisSizes.push_back(sizes[i]);
  }
  return m;
}

std::vector<Axes> axesSetsFor(const Mesh &mesh) {
  if (mesh.rank() == 1)
    return {{0}};
  if (mesh.rank() == 2)
    return {{0}, {1}, {0, 1}, {1, 0}};
  return {{0}, {2}, {0, 2}, {2, 1, 0}};
}

std::string meshName(const std::vector<int64_t> &sizes) {
  std::string s;
  for (int64_t v : sizes)
    s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

/// Collects errors from rank threads.
struct Errors {
  std::mutex mu;
  std::vector<std::string> list;
  void add(const std::string &e) {
    if (e.empty())
      return;
    std::lock_guard<std::mutex> lock(mu);
    list.push_back(e);
  }
  std::string summary() {
    std::string s;
    for (size_t i = 0; i < list.size() && i < 8; ++i)
      s += list[i] + "\n";
    return s;
  }
};

using CaseParam = std::tuple<std::vector<int64_t>, CollectiveKind>;

class Collectives : public ::testing::TestWithParam<CaseParam> {};

TEST_P(Collectives, MatchSerialReference) {
  auto [sizes, kind] = GetParam();
  Mesh mesh = makeMesh(sizes);
  InProcessWorld world(mesh, {/*timeoutSeconds=*/20.0});
  std::vector<Axes> axesSets = axesSetsFor(mesh);
  Errors errors;
  size_t numCases = 0;
  world.run([&](InProcessComm &comm) {
    uint64_t seed = 1;
    for (const Axes &axes : axesSets) {
      std::vector<Case> cases = casesFor(kind, seed += 10000);
      if (comm.device() == 0)
        numCases += cases.size();
      for (const Case &c : cases) {
        std::string e = runCase(comm, axes, c);
        if (!e.empty())
          e += " (axes " + describeGroup(mesh, axes, comm.device()) + ")";
        errors.add(e);
      }
    }
  });
  EXPECT_GT(numCases, 10u);
  EXPECT_TRUE(errors.list.empty())
      << errors.list.size() << " failures, first:\n"
      << errors.summary();
  EXPECT_FALSE(world.failed()) << world.failureMessage();
}

INSTANTIATE_TEST_SUITE_P(
    Meshes, Collectives,
    ::testing::Combine(
        ::testing::Values(std::vector<int64_t>{2}, std::vector<int64_t>{3},
                          std::vector<int64_t>{4}, std::vector<int64_t>{8},
                          std::vector<int64_t>{2, 2},
                          std::vector<int64_t>{2, 3},
                          std::vector<int64_t>{2, 2, 2}),
        ::testing::Values(CollectiveKind::AllGather, CollectiveKind::AllReduce,
                          CollectiveKind::ReduceScatter,
                          CollectiveKind::AllToAll)),
    [](const ::testing::TestParamInfo<CaseParam> &info) {
      return meshName(std::get<0>(info.param)) + "_" +
             collectiveName(std::get<1>(info.param));
    });

// Different groups run different collectives at the same time, and every
// rank alternates between its groups on both axes, many times in sequence.
TEST(InProcessComm, ConcurrentGroupsAndLongSequences) {
  Mesh mesh = makeMesh({2, 3});
  InProcessWorld world(mesh, {20.0});
  Errors errors;
  world.run([&](InProcessComm &comm) {
    int64_t d = comm.device();
    std::vector<int64_t> c = mesh.coords(d);
    for (int iter = 0; iter < 300; ++iter) {
      // Rows (axis 1, groups of 3): row 0 gathers while row 1 reduces.
      float v = static_cast<float>(d * 1000 + iter);
      if (c[0] == 0) {
        float out[3];
        CollectiveResult r =
            comm.allGather({&v, DType::F32, {1}}, {out, sizeof(out)}, {1}, 0);
        if (!r.ok())
          return errors.add(r.status.message());
        for (int64_t j = 0; j < 3; ++j)
          if (out[j] != static_cast<float>(mesh.device({0, j}) * 1000 + iter))
            return errors.add("gather mismatch at iter " +
                              std::to_string(iter));
      } else {
        float out;
        CollectiveResult r = comm.allReduce({&v, DType::F32, {}}, {&out, 4},
                                            {1}, ReduceKind::Max);
        if (!r.ok())
          return errors.add(r.status.message());
        if (out != static_cast<float>(5 * 1000 + iter))
          return errors.add("reduce mismatch at iter " + std::to_string(iter));
      }
      // Columns (axis 0, groups of 2), in place.
      int64_t x = d + iter;
      CollectiveResult r =
          comm.allReduce({&x, DType::I64, {}}, {&x, 8}, {0}, ReduceKind::Sum);
      if (!r.ok())
        return errors.add(r.status.message());
      int64_t want = mesh.device({0, c[1]}) + mesh.device({1, c[1]}) + 2 * iter;
      if (x != want)
        return errors.add("column sum mismatch at iter " +
                          std::to_string(iter));
      if (iter % 50 == 0)
        if (Status s = comm.barrier({0, 1}); !s.ok())
          return errors.add(s.message());
    }
  });
  EXPECT_TRUE(errors.list.empty()) << errors.summary();
}

TEST(InProcessComm, InPlaceAllReduceLarge) {
  Mesh mesh = makeMesh({4});
  InProcessWorld world(mesh, {20.0});
  Errors errors;
  world.run([&](InProcessComm &comm) {
    std::vector<float> data(100003);
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = static_cast<float>((i % 7) + comm.device());
    CollectiveResult r =
        comm.allReduce({data.data(), DType::F32, {100003}},
                       {data.data(), data.size() * 4}, {0}, ReduceKind::Sum);
    if (!r.ok())
      return errors.add(r.status.message());
    for (size_t i = 0; i < data.size(); ++i)
      if (data[i] != static_cast<float>(4 * (i % 7) + 6))
        return errors.add("mismatch at " + std::to_string(i));
  });
  EXPECT_TRUE(errors.list.empty()) << errors.summary();
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

// A rank that aborts makes every other rank's pending collective fail fast
// (well before the 30 s timeout), naming it and the reason; later
// collectives fail too.
TEST(InProcessComm, AbortStopsEveryRank) {
  Mesh mesh = makeMesh({2, 2});
  InProcessWorld world(mesh, {30.0});
  std::vector<std::string> pending(4), later(4);
  std::vector<double> elapsed(4, 0);
  auto start = std::chrono::steady_clock::now();
  world.run([&](InProcessComm &comm) {
    int64_t d = comm.device();
    float v = 1, out[4];
    // Everyone completes one collective first.
    CollectiveResult r0 =
        comm.allReduce({&v, DType::F32, {}}, {out, 4}, {0, 1}, ReduceKind::Sum);
    if (!r0.ok() || out[0] != 4)
      pending[d] = "first collective failed";
    if (d == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      comm.abort("injected fault");
    } else {
      // Rank 3 waits for rank 2 in its row; ranks 0 and 1 may finish their
      // row but then wait for rank 2 on the whole mesh.
      CollectiveResult r =
          comm.allGather({&v, DType::F32, {1}}, {out, 16}, {1}, 0);
      if (d != 3 && r.ok())
        r = comm.allGather({&v, DType::F32, {1}}, {out, 16}, {0, 1}, 0);
      pending[d] = r.ok() ? "no error" : r.status.message();
    }
    elapsed[d] = secondsSince(start);
    later[d] = comm.barrier({0}).message();
  });
  for (int64_t d : {0, 1, 3}) {
    EXPECT_NE(pending[d].find("rank 2 aborted: injected fault"),
              std::string::npos)
        << "rank " << d << ": " << pending[d];
    EXPECT_LT(elapsed[d], 5.0) << "rank " << d;
  }
  for (int64_t d = 0; d < 4; ++d)
    EXPECT_NE(later[d].find("rank 2 aborted: injected fault"),
              std::string::npos)
        << "rank " << d << ": " << later[d];
  EXPECT_NE(pending[3].find("allGather #1 on mesh axes [y] (ranks 2, 3)"),
            std::string::npos)
      << pending[3];
  EXPECT_TRUE(world.failed());
}

// A rank that never arrives: the waiting ranks time out with an error that
// names it (whichever of its groups notices first), the other ranks fail at
// their next collective, and the latecomer fails too. Nothing hangs.
TEST(InProcessComm, MissingRankTimesOut) {
  Mesh mesh = makeMesh({2, 2});
  InProcessWorld world(mesh, {1.0});
  std::vector<std::string> msgs(4);
  std::vector<double> elapsed(4, 0);
  auto start = std::chrono::steady_clock::now();
  world.run([&](InProcessComm &comm) {
    int64_t d = comm.device();
    float v = 1, out[4];
    if (d == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    } else {
      // Rows: {0, 1} completes, {2, 3} waits for rank 3.
      CollectiveResult r =
          comm.allReduce({&v, DType::F32, {}}, {out, 4}, {1}, ReduceKind::Sum);
      if (r.ok()) // then the column collective can't complete
        r = comm.allReduce({&v, DType::F32, {}}, {out, 4}, {0},
                           ReduceKind::Sum);
      msgs[d] = r.ok() ? "no error" : r.status.message();
      elapsed[d] = secondsSince(start);
      return;
    }
    CollectiveResult r =
        comm.allReduce({&v, DType::F32, {}}, {out, 4}, {1}, ReduceKind::Sum);
    msgs[d] = r.ok() ? "no error" : r.status.message();
  });
  for (int64_t d = 0; d < 4; ++d)
    EXPECT_TRUE(msgs[d].find("rank 3 did not arrive at allReduce #") !=
                    std::string::npos &&
                msgs[d].find("within 1 s") != std::string::npos)
        << "rank " << d << ": " << msgs[d];
  // One timeout, plus at most one extension while the culprit is found.
  for (int64_t d = 0; d < 3; ++d)
    EXPECT_LT(elapsed[d], 3.5) << "rank " << d;
}

// Ranks wait for each other in a cycle of different groups (0 -> 1 -> 3 ->
// 2 -> 0): nobody is absent, so after a second timeout period every rank
// reports the cycle instead of hanging.
TEST(InProcessComm, CycleOfWaitsIsReported) {
  Mesh mesh = makeMesh({2, 2});
  InProcessWorld world(mesh, {0.5});
  std::vector<std::string> msgs(4);
  auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  world.run([&](InProcessComm &comm) {
    int64_t d = comm.device();
    float v = 1, out;
    Axes axes = d == 0 || d == 3 ? Axes{1} : Axes{0};
    CollectiveResult r =
        comm.allReduce({&v, DType::F32, {}}, {&out, 4}, axes, ReduceKind::Sum);
    msgs[d] = r.ok() ? "ok" : r.status.message();
  });
  elapsed = secondsSince(start);
  for (int64_t d = 0; d < 4; ++d)
    EXPECT_NE(msgs[d].find("(waiting in other collectives; rank"),
              std::string::npos)
        << "rank " << d << ": " << msgs[d];
  EXPECT_GT(elapsed, 0.9); // two timeout periods
  EXPECT_LT(elapsed, 4.0);
}

// With verification on, a rank that issued one collective more than its
// peer (sequence numbers differ) is caught on every member of the group,
// with both fingerprints; without it the same program runs unnoticed.
TEST(InProcessComm, FingerprintMismatchIsReported) {
  for (bool verify : {true, false}) {
    Mesh mesh = makeMesh({2, 2});
    InProcessWorld world(mesh, {5.0, verify});
    std::vector<std::string> msgs(4);
    world.run([&](InProcessComm &comm) {
      int64_t d = comm.device();
      float v = static_cast<float>(d), out[4];
      if (d == 0 || d == 2) // an extra collective on the column {0, 2}
        if (Status s = comm.barrier({0}); !s.ok())
          msgs[d] = s.message();
      CollectiveResult r =
          comm.allGather({&v, DType::F32, {1}}, {out, 16}, {1}, 0);
      msgs[d] = r.ok() ? "ok" : r.status.message();
    });
    for (int64_t d = 0; d < 4; ++d) {
      if (!verify) {
        EXPECT_EQ(msgs[d], "ok");
        continue;
      }
      std::string row = d < 2 ? "(ranks 0, 1)" : "(ranks 2, 3)";
      std::string first = d < 2 ? "0" : "2", second = d < 2 ? "1" : "3";
      EXPECT_NE(msgs[d].find("mesh axes [y] " + row +
                             ": fingerprint mismatch: member 0 (rank " + first +
                             ") has allGather(axes=[y], dim=0, f32, "
                             "shape=[?], seq=1) but member 1 (rank " +
                             second +
                             ") has allGather(axes=[y], dim=0, f32, "
                             "shape=[?], seq=0)"),
                std::string::npos)
          << "rank " << d << ": " << msgs[d];
    }
  }
}

TEST(InProcessComm, ExplicitFingerprintCheck) {
  Mesh mesh = makeMesh({3});
  InProcessWorld world(mesh, {5.0});
  std::vector<std::string> msgs(3);
  world.run([&](InProcessComm &comm) {
    Fingerprint fp;
    fp.kind = CollectiveKind::AllReduce;
    fp.axes = {0};
    fp.shape = {4, comm.device() == 2 ? 5 : 4};
    fp.sequence = 9;
    msgs[comm.device()] = comm.checkFingerprint({0}, fp).message();
    if (Status s = comm.checkFingerprint({0}, Fingerprint()); !s.ok())
      msgs[comm.device()] += " | equal ones failed: " + s.message();
  });
  for (const std::string &m : msgs)
    EXPECT_NE(m.find("fingerprint mismatch: member 0 (rank 0) has "
                     "allReduce(axes=[x], sum, f32, shape=[4, 4], seq=9) but "
                     "member 2 (rank 2) has allReduce(axes=[x], sum, f32, "
                     "shape=[4, 5], seq=9)"),
              std::string::npos)
        << m;
}

/// Runs `fn` on every rank of a 1-D mesh of 3 and returns each rank's error.
std::vector<std::string>
errorsOf(const std::function<CollectiveResult(InProcessComm &)> &fn) {
  InProcessWorld world(makeMesh({3}), {5.0});
  std::vector<std::string> msgs(3);
  world.run([&](InProcessComm &comm) {
    CollectiveResult r = fn(comm);
    msgs[comm.device()] = r.ok() ? "ok" : r.status.message();
  });
  return msgs;
}

void expectAllContain(const std::vector<std::string> &msgs,
                      const std::string &text) {
  for (size_t d = 0; d < msgs.size(); ++d)
    EXPECT_NE(msgs[d].find(text), std::string::npos)
        << "rank " << d << ": " << msgs[d];
}

TEST(InProcessComm, BadCallsFailOnEveryMember) {
  float in[16] = {0}, out[64];
  // Different collectives in one group.
  expectAllContain(
      errorsOf([&](InProcessComm &c) {
        if (c.device() == 1)
          return c.allReduce({in, DType::F32, {4}}, {out, 256}, {0},
                             ReduceKind::Sum);
        return c.allGather({in, DType::F32, {4}}, {out, 256}, {0}, 0);
      }),
      "members disagree on the collective: member 0 (rank 0) "
      "calls allGather");
  // Different dtypes.
  expectAllContain(
      errorsOf([&](InProcessComm &c) {
        DType t = c.device() == 2 ? DType::I32 : DType::F32;
        return c.allReduce({in, t, {4}}, {out, 256}, {0}, ReduceKind::Max);
      }),
      "member 2 (rank 2) calls allReduce(axes=[x], max, i32");
  // Shapes that must agree.
  expectAllContain(
      errorsOf([&](InProcessComm &c) {
        Shape s{2, c.device() == 1 ? 3 : 2};
        return c.allGather({in, DType::F32, s}, {out, 256}, {0}, 0);
      }),
      "member 1 (rank 1) passes shape [2, 3] but member 0 "
      "passes [2, 2] (only dim 0 may differ)");
  expectAllContain(errorsOf([&](InProcessComm &c) {
                     Shape s{c.device() == 1 ? 3 : 2};
                     return c.reduceScatter({in, DType::F32, s}, {out, 256},
                                            {0}, 0, ReduceKind::Sum);
                   }),
                   "(shapes must be equal)");
  // Output too small on one member.
  expectAllContain(
      errorsOf([&](InProcessComm &c) {
        size_t cap = c.device() == 2 ? 20 : 256;
        return c.allGather({in, DType::F32, {2, 4}}, {out, cap}, {0}, 0);
      }),
      "member 2 (rank 2) has an output buffer of 20 bytes but "
      "its result [6, 4] needs 96");
  // Dims out of range.
  expectAllContain(
      errorsOf([&](InProcessComm &c) {
        return c.allToAll({in, DType::F32, {2, 4}}, {out, 256}, {0}, 2, 0);
      }),
      "allToAll #0 on mesh axes [x] (ranks 0, 1, 2): split dim 2 "
      "is out of range for rank-2 blocks");
  // Mesh axes that do not exist.
  expectAllContain(
      errorsOf([&](InProcessComm &c) {
        return c.allGather({in, DType::F32, {2}}, {out, 256}, {1}, 0);
      }),
      "invalid mesh axes [1] for a rank-1 mesh");
}

// shard takes this device's torch.chunk along a dim, flat over the group
// (like reduceScatter; SPMDOps.td), not nested per axis like layouts.
TEST(InProcessComm, ShardTakesTheGroupChunk) {
  Mesh mesh = makeMesh({2, 3});
  InProcessWorld world(mesh, {5.0});
  Errors errors;
  world.run([&](InProcessComm &comm) {
    std::vector<int32_t> global(5 * 7);
    for (size_t i = 0; i < global.size(); ++i)
      global[i] = static_cast<int32_t>(i);
    for (Axes axes : {Axes{0}, Axes{1}, Axes{0, 1}, Axes{1, 0}})
      for (int64_t dim : {0, 1}) {
        std::vector<int32_t> out(35, -1);
        CollectiveResult r = comm.shard({global.data(), DType::I32, {5, 7}},
                                        {out.data(), 140}, axes, dim);
        if (!r.ok())
          return errors.add(r.status.message());
        int64_t idx = mesh.groupIndex(comm.device(), axes);
        Range want = chunkRange(5 + 2 * dim, mesh.groupSize(axes), idx);
        // torch.chunk(7, 6) over both axes: 2, 2, 2, 1, 0, 0 in group order.
        if (axes.size() == 2 && dim == 1 &&
            want.size != std::vector<int64_t>{2, 2, 2, 1, 0, 0}[idx])
          return errors.add("flat chunk sizes");
        Shape shape{5, 7};
        shape[dim] = want.size;
        if (r.shape != shape)
          return errors.add("shard shape " + shapeStr(r.shape));
        for (int64_t i = 0; i < shape[0]; ++i)
          for (int64_t j = 0; j < shape[1]; ++j) {
            int64_t gi = dim == 0 ? i + want.offset : i;
            int64_t gj = dim == 1 ? j + want.offset : j;
            if (out[i * shape[1] + j] != global[gi * 7 + gj])
              return errors.add("shard element mismatch");
          }
      }
    std::vector<int32_t> small(1);
    if (comm.shard({small.data(), DType::I32, {1}}, {small.data(), 4}, {0}, 1)
            .status.message()
            .find("dim 1 is out of range for a rank-1 block") ==
        std::string::npos)
      errors.add("shard dim error");
  });
  EXPECT_TRUE(errors.list.empty()) << errors.summary();
}

TEST(InProcessComm, SingleMemberGroupsCopy) {
  Mesh mesh = makeMesh({1, 3});
  InProcessWorld world(mesh, {5.0});
  Errors errors;
  world.run([&](InProcessComm &comm) {
    float in[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
    CollectiveResult r = comm.reduceScatter({in, DType::F32, {2, 3}}, {out, 24},
                                            {0}, 1, ReduceKind::Avg);
    if (!r.ok() || r.shape != Shape{2, 3} || out[5] != 6)
      errors.add("single-member reduceScatter wrong");
    Axes axes;
    if (Status s = comm.resolveAxes({"y", "x"}, axes);
        !s.ok() || axes != Axes{1, 0})
      errors.add("resolveAxes");
    if (comm.resolveAxes({"w"}, axes).message() != "mesh has no axis named 'w'")
      errors.add("resolveAxes error");
  });
  EXPECT_TRUE(errors.list.empty()) << errors.summary();
}

} // namespace
