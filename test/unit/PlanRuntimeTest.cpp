//===- PlanRuntimeTest.cpp - plan model, executor, collectives, npy ------===//

#include "runtime/CommCollectives.h"
#include "runtime/Executor.h"
#include "runtime/InProcessComm.h"
#include "runtime/Workers.h"
#include "test/unit/PlanRanks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <numeric>
#include <thread>

using namespace spmd;
using namespace spmd::plan;
using spmd::test::runRanks;

namespace {
std::vector<float> iota(int64_t n, float start = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}
} // namespace

TEST(PlanRuntime, CopyBoxMovesASubBlock) {
  std::vector<float> src = iota(12); // 3x4
  std::vector<float> dst(6, -1);     // 2x3
  copyBox(src.data(), {3, 4}, {1, 1}, dst.data(), {2, 3}, {0, 1}, {2, 2}, 4);
  EXPECT_EQ(dst, (std::vector<float>{-1, 5, 6, -1, 9, 10}));
}

TEST(PlanRuntime, WorkersRunEveryItemOnce) {
  Workers workers(3);
  for (int64_t n : {0, 1, 2, 7, 100}) {
    std::vector<std::atomic<int>> seen(n);
    workers.run(n, [&](int64_t i) { seen[i].fetch_add(1); });
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(seen[i].load(), 1) << n << ": " << i;
  }
}

// GEMMs split among threads (batch members, column or row blocks, with
// and without transposes, uneven pieces) equal the unsplit GEMM.
TEST(PlanRuntime, SplitGemmMatchesWhole) {
  Workers workers(3);
  struct Case {
    int64_t batch, m, n, k;
    bool ta, tb;
  };
  for (Case c :
       {Case{1, 37, 301, 128, false, false}, Case{1, 301, 37, 128, true, false},
        Case{1, 130, 203, 70, false, true}, Case{1, 203, 130, 70, true, true},
        Case{5, 64, 65, 66, false, true}, Case{2, 100, 200, 90, true, false}}) {
    Shape as = c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k};
    Shape bs = c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
    Shape cs = {c.m, c.n};
    if (c.batch > 1) {
      as.insert(as.begin(), c.batch);
      bs.insert(bs.begin(), c.batch);
      cs.insert(cs.begin(), c.batch);
    }
    std::vector<float> a(numElements(as)), b(numElements(bs));
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = static_cast<float>((i * 7) % 13) - 6;
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = static_cast<float>((i * 5) % 11) - 5;
    std::vector<float> whole(numElements(cs), 1), split(whole);
    Step step;
    step.kind = StepKind::Gemm;
    step.transposeA = c.ta;
    step.transposeB = c.tb;
    step.beta = 1;
    step.operands = {{BufferRef::Where::Arena, 0, DType::F32, as},
                     {BufferRef::Where::Arena, 0, DType::F32, bs},
                     {BufferRef::Where::Arena, 0, DType::F32, cs}};
    ASSERT_EQ(runGemm(step, as, bs, cs, a.data(), b.data(), whole.data()), "");
    ASSERT_EQ(
        runGemm(step, as, bs, cs, a.data(), b.data(), split.data(), &workers),
        "");
    EXPECT_EQ(whole, split)
        << c.batch << "x" << c.m << "x" << c.n << "x" << c.k;
  }
}

TEST(PlanRuntime, HalfAndBF16RoundTrip) {
  std::vector<uint16_t> h(3), b(3);
  for (int i = 0; i < 3; ++i) {
    storeFromDouble(h.data(), DType::F16, i, 0.5 * i - 1.0);
    storeFromDouble(b.data(), DType::BF16, i, 0.5 * i - 1.0);
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(loadAsDouble(h.data(), DType::F16, i), 0.5 * i - 1.0);
    EXPECT_EQ(loadAsDouble(b.data(), DType::BF16, i), 0.5 * i - 1.0);
  }
  storeFromDouble(h.data(), DType::F16, 0, 1.0 / 3.0);
  EXPECT_NEAR(loadAsDouble(h.data(), DType::F16, 0), 1.0 / 3.0, 1e-3);
}

