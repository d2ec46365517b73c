//===- CudaRuntimeTest.cpp - Device runtime, cuBLASLt, NCCL ---------------===//
//
// Runs everywhere: the no-driver / no-device error paths, the TCP
// rendezvous, launch configurations, GEMM validation. Needs a GPU (skipped
// with the reason otherwise): module load + launch against a C++ reference,
// cuBLASLt GEMMs against a CPU GEMM, NCCL collectives across the GPUs.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/Gemm.h"
#include "runtime/cuda/KernelSources.h"
#include "runtime/cuda/NcclComm.h"
#include "runtime/cuda/TcpStore.h"
#include "targets/cuda/Nvrtc.h"

#include "runtime/DType.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>

using namespace spmd;
using namespace spmd::cuda;

namespace {

bool contains(const std::string &hay, const std::string &needle) {
  return hay.find(needle) != std::string::npos;
}

/// Skips the test unless a GPU is usable, saying why.
#define REQUIRE_GPUS(n)                                                        \
  do {                                                                         \
    int count_ = 0;                                                            \
    Status s_ = deviceCount(count_);                                           \
    if (!s_.ok())                                                              \
      GTEST_SKIP() << "needs a GPU: " << s_.message();                         \
    if (count_ < (n))                                                          \
      GTEST_SKIP() << "needs " << (n) << " GPUs, found " << count_;            \
  } while (0)

//===-- Everywhere
//---------------------------------------------------------===//

TEST(CudaDriver, NoDeviceFailsCleanlyWithAMessage) {
  int count = -1;
  Status s = deviceCount(count);
  if (s.ok())
    GTEST_SKIP() << "this machine has " << count << " GPU(s)";
  EXPECT_EQ(count, 0);
  EXPECT_TRUE(contains(s.message(), "CUDA")) << s.message();
  // Everything built on the driver fails the same way, without crashing.
  std::unique_ptr<Device> dev;
  Status d = Device::open(0, dev);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(dev, nullptr);
  EXPECT_EQ(d.message(), s.message());
  Mesh mesh{{"x"}, {1}};
  std::unique_ptr<NcclComm> comm;
  Status c = NcclComm::create(mesh, 0, 0, std::string(128, '\0'), 5, comm);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(contains(c.message(), "nccl rank 0")) << c.message();
  EXPECT_TRUE(contains(c.message(), s.message())) << c.message();
  std::vector<std::unique_ptr<NcclComm>> comms;
  EXPECT_FALSE(NcclComm::createSingleProcess(mesh, {0}, 5, comms).ok());
}

TEST(CudaDriver, MissingLibraryIsNamed) {
  DriverApi api;
  Status s = loadDriverFrom("/nonexistent/libcuda.so.1", api);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "no CUDA driver")) << s.message();
  EXPECT_TRUE(contains(s.message(), "/nonexistent/libcuda.so.1"));
}

TEST(CudaDriver, DriverWithoutDeviceIsReported) {
  DriverApi api;
  Status s = loadDriverFrom(SPMD_FAKE_LIBCUDA, api);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "CUDA_ERROR_NO_DEVICE")) << s.message();
  EXPECT_TRUE(contains(s.message(), "version 12.4")) << s.message();
  EXPECT_TRUE(contains(s.message(), "needs a GPU")) << s.message();
}

TEST(CudaDriver, LibraryThatIsNotADriverIsReported) {
  DriverApi api;
  Status s = loadDriverFrom("libm.so.6", api);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "lacks entry points: cuInit"))
      << s.message();
}

