//===- DeviceExecutorTest.cpp - GPU step executor on the emulated GPU -----===//
//
// The stream and event logic of runtime/cuda/DeviceExecutor (which compute
// waits for which collective), its graph capture, and the emulated GPU's
// race checker, on hand-built schedules of copies and collectives over
// in-process ranks. Real kernels go through the same executor in the
// end-to-end tests (`spmd-run --backend cuda-emu`).
//
//===----------------------------------------------------------------------===//

#include "runtime/CommCollectives.h"
#include "runtime/InProcessComm.h"
#include "runtime/cuda/EmuBackend.h"
#include "test/unit/PlanRanks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>

using namespace spmd;
using namespace spmd::cuda;
using namespace spmd::plan;
using spmd::test::runRanks;

namespace {
BufferRef arena(int64_t offset) {
  return {BufferRef::Where::Arena, offset, DType::F32, {4}};
}
BufferRef arg(int64_t i) { return {BufferRef::Where::Arg, i, DType::F32, {4}}; }

Step copy(BufferRef from, BufferRef to) {
  Step s;
  s.kind = StepKind::Copy;
  s.operands = {from, to};
  return s;
}

/// x, y -> (all_reduce(x) copied out, y copied): step 2 does not touch the
/// all-reduce's buffers, step 3 reads its output.
Schedule overlapSchedule() {
  Schedule s;
  s.name = "overlap";
  s.mesh = Mesh{{"tp"}, {2}};
  s.arenaBytes = 1024;
  s.args = {{DType::F32, {4}, std::nullopt}, {DType::F32, {4}, std::nullopt}};
  Step reduce;
  reduce.kind = StepKind::AllReduce;
  reduce.axes = {0};
  reduce.operands = {arena(0), arena(256)};
  s.steps = {copy(arg(0), arena(0)), reduce, copy(arg(1), arena(512)),
             copy(arena(256), arena(768))};
  s.results = {{DType::F32, {4}, std::nullopt},
               {DType::F32, {4}, std::nullopt}};
  s.resultRefs = {arena(768), arena(512)};
  return s;
}

std::vector<float> download(DeviceExecutor &exec, size_t i) {
  std::vector<char> bytes;
  EXPECT_EQ(exec.downloadResult(i, bytes), "");
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

std::ptrdiff_t indexOf(const std::vector<std::string> &lines,
                       const std::string &line) {
  return std::find(lines.begin(), lines.end(), line) - lines.begin();
}
} // namespace

TEST(DeviceExecutor, ComputeWaitsOnlyForTheCollectiveItTouches) {
  Schedule s = overlapSchedule();
  ASSERT_EQ(s.validate(), "");
  std::vector<std::vector<std::string>> traces(2);
  std::vector<std::vector<float>> reduced(2), copied(2);
  runRanks(s.mesh, [&](CommCollectives &comm) {
    int64_t d = comm.device();
    EmuBackend backend({}, &comm);
    backend.setTrace(&traces[d]);
    DeviceExecutor exec(s, {}, backend, d);
    std::vector<float> x{1, 2, 3, 4}, y{5, 6, 7, 8};
    for (float &v : x)
      v += 10.0f * d;
    ASSERT_EQ(exec.setArguments({x.data(), y.data()}, {{4}, {4}}, {}), "");
    ASSERT_EQ(exec.run(), "");
    reduced[d] = download(exec, 0);
    copied[d] = download(exec, 1);
  });
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(reduced[d], (std::vector<float>{12, 14, 16, 18}));
    EXPECT_EQ(copied[d], (std::vector<float>{5, 6, 7, 8}));
    const std::vector<std::string> &t = traces[d];
    // The all-reduce waits for the copy producing its input...
    EXPECT_LT(indexOf(t, "compute: step 0 (copy)"),
              indexOf(t, "compute records e0"));
    EXPECT_LT(indexOf(t, "communication waits e0"),
              indexOf(t, "communication: step 1 (all_reduce)"));
    // ...the independent copy does not wait for the all-reduce, the copy of
    // its result does.
    std::ptrdiff_t wait = indexOf(t, "compute waits e1");
    ASSERT_LT(wait, static_cast<std::ptrdiff_t>(t.size())) << t.size();
    EXPECT_LT(indexOf(t, "compute: step 2 (copy)"), wait);
    EXPECT_LT(wait, indexOf(t, "compute: step 3 (copy)"));
  }
}