TEST(PlanRuntime, GemmTransposesAndBeta) {
  // C(2x3) = A^T(2x4) B^T(4x3): A is 4x2, B is 3x4.
  std::vector<float> a = iota(8), b = iota(12, 1), c(6, 100);
  Step step;
  step.kind = StepKind::Gemm;
  step.transposeA = step.transposeB = true;
  step.beta = 0;
  step.operands = {{BufferRef::Where::Arena, 0, DType::F32, {4, 2}},
                   {BufferRef::Where::Arena, 0, DType::F32, {3, 4}},
                   {BufferRef::Where::Arena, 0, DType::F32, {2, 3}}};
  ASSERT_EQ(runGemm(step, a.data(), b.data(), c.data()), "");
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      float want = 0;
      for (int k = 0; k < 4; ++k)
        want += a[k * 2 + i] * b[j * 4 + k];
      EXPECT_FLOAT_EQ(c[i * 3 + j], want) << i << "," << j;
    }
  // beta 1 accumulates, in bf16 through f32.
  std::vector<uint16_t> ah(8), bh(12), ch(6);
  for (int i = 0; i < 8; ++i)
    storeFromDouble(ah.data(), DType::BF16, i, a[i]);
  for (int i = 0; i < 12; ++i)
    storeFromDouble(bh.data(), DType::BF16, i, b[i]);
  for (int i = 0; i < 6; ++i)
    storeFromDouble(ch.data(), DType::BF16, i, 1.0);
  step.beta = 1;
  for (BufferRef &r : step.operands)
    r.type = DType::BF16;
  ASSERT_EQ(runGemm(step, ah.data(), bh.data(), ch.data()), "");
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(loadAsDouble(ch.data(), DType::BF16, i), c[i] + 1,
                (c[i] + 1) / 64);
}

TEST(PlanRuntime, ExecutorRunsStepsOnArenaAndArgs) {
  // y = x @ w then copy y to a second buffer; the result lives in the arena.
  Schedule s;
  s.name = "f";
  s.arenaBytes = 128;
  s.mesh = Mesh{{"x"}, {1}};
  s.args = {{DType::F32, {2, 2}, std::nullopt},
            {DType::F32, {2, 2}, std::nullopt}};
  BufferRef x{BufferRef::Where::Arg, 0, DType::F32, {2, 2}};
  BufferRef w{BufferRef::Where::Arg, 1, DType::F32, {2, 2}};
  BufferRef y{BufferRef::Where::Arena, 0, DType::F32, {2, 2}};
  BufferRef z{BufferRef::Where::Arena, 64, DType::F32, {2, 2}};
  Step gemm;
  gemm.kind = StepKind::Gemm;
  gemm.beta = 0;
  gemm.operands = {x, w, y};
  Step copy;
  copy.kind = StepKind::Copy;
  copy.operands = {y, z};
  s.steps = {gemm, copy};
  s.results = {{DType::F32, {2, 2}, std::nullopt}};
  s.resultRefs = {z};
  ASSERT_EQ(s.validate(), "");
  Executor exec(s, {}, nullptr);
  std::vector<float> xv{1, 2, 3, 4}, wv{1, 0, 0, 2};
  std::vector<void *> args{xv.data(), wv.data()};
  ASSERT_EQ(exec.run(args), "");
  const auto *r = static_cast<const float *>(exec.result(0, args));
  EXPECT_EQ(std::vector<float>(r, r + 4), (std::vector<float>{1, 4, 3, 8}));
}

TEST(PlanRuntime, RankDependentSizesFromMeshCoordinates) {
  // out = shard(x) on 4 ranks where x has 5 elements: the output buffer's
  // size is this rank's torch.chunk of 5 (2, 2, 1, 0), allocated at run time.
  Schedule s;
  s.name = "f";
  s.mesh = Mesh{{"tp"}, {4}};
  s.args = {{DType::F32, {5}, std::nullopt}};
  SizeSource chunk;
  chunk.kind = SizeSource::Kind::LocalChunk;
  chunk.globalSize = 5;
  chunk.axes = {0};
  s.sizes = {chunk};
  s.numHeapBuffers = 1;
  BufferRef x{BufferRef::Where::Arg, 0, DType::F32, {5}};
  BufferRef out{BufferRef::Where::Heap, 0, DType::F32, {-1}, {0}};
  Step shard;
  shard.kind = StepKind::Shard;
  shard.axes = {0};
  shard.dim0 = 0;
  shard.operands = {x, out};
  s.steps = {shard};
  s.results = {{DType::F32, {-1}, std::nullopt}};
  s.resultRefs = {out};
  ASSERT_EQ(s.validate(), "");
  std::vector<Shape> shapes(4);
  std::vector<std::vector<float>> values(4);
  runRanks(s.mesh, [&](CommCollectives &comm) {
    Executor exec(s, {}, &comm);
    std::vector<float> xv = iota(5);
    std::vector<void *> args{xv.data()};
    ASSERT_EQ(exec.run(args, {{5}}), "");
    shapes[comm.device()] = exec.resultShape(0);
    const auto *r = static_cast<const float *>(exec.result(0, args));
    values[comm.device()].assign(r, r + shapes[comm.device()][0]);
  });
  EXPECT_EQ(shapes, (std::vector<Shape>{{2}, {2}, {1}, {0}}));
  EXPECT_EQ(values[1], (std::vector<float>{2, 3}));
  EXPECT_EQ(values[2], (std::vector<float>{4}));
}