TEST(LaunchConfig, ShapesToGridsAndBlocks) {
  EXPECT_EQ(elementwiseLaunch(0).grid, 0u);
  LaunchDims e = elementwiseLaunch(1000, 100);
  EXPECT_EQ(e.block, 256u);
  EXPECT_EQ(e.grid, 4u);
  EXPECT_EQ(elementwiseLaunch(int64_t(1) << 30, 100).grid, 800u);
  EXPECT_EQ(rowLaunch(0, 10).grid, 0u);
  LaunchDims r = rowLaunch(7, 10);
  EXPECT_EQ(r.grid, 7u);
  EXPECT_EQ(r.block, 32u);
  EXPECT_EQ(rowLaunch(3, 1000).block, 256u);
  EXPECT_EQ(rowLaunch(3, 4097).block, 1024u);
  EXPECT_EQ(rowLaunch(100000, 8).grid, 65535u);
  LaunchDims c = columnPartialLaunch(16384, 4096, 132);
  EXPECT_EQ(c.grid, 16u);
  EXPECT_EQ(c.gridY, 33u); // 4 waves of 132 SMs over 16 column blocks
  EXPECT_EQ(columnPartialLaunch(40, 4096, 132).gridY, 2u); // >= 32 rows each
  EXPECT_EQ(columnPartialLaunch(0, 4096).grid, 0u);
  alignas(16) float buf[8];
  EXPECT_TRUE(vectorizable4(8, {buf, buf + 4}));
  EXPECT_FALSE(vectorizable4(8, {buf + 1}));
  EXPECT_FALSE(vectorizable4(6, {buf}));
}

TEST(Gemm, ValidationNamesTheProblem) {
  GemmDesc d;
  d.m = 4, d.n = 8, d.k = 16;
  EXPECT_TRUE(validateGemm(d).ok());
  d.dtype = DType::I32;
  Status s = validateGemm(d);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "not i32")) << s.message();
  d.dtype = DType::BF16;
  d.allowTF32 = true;
  EXPECT_FALSE(validateGemm(d).ok());
  d.allowTF32 = false;
  d.k = -1;
  EXPECT_FALSE(validateGemm(d).ok());
  d.k = 16;
  d.batch = 3;
  d.transA = true;
  d.epilogue = GemmEpilogue::BiasGelu;
  EXPECT_EQ(d.str(), "gemm bf16 [3 x 4x8x16] A^T +bias +gelu");
}

TEST(TcpStore, RankZeroHandsItsBlobToEveryRank) {
  const int port = 29000 + (getpid() % 2000);
  std::string blob(128, '\0');
  for (int i = 0; i < 128; ++i)
    blob[i] = static_cast<char>(i * 7 + 1);
  const int world = 4;
  std::vector<std::string> got(world, std::string(128, 'x'));
  std::vector<Status> results(world);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back([&, r] {
      LaunchEnv env;
      env.rank = r;
      env.worldSize = world;
      env.masterAddr = "127.0.0.1";
      env.masterPort = port;
      if (r == 0)
        got[r] = blob;
      results[r] = shareFromRankZero(env, got[r], 20);
    });
  for (auto &t : ranks)
    t.join();
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(results[r].ok()) << r << ": " << results[r].message();
    EXPECT_EQ(got[r], blob) << r;
  }
}

TEST(TcpStore, MissingRankZeroTimesOutWithAMessage) {
  std::string blob;
  Status s = fetchBlob("127.0.0.1", 1, 3, 128, 0.3, blob); // port 1: closed
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "rank 3")) << s.message();
  EXPECT_TRUE(contains(s.message(), "is rank 0 running?")) << s.message();
  Status t = serveBlob(29000 + (getpid() % 2000) + 2500, "x", 1, 0.2);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(contains(t.message(), "only 0 of 1 ranks connected"))
      << t.message();
}

TEST(TcpStore, LaunchEnvironment) {
  unsetenv("RANK");
  setenv("WORLD_SIZE", "4", 1);
  LaunchEnv env;
  Status s = readLaunchEnv(env);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "RANK is not set")) << s.message();
  setenv("RANK", "2", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("MASTER_ADDR", "10.0.0.7", 1);
  setenv("MASTER_PORT", "1234", 1);
  ASSERT_TRUE(readLaunchEnv(env).ok());
  EXPECT_EQ(env.rank, 2);
  EXPECT_EQ(env.worldSize, 4);
  EXPECT_EQ(env.localRank, 0);
  EXPECT_EQ(env.masterAddr, "10.0.0.7");
  EXPECT_EQ(env.masterPort, 1234);
  setenv("RANK", "4", 1);
  s = readLaunchEnv(env);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "not below WORLD_SIZE")) << s.message();
  for (const char *v :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"})
    unsetenv(v);
}

//===-- GPU only
//-----------------------------------------------------------===//

