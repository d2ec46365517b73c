//===- nccl_bench.cpp - Collective bandwidth, nccl-tests style ------------===//
//
//   spmd-cuda-nccl-bench [gpus] [max_bytes]   (default: all GPUs, 1 GiB)
//
// One process, one thread per GPU. For each collective and message size
// (8 B .. max_bytes, x4 steps) prints the time, algorithm bandwidth
// (bytes / time) and bus bandwidth (nccl-tests' factors: all-reduce
// 2(n-1)/n, all-gather / reduce-scatter / all-to-all (n-1)/n), through
// NcclComm (with its per-call header exchange) and through raw NCCL calls
// on a separate communicator in the same run, which is the peer figure.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "runtime/cuda/NcclComm.h"

#include <nccl.h>

#include <chrono>
#include <thread>
#include <vector>

using namespace spmd;
using namespace spmd::cuda;
using namespace spmd::cuda::bench;

namespace {

double busFactor(CollectiveKind k, int n) {
  return k == CollectiveKind::AllReduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
}

} // namespace

int main(int argc, char **argv) {
  int count = 0;
  orDie(deviceCount(count), "devices");
  int n = argc > 1 ? std::min(std::atoi(argv[1]), count) : count;
  size_t maxBytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1 << 30;
  Mesh mesh{{"x"}, {n}};
  std::vector<int> gpus(n);
  for (int i = 0; i < n; ++i)
    gpus[i] = i;
  std::vector<std::unique_ptr<NcclComm>> comms;
  orDie(NcclComm::createSingleProcess(mesh, gpus, 120, comms), "nccl");
  // The raw NCCL peer: one communicator per GPU from ncclCommInitAll.
  std::vector<ncclComm_t> raw(n);
  if (ncclCommInitAll(raw.data(), n, gpus.data()) != ncclSuccess) {
    std::fprintf(stderr, "ncclCommInitAll failed\n");
    return 1;
  }
  std::vector<std::unique_ptr<DeviceArena>> bufs(n);
  for (int r = 0; r < n; ++r) {
    orDie(comms[r]->gpu().makeCurrent(), "ctx");
    // in: maxBytes, out: maxBytes * n (all-gather).
    orDie(DeviceArena::create(comms[r]->gpu(),
                              DeviceArena::align(maxBytes) + maxBytes * n,
                              bufs[r]),
          "buffers");
  }
  std::printf("# %d GPU(s), %s\n", n, comms[0]->gpu().name().c_str());
  std::printf("%-14s %12s %11s %10s %10s %11s %10s %10s\n", "collective",
              "bytes", "spmd_us", "algbw", "busbw", "nccl_us", "algbw",
              "busbw");
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter, CollectiveKind::AllToAll}) {
    for (size_t bytes = 8 * size_t(n); bytes <= maxBytes; bytes *= 4) {
      const int iters = bytes < (1 << 20) ? 50 : 10;
      // Element count of each rank's input (f32), a multiple of n.
      int64_t elems = int64_t(bytes / 4) / n * n;
      auto runAll = [&](bool spmd) {
        std::vector<std::thread> threads;
        auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < n; ++r)
          threads.emplace_back([&, r] {
            NcclComm &c = *comms[r];
            orDie(c.gpu().makeCurrent(), "ctx");
            CUdeviceptr in = bufs[r]->base();
            CUdeviceptr out = in + DeviceArena::align(maxBytes);
            void *ip = reinterpret_cast<void *>(in);
            void *op = reinterpret_cast<void *>(out);
            OutBlock ob{op, maxBytes * n};
            for (int i = 0; i < iters; ++i) {
              if (spmd) {
                CollectiveResult res;
                switch (kind) {
                case CollectiveKind::AllReduce:
                  res = c.allReduce({ip, DType::F32, {elems}}, ob, {0},
                                    ReduceKind::Sum);
                  break;
                case CollectiveKind::AllGather:
                  res = c.allGather({ip, DType::F32, {elems}}, ob, {0}, 0);
                  break;
                case CollectiveKind::ReduceScatter:
                  res = c.reduceScatter({ip, DType::F32, {elems}}, ob, {0}, 0,
                                        ReduceKind::Sum);
                  break;
                default:
                  res = c.allToAll({ip, DType::F32, {elems}}, ob, {0}, 0, 0);
                }
                orDie(res.status, "collective");
              } else {
                ncclGroupStart();
                switch (kind) {
                case CollectiveKind::AllReduce:
                  ncclAllReduce(ip, op, elems, ncclFloat32, ncclSum, raw[r],
                                c.stream());
                  break;
                case CollectiveKind::AllGather:
                  ncclAllGather(ip, op, elems, ncclFloat32, raw[r], c.stream());
                  break;
                case CollectiveKind::ReduceScatter:
                  ncclReduceScatter(ip, op, elems / n, ncclFloat32, ncclSum,
                                    raw[r], c.stream());
                  break;
                default:
                  for (int p = 0; p < n; ++p) {
                    ncclSend(static_cast<char *>(ip) + p * (elems / n) * 4,
                             elems / n, ncclFloat32, p, raw[r], c.stream());
                    ncclRecv(static_cast<char *>(op) + p * (elems / n) * 4,
                             elems / n, ncclFloat32, p, raw[r], c.stream());
                  }
                }
                ncclGroupEnd();
              }
            }
            orDie(c.synchronize(), "sync");
          });
        for (auto &t : threads)
          t.join();
        return std::chrono::duration<double, std::micro>(
                   std::chrono::steady_clock::now() - t0)
                   .count() /
               iters;
      };
      runAll(true); // warm-up
      double spmdUs = runAll(true);
      runAll(false);
      double ncclUs = runAll(false);
      // nccl-tests' size convention: the larger of input and output.
      double size = kind == CollectiveKind::AllGather ? double(elems) * 4 * n
                                                      : double(elems) * 4;
      double f = busFactor(kind, n);
      std::printf("%-14s %12.0f %11.1f %10.2f %10.2f %11.1f %10.2f %10.2f\n",
                  collectiveName(kind), size, spmdUs, size / spmdUs / 1e3,
                  size / spmdUs / 1e3 * f, ncclUs, size / ncclUs / 1e3,
                  size / ncclUs / 1e3 * f);
    }
  }
  for (ncclComm_t c : raw)
    ncclCommDestroy(c);
  return 0;
}