/// A kernel in the JIT's packed convention: out[i] = i + offset, for the
/// descriptor of a 1-D memref (args[0]) and an index scalar (args[1]).
static void iotaFromOffset(void **args) {
  auto *desc = *static_cast<int64_t **>(args[0]);
  auto *data = reinterpret_cast<float *>(desc[1]);
  int64_t size = desc[3];
  int64_t offset = *static_cast<int64_t *>(args[1]);
  for (int64_t i = 0; i < size; ++i)
    data[i] = static_cast<float>(i + offset);
}

TEST(PlanRuntime, KernelScalarsAreRankOffsets) {
  // 13 elements nested over a 2x2 mesh (chunks 4, 3, 3, 3 at offsets 0, 4,
  // 7, 10): every rank writes the global indices of its chunk, so the size
  // slot and the offset slot must agree with the torch.chunk arithmetic.
  Schedule s;
  s.name = "f";
  s.mesh = Mesh{{"dp", "tp"}, {2, 2}};
  SizeSource size, offset;
  size.kind = SizeSource::Kind::LocalChunk;
  size.globalSize = 13;
  size.axes = {0, 1};
  offset = size;
  offset.kind = SizeSource::Kind::LocalOffset;
  s.sizes = {size, offset};
  s.numHeapBuffers = 1;
  s.kernels = {"iota"};
  BufferRef out{BufferRef::Where::Heap, 0, DType::F32, {-1}, {0}};
  Step kernel;
  kernel.kind = StepKind::Kernel;
  kernel.kernel = 0;
  kernel.operands = {out};
  kernel.scalars = {1};
  s.steps = {kernel};
  s.results = {{DType::F32, {-1}, std::nullopt}};
  s.resultRefs = {out};
  ASSERT_EQ(s.validate(), "");
  EXPECT_NE(s.str().find("kernel iota heap0:f32[?] %s1"), std::string::npos)
      << s.str();
  std::vector<std::vector<float>> values(4);
  runRanks(s.mesh, [&](CommCollectives &comm) {
    Executor exec(s, {iotaFromOffset}, &comm);
    std::vector<void *> args;
    ASSERT_EQ(exec.run(args), "");
    const auto *r = static_cast<const float *>(exec.result(0, args));
    values[comm.device()].assign(r, r + exec.resultShape(0)[0]);
  });
  EXPECT_EQ(values, (std::vector<std::vector<float>>{
                        {0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}}));

  Schedule bad = s;
  bad.steps[0].scalars = {2};
  EXPECT_EQ(bad.validate(), "step 0 (kernel) reads unknown scalar 2");
}

TEST(PlanRuntime, ValidateRejectsBuffersOutsideTheArena) {
  Schedule s;
  s.name = "f";
  s.arenaBytes = 32;
  Step copy;
  copy.kind = StepKind::Copy;
  copy.operands = {{BufferRef::Where::Arena, 0, DType::F32, {4}},
                   {BufferRef::Where::Arena, 16, DType::F32, {8}}};
  s.steps = {copy};
  EXPECT_EQ(s.validate(), "step 0 (copy) buffer @16:f32[8] lies outside the "
                          "arena of 32 bytes");
  // An end that overflows int64 wrapped negative and passed the check.
  s.steps[0].operands[1].index = INT64_MAX;
  EXPECT_EQ(s.validate(), "step 0 (copy) buffer @9223372036854775807:f32[8] "
                          "lies outside the arena of 32 bytes");
  // So did a byte size that wraps to 0.
  s.steps[0].operands[1] = {
      BufferRef::Where::Arena, 0, DType::F32, {int64_t(1) << 60, 4}};
  EXPECT_EQ(s.validate(), "step 0 (copy) buffer @0:f32[1152921504606846976, "
                          "4] lies outside the arena of 32 bytes");
}