std::vector<float> randomVec(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

struct DeviceBuffer {
  const Device &dev;
  CUdeviceptr ptr = 0;
  size_t bytes;
  DeviceBuffer(const Device &d, size_t b) : dev(d), bytes(b) {
    EXPECT_EQ(dev.api().cuMemAlloc(&ptr, std::max<size_t>(b, 1)), CUDA_SUCCESS);
  }
  ~DeviceBuffer() { dev.api().cuMemFree(ptr); }
  void upload(const void *p) { dev.api().cuMemcpyHtoD(ptr, p, bytes); }
  void download(void *p) const { dev.api().cuMemcpyDtoH(p, ptr, bytes); }
};

TEST(CudaGpu, ModuleLaunchSoftmaxMatchesReference) {
  REQUIRE_GPUS(1);
  std::unique_ptr<Device> dev;
  ASSERT_TRUE(Device::open(0, dev).ok());
  CompileOptions opts;
  CompiledModule compiled;
  Status s = compileModule("reference_kernels.cu", referenceKernelsSource(),
                           opts, compiled);
  ASSERT_TRUE(s.ok()) << s.message();
  std::unique_ptr<Module> mod;
  s = Module::load(*dev, compiled, nvrtcRecompiler(opts), mod);
  ASSERT_TRUE(s.ok()) << s.message();
  CUfunction fn;
  ASSERT_TRUE(mod->function("spmd_softmax_fwd_f32", fn).ok());
  std::unique_ptr<Stream> stream;
  ASSERT_TRUE(Stream::create(*dev, stream).ok());
  for (auto [rows, cols] :
       {std::pair<long long, long long>{37, 1000}, {1, 1}, {300, 37}}) {
    auto x = randomVec(rows * cols, 3);
    DeviceBuffer dx(*dev, x.size() * 4), dy(*dev, x.size() * 4);
    dx.upload(x.data());
    CUdeviceptr xp = dx.ptr, yp = dy.ptr;
    void *args[] = {&xp, &yp, &rows, &cols};
    ASSERT_TRUE(launch(*dev, fn, rowLaunch(rows, cols), *stream, args).ok());
    ASSERT_TRUE(stream->synchronize().ok());
    std::vector<float> y(x.size());
    dy.download(y.data());
    for (long long r = 0; r < rows; ++r) {
      double m = -INFINITY, sum = 0;
      for (long long c = 0; c < cols; ++c)
        m = std::max(m, double(x[r * cols + c]));
      for (long long c = 0; c < cols; ++c)
        sum += std::exp(x[r * cols + c] - m);
      for (long long c = 0; c < cols; ++c)
        ASSERT_NEAR(y[r * cols + c], std::exp(x[r * cols + c] - m) / sum, 1e-6);
    }
  }
}

TEST(CudaGpu, GemmMatchesCpu) {
  REQUIRE_GPUS(1);
  std::unique_ptr<Device> dev;
  ASSERT_TRUE(Device::open(0, dev).ok());
  std::unique_ptr<Stream> stream;
  ASSERT_TRUE(Stream::create(*dev, stream).ok());
  std::unique_ptr<GemmRunner> gemm;
  ASSERT_TRUE(GemmRunner::create(*dev, 32 << 20, gemm).ok());
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    for (bool transB : {false, true}) {
      GemmDesc d;
      d.dtype = t;
      d.m = 67, d.n = 96, d.k = 130, d.batch = 2;
      d.transB = transB;
      d.epilogue = GemmEpilogue::Bias;
      size_t es = dtypeSize(t);
      auto a = randomVec(d.batch * d.m * d.k, 1),
           b = randomVec(d.batch * d.k * d.n, 2), bias = randomVec(d.n, 3);
      auto pack = [&](std::vector<float> &v) {
        std::vector<char> out(v.size() * es);
        for (size_t i = 0; i < v.size(); ++i) {
          storeFromDouble(out.data(), t, i, v[i]);
          v[i] = static_cast<float>(loadAsDouble(out.data(), t, i));
        }
        return out;
      };
      auto ah = pack(a), bh = pack(b), biash = pack(bias);
      DeviceBuffer da(*dev, ah.size()), db(*dev, bh.size()),
          dbias(*dev, biash.size()), dc(*dev, d.batch * d.m * d.n * es);
      da.upload(ah.data());
      db.upload(bh.data());
      dbias.upload(biash.data());
      Status s = gemm->run(d, da.ptr, db.ptr, dc.ptr, dbias.ptr, *stream);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_TRUE(stream->synchronize().ok());
      std::vector<char> ch(dc.bytes);
      dc.download(ch.data());
      for (int64_t bt = 0; bt < d.batch; ++bt)
        for (int64_t i = 0; i < d.m; ++i)
          for (int64_t j = 0; j < d.n; ++j) {
            double acc = bias[j];
            for (int64_t p = 0; p < d.k; ++p) {
              double bv = transB ? b[bt * d.k * d.n + j * d.k + p]
                                 : b[bt * d.k * d.n + p * d.n + j];
              acc += a[bt * d.m * d.k + i * d.k + p] * bv;
            }
            double got = loadAsDouble(ch.data(), t, (bt * d.m + i) * d.n + j);
            double tol = t == DType::F32 ? 1e-3 : 0.1 + 0.01 * std::fabs(acc);
            ASSERT_NEAR(got, acc, tol)
                << d.str() << " at " << bt << "," << i << "," << j;
          }
    }
  }
}