TEST(DeviceExecutor, RaceCheckerNamesBothOperations) {
  runRanks(Mesh{{"x"}, {1}}, [&](CommCollectives &comm) {
    EmuBackend gpu({}, &comm);
    DevicePtr a = 0, b = 0;
    ASSERT_TRUE(gpu.allocate(16, a).ok());
    ASSERT_TRUE(gpu.allocate(16, b).ok());
    Step reduce;
    reduce.kind = StepKind::AllReduce;
    reduce.axes = {0};
    reduce.operands = {arena(0), arena(0)};
    OpInfo fill{"fill a", {{a, a + 16, true}}};
    OpInfo coll{"reduce a into b", {{a, a + 16, false}, {b, b + 16, true}}};
    OpInfo use{"read b", {{b, b + 16, false}, {a, a + 16, true}}};
    ASSERT_TRUE(gpu.zero(a, 16, fill).ok());
    // The collective reads `a` with no event after its producer.
    Status race = gpu.collective(reduce, a, {4}, b, {4}, nullptr, coll);
    ASSERT_FALSE(race.ok());
    EXPECT_NE(race.message().find("race on the emulated GPU: reduce a into b "
                                  "on the communication stream reads bytes "
                                  "that fill a on the compute stream writes"),
              std::string::npos)
        << race.message();
    ASSERT_TRUE(gpu.synchronize().ok());
    // Ordered both ways: no race.
    ASSERT_TRUE(gpu.zero(a, 16, fill).ok());
    ASSERT_TRUE(gpu.record(StreamId::Compute, 0).ok());
    ASSERT_TRUE(gpu.wait(StreamId::Comm, 0).ok());
    ASSERT_TRUE(gpu.collective(reduce, a, {4}, b, {4}, nullptr, coll).ok());
    // Reading b before waiting for the collective is a race.
    Status early = gpu.copy2D(a, 16, b, 16, 16, 1, use);
    ASSERT_FALSE(early.ok());
    EXPECT_NE(early.message().find("read b on the compute stream"),
              std::string::npos);
    ASSERT_TRUE(gpu.record(StreamId::Comm, 1).ok());
    ASSERT_TRUE(gpu.wait(StreamId::Compute, 1).ok());
    EXPECT_TRUE(gpu.copy2D(a, 16, b, 16, 16, 1, use).ok());
    EXPECT_TRUE(gpu.synchronize().ok());
  });
}

TEST(DeviceExecutor, GraphCaptureReplaysTheStep) {
  // Result 0 (the all-reduce of x) feeds x: x doubles every step after the
  // first, whether the step executed, was captured, or replayed.
  Schedule s = overlapSchedule();
  std::vector<std::vector<std::string>> modes(2);
  std::vector<std::vector<float>> finals(2);
  std::vector<int64_t> ops(2);
  runRanks(s.mesh, [&](CommCollectives &comm) {
    int64_t d = comm.device();
    EmuBackend backend({}, &comm);
    DeviceExecutorOptions options;
    options.cudaGraph = true;
    DeviceExecutor exec(s, {}, backend, d, options);
    std::vector<float> x{1, 2, 3, 4}, y{5, 6, 7, 8};
    for (float &v : x)
      v += 10.0f * d;
    std::vector<std::vector<Shape>> all(2, {{4}, {4}});
    ASSERT_EQ(exec.setArguments({x.data(), y.data()}, {{4}, {4}}, all), "");
    for (int step = 0; step < 4; ++step) {
      ASSERT_EQ(exec.run(), "") << "step " << step;
      modes[d].push_back(exec.lastRunMode());
      ASSERT_EQ(exec.feedResults(1), "");
    }
    finals[d] = download(exec, 0);
    ops[d] = backend.operationsRun();
  });
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(modes[d], (std::vector<std::string>{"executed", "captured",
                                                  "replayed", "replayed"}));
    // 12 14 16 18 after step 1, doubled by each of the next three.
    EXPECT_EQ(finals[d], (std::vector<float>{96, 112, 128, 144}));
    // Four steps of four operations, plus one feeding copy after each.
    EXPECT_EQ(ops[d], 4 * 4 + 4);
  }
}

TEST(DeviceExecutor, CaptureChecksTheCommunicationStreamJoins) {
  runRanks(Mesh{{"x"}, {1}}, [&](CommCollectives &comm) {
    EmuBackend gpu({}, &comm);
    DevicePtr a = 0;
    ASSERT_TRUE(gpu.allocate(16, a).ok());
    Step reduce;
    reduce.kind = StepKind::AllReduce;
    reduce.axes = {0};
    reduce.operands = {arena(0), arena(0)};
    OpInfo coll{"all_reduce", {{a, a + 16, true}}};
    ASSERT_TRUE(gpu.beginCapture().ok());
    Status s = gpu.collective(reduce, a, {4}, a, {4}, nullptr, coll);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("has not joined the capture"),
              std::string::npos);
    ASSERT_TRUE(gpu.record(StreamId::Compute, 0).ok());
    ASSERT_TRUE(gpu.wait(StreamId::Comm, 0).ok());
    EXPECT_TRUE(gpu.collective(reduce, a, {4}, a, {4}, nullptr, coll).ok());
    // Ending without joining the communication stream back fails.
    Status end = gpu.endCapture();
    EXPECT_FALSE(end.ok());
    EXPECT_NE(end.message().find("not joined back"), std::string::npos);
  });
}

TEST(DeviceExecutor, LaunchRules) {
  KernelSpec rows;
  rows.warpPerRow = true;
  LaunchDims d = kernelLaunch(rows, 20, 2);
  EXPECT_EQ(d.block, 256u);
  EXPECT_EQ(d.grid, 3u);                              // 8 rows per block
  EXPECT_EQ(kernelLaunch(rows, 100000, 2).grid, 64u); // 32 blocks per SM
  EXPECT_EQ(kernelLaunch(rows, 0, 2).grid, 0u);
  KernelSpec flat;
  EXPECT_EQ(kernelLaunch(flat, 1000, 132).grid, 4u);
}