TEST(PlanRuntime, ValidateRejectsLayoutsThatDoNotFitTheMesh) {
  // Scattering inputs and assembling results divide by the mesh axes a
  // layout names: a 2-axis layout on a 1-axis mesh divided by zero.
  Schedule s;
  s.name = "f";
  s.mesh = Mesh{{"x"}, {3}};
  TensorInfo arg{DType::F32, {4}, Layout{{Placement::shard(0)}}};
  s.args = {arg};
  ASSERT_EQ(s.validate(), "");
  s.args[0].layout = Layout{{Placement::shard(0), Placement::replicate()}};
  EXPECT_EQ(s.validate(),
            "argument 0: layout has 2 placements but the mesh has 1 axes");
  s.args = {arg};
  s.results = {TensorInfo{DType::F32, {4}, Layout{{Placement::shard(1)}}}};
  s.resultRefs = {{BufferRef::Where::Arg, 0, DType::F32, {4}}};
  EXPECT_EQ(s.validate(), "result 0: placement S(1) on mesh axis 'x' shards "
                          "dim 1 of a rank-1 tensor");
  s.results[0].layout = std::nullopt;
  s.results[0].globalShape = Shape{4, 1};
  EXPECT_EQ(s.validate(),
            "result 0: global shape [4, 1] does not fit its local shape [4]");
}

TEST(PlanRuntime, RunResourcesCountResultsAndTheReference) {
  // Two 2 GiB results in a 4 GiB arena: each rank copies them out (4 GiB
  // more while the arena is held), then the assembled results and --check's
  // reference (arena, one block to compare) follow the freed arenas.
  constexpr int64_t kGiB = int64_t(1) << 30;
  Schedule s;
  s.name = "f";
  s.arenaBytes = 4 * kGiB;
  TensorInfo result{DType::I8, {2 * kGiB}};
  s.results = {result, result};
  EXPECT_EQ(checkRunResources(s, /*ranksAsThreads=*/false, 8 * kGiB), "");
  EXPECT_EQ(checkRunResources(s, false, 7 * kGiB),
            "needs 8.0 GiB for the arguments, arenas and results of 1 rank, "
            "7.0 GiB available");
  EXPECT_EQ(checkRunResources(s, false, 8 * kGiB, &s),
            "needs 14.0 GiB for the arguments, arenas and results of 1 rank "
            "and the --check reference, 8.0 GiB available");
  // Uneven shards over 4 ranks hold the global result once between them.
  s.mesh = Mesh{{"x"}, {4}};
  s.results = {TensorInfo{
      DType::I8, {-1}, Layout{{Placement::shard(0)}}, Shape{2 * kGiB}}};
  EXPECT_EQ(checkRunResources(s, false, 4 * kGiB),
            "needs 6.0 GiB for the arguments, arenas and results of 4 ranks, "
            "4.0 GiB available");
}

TEST(PlanRuntime, UnevenAllGatherAndReduceScatter) {
  // n = 5 over 4 members: torch.chunk sizes 2, 2, 1, 0.
  Mesh mesh{{"tp"}, {4}};
  std::vector<std::vector<float>> gathered(4), scattered(4);
  runRanks(mesh, [&](CommCollectives &comm) {
    int64_t d = comm.device();
    Range r = chunkRange(5, 4, d);
    std::vector<float> mine(r.size * 2);
    for (int64_t i = 0; i < r.size * 2; ++i)
      mine[i] = static_cast<float>(r.offset * 2 + i);
    std::vector<float> out(10, -1);
    EXPECT_EQ(comm.allGather(mine.data(), {r.size, 2}, out.data(), {5, 2},
                             DType::F32, {0}, 0),
              "");
    gathered[d] = out;
    // Every member contributes (d + 1) * iota(10) as a 5x2 block.
    std::vector<float> full(10);
    for (int i = 0; i < 10; ++i)
      full[i] = static_cast<float>((d + 1) * i);
    std::vector<float> part(r.size * 2, -1);
    EXPECT_EQ(comm.reduceScatter(full.data(), {5, 2}, part.data(), {r.size, 2},
                                 DType::F32, {0}, 0, ReduceKind::Sum),
              "");
    scattered[d] = part;
  });
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(gathered[d], iota(10));
    Range r = chunkRange(5, 4, d);
    for (int64_t i = 0; i < r.size * 2; ++i)
      EXPECT_EQ(scattered[d][i], 10.0f * (r.offset * 2 + i)); // 1+2+3+4
  }
  EXPECT_TRUE(scattered[3].empty());
}