TEST(CudaGpu, NcclCollectivesAcrossGpus) {
  REQUIRE_GPUS(2);
  int count = 0;
  ASSERT_TRUE(deviceCount(count).ok());
  int n = std::min(count, 8);
  Mesh mesh{{"x"}, {n}};
  std::vector<int> gpus(n);
  for (int i = 0; i < n; ++i)
    gpus[i] = i;
  std::vector<std::unique_ptr<NcclComm>> comms;
  Status s = NcclComm::createSingleProcess(mesh, gpus, 60, comms);
  ASSERT_TRUE(s.ok()) << s.message();
  for (auto &c : comms)
    c->setRecompiler(nvrtcRecompiler(CompileOptions()));
  // Rank r holds a [2, r+1] block of value 100*r + index (uneven gather
  // along dim 1, so padding and strided copies are exercised), and a
  // [n+1, 3] block for the reduce-scatter (uneven chunks of n+1 rows).
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      NcclComm &c = *comms[r];
      const Device &dev = c.gpu();
      auto check = [&](bool ok, const std::string &what) {
        if (!ok && errors[r].empty())
          errors[r] = what;
      };
      if (!dev.makeCurrent().ok())
        return check(false, "makeCurrent");
      // allGather along dim 1.
      int64_t total = n * (n + 1) / 2;
      std::vector<float> mine(2 * (r + 1));
      for (size_t i = 0; i < mine.size(); ++i)
        mine[i] = 100.0f * r + i;
      DeviceBuffer in(dev, mine.size() * 4), out(dev, 2 * total * 4);
      in.upload(mine.data());
      CollectiveResult g = c.allGather(
          {reinterpret_cast<void *>(in.ptr), DType::F32, {2, r + 1}},
          {reinterpret_cast<void *>(out.ptr), out.bytes}, {0}, 1);
      check(g.ok(), "allGather: " + g.status.message());
      check(c.synchronize().ok(), "sync");
      std::vector<float> all(2 * total);
      out.download(all.data());
      int64_t col = 0;
      for (int q = 0; q < n; ++q) {
        for (int row = 0; row < 2; ++row)
          for (int k = 0; k <= q; ++k)
            check(all[row * total + col + k] == 100.0f * q + row * (q + 1) + k,
                  "allGather value");
        col += q + 1;
      }
      // The same with the shapes planned: no header exchange.
      std::vector<Shape> planned;
      for (int q = 0; q < n; ++q)
        planned.push_back({2, q + 1});
      c.setPlannedShapes(planned);
      dev.api().cuMemsetD8Async(out.ptr, 0, out.bytes, c.stream());
      CollectiveResult g2 = c.allGather(
          {reinterpret_cast<void *>(in.ptr), DType::F32, {2, r + 1}},
          {reinterpret_cast<void *>(out.ptr), out.bytes}, {0}, 1);
      check(g2.ok() && g2.shape == Shape({2, total}),
            "planned allGather: " + g2.status.message());
      check(c.synchronize().ok(), "sync");
      std::vector<float> all2(2 * total);
      out.download(all2.data());
      check(all2 == all, "planned allGather value");
      // allReduce sum, in place.
      std::vector<float> v(5, float(r + 1));
      DeviceBuffer rv(dev, 20);
      rv.upload(v.data());
      CollectiveResult ar = c.allReduce(
          {reinterpret_cast<void *>(rv.ptr), DType::F32, {5}},
          {reinterpret_cast<void *>(rv.ptr), 20}, {0}, ReduceKind::Sum);
      check(ar.ok(), "allReduce: " + ar.status.message());
      check(c.synchronize().ok(), "sync");
      rv.download(v.data());
      for (float x : v)
        check(x == n * (n + 1) / 2.0f, "allReduce value");
      // bf16 allReduce accumulates in f32, then rounds once.
      std::vector<uint16_t> h(7, floatToBF16(1.0f + 1.0f / 128 + r / 64.0f));
      DeviceBuffer hv(dev, 14), ho(dev, 14);
      hv.upload(h.data());
      CollectiveResult hr = c.allReduce(
          {reinterpret_cast<void *>(hv.ptr), DType::BF16, {7}},
          {reinterpret_cast<void *>(ho.ptr), 14}, {0}, ReduceKind::Sum);
      check(hr.ok(), "bf16 allReduce: " + hr.status.message());
      check(c.synchronize().ok(), "sync");
      ho.download(h.data());
      float want = 0;
      for (int q = 0; q < n; ++q)
        want += bf16ToFloat(floatToBF16(1.0f + 1.0f / 128 + q / 64.0f));
      for (uint16_t x : h)
        check(x == floatToBF16(want), "bf16 allReduce value");
      // reduceScatter of [n+1, 3] along dim 0 (torch.chunk rows).
      std::vector<float> big((n + 1) * 3);
      for (size_t i = 0; i < big.size(); ++i)
        big[i] = float(i);
      DeviceBuffer rs(dev, big.size() * 4), rso(dev, big.size() * 4);
      rs.upload(big.data());
      CollectiveResult sc = c.reduceScatter(
          {reinterpret_cast<void *>(rs.ptr), DType::F32, {n + 1, 3}},
          {reinterpret_cast<void *>(rso.ptr), rso.bytes}, {0}, 0,
          ReduceKind::Sum);
      check(sc.ok(), "reduceScatter: " + sc.status.message());
      check(c.synchronize().ok(), "sync");
      Range rr = chunkRange(n + 1, n, r);
      check(sc.shape == Shape({rr.size, 3}), "reduceScatter shape");
      std::vector<float> part(rr.size * 3);
      if (!part.empty()) {
        DeviceBuffer tmp(dev, 0);
        dev.api().cuMemcpyDtoH(part.data(), rso.ptr, part.size() * 4);
      }
      for (size_t i = 0; i < part.size(); ++i)
        check(part[i] == n * float(rr.offset * 3 + i), "reduceScatter value");
      // allToAll: split dim 0 of [n, 2], concat dim 1.
      std::vector<float> a2a(n * 2);
      for (int i = 0; i < n * 2; ++i)
        a2a[i] = 10.0f * r + i;
      DeviceBuffer ai(dev, a2a.size() * 4), ao(dev, a2a.size() * 4);
      ai.upload(a2a.data());
      CollectiveResult t =
          c.allToAll({reinterpret_cast<void *>(ai.ptr), DType::F32, {n, 2}},
                     {reinterpret_cast<void *>(ao.ptr), ao.bytes}, {0}, 0, 1);
      check(t.ok(), "allToAll: " + t.status.message());
      check(c.synchronize().ok(), "sync");
      check(t.shape == Shape({1, 2 * n}), "allToAll shape");
      std::vector<float> got(2 * n);
      ao.download(got.data());
      for (int q = 0; q < n; ++q)
        for (int k = 0; k < 2; ++k)
          check(got[q * 2 + k] == 10.0f * q + r * 2 + k, "allToAll value");
    });
  for (auto &t : threads)
    t.join();
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(errors[r], "") << "rank " << r;
}

} // namespace