TEST(PlanRuntime, AllReduceInPlaceOverOneAxisOf2D) {
  Mesh mesh{{"dp", "tp"}, {2, 3}};
  std::vector<std::vector<float>> out(6);
  runRanks(mesh, [&](CommCollectives &comm) {
    int64_t d = comm.device();
    std::vector<float> v{static_cast<float>(d), 1.0f};
    EXPECT_EQ(comm.allReduce(v.data(), {2}, v.data(), DType::F32, {1},
                             ReduceKind::Avg),
              "");
    out[d] = v;
  });
  // Groups over tp: {0,1,2} and {3,4,5}.
  for (int d = 0; d < 6; ++d)
    EXPECT_EQ(out[d], (std::vector<float>{d < 3 ? 1.0f : 4.0f, 1.0f}));
}

TEST(PlanRuntime, AllToAllMovesShardsBetweenDims) {
  // Global 4x4 iota, S(0) on 2 members -> S(1).
  Mesh mesh{{"tp"}, {2}};
  std::vector<std::vector<float>> out(2);
  runRanks(mesh, [&](CommCollectives &comm) {
    int64_t d = comm.device();
    std::vector<float> mine = iota(8, 8.0f * d); // rows 2d, 2d+1
    std::vector<float> o(8, -1);
    EXPECT_EQ(comm.allToAll(mine.data(), {2, 4}, o.data(), {4, 2}, DType::F32,
                            {0}, 1, 0),
              "");
    out[d] = o;
  });
  EXPECT_EQ(out[0], (std::vector<float>{0, 1, 4, 5, 8, 9, 12, 13}));
  EXPECT_EQ(out[1], (std::vector<float>{2, 3, 6, 7, 10, 11, 14, 15}));
}

TEST(PlanRuntime, GatherIntoAWrongOutputShapeFailsOnEveryMember) {
  Mesh mesh{{"tp"}, {2}};
  std::vector<std::string> errors(2);
  runRanks(mesh, [&](CommCollectives &comm) {
    std::vector<float> mine(3, 1.0f), out(4);
    errors[comm.device()] =
        comm.allGather(mine.data(), {3}, out.data(), {4}, DType::F32, {0}, 0);
  });
  for (const std::string &err : errors)
    EXPECT_EQ(err, "allGather #0 on mesh axes [tp] (ranks 0, 1): member 0 "
                   "(rank 0) has an output buffer of 16 bytes but its result "
                   "[6] needs 24");
}

TEST(PlanRuntime, GatherIntoALargerPlannedShapeFails) {
  // The buffer has room, but the group's blocks give another shape than
  // the plan's: CommCollectives refuses rather than leave garbage.
  Mesh mesh{{"tp"}, {2}};
  std::vector<std::string> errors(2);
  runRanks(mesh, [&](CommCollectives &comm) {
    std::vector<float> mine(3, 1.0f), out(8);
    errors[comm.device()] =
        comm.allGather(mine.data(), {3}, out.data(), {8}, DType::F32, {0}, 0);
  });
  for (const std::string &err : errors)
    EXPECT_EQ(err, "the group's blocks give shape [6], the plan expects [8]");
}

TEST(PlanRuntime, I8CollectivesAreRefused) {
  Mesh mesh{{"tp"}, {2}};
  std::vector<std::string> errors(2);
  runRanks(mesh, [&](CommCollectives &comm) {
    int8_t v = 1;
    errors[comm.device()] =
        comm.allReduce(&v, {1}, &v, DType::I8, {0}, ReduceKind::Sum);
  });
  for (const std::string &err : errors)
    EXPECT_EQ(err, "collectives on i8 are not supported by the communicator");
}

TEST(PlanRuntime, AbortFailsTheOtherRanks) {
  Mesh mesh{{"x"}, {2}};
  std::vector<std::string> errors(2);
  runRanks(mesh, [&](CommCollectives &comm) {
    if (comm.device() == 1) {
      comm.communicator().abort("injected fault");
      return;
    }
    float v = 1;
    errors[0] = comm.allReduce(&v, {1}, &v, DType::F32, {0}, ReduceKind::Sum);
  });
  EXPECT_EQ(errors[0], "allReduce #0 on mesh axes [x] (ranks 0, 1): aborted: "
                       "rank 1 aborted: injected fault");
}
