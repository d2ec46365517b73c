//===- CostModel.cpp - the one communication cost model -------------------===//

#include "core/CostModel.h"

#include <algorithm>

using namespace spmd;

double CommCostParams::betaOf(const std::vector<int64_t> &axes) const {
  double slowest = 0;
  for (int64_t a : axes)
    slowest = std::max(
        slowest, a >= 0 && size_t(a) < axisBeta.size() ? axisBeta[a] : beta);
  return axes.empty() ? beta : slowest;
}

double spmd::ringSendFactor(CollectiveKind kind, int64_t k) {
  double n = double(k);
  switch (kind) {
  case CollectiveKind::AllGather:
    return n - 1;
  case CollectiveKind::AllReduce: // reduce_scatter + all_gather, one launch
    return 2 * (n - 1) / n;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) / n;
  }
  return 0;
}

double spmd::collectiveTime(CollectiveKind kind, int64_t k, double inputBytes,
                            double alpha, double beta) {
  if (k <= 1)
    return 0.0;
  return alpha + beta * ringSendFactor(kind, k) * inputBytes;
}

double spmd::axisReshardCost(const Placement &from, const Placement &to,
                             int64_t k, double bytes, const CommCostParams &p,
                             int64_t axis) {
  if (from == to || k <= 1 || from.isReplicate())
    return 0.0;
  double beta = p.betaOf({axis});
  auto time = [&](CollectiveKind kind, double b) {
    return collectiveTime(kind, k, b, p.alpha, beta);
  };
  if (from.isShard()) {
    if (to.isShard())
      return time(CollectiveKind::AllToAll, bytes / double(k));
    return time(CollectiveKind::AllGather, bytes / double(k)); // R or P
  }
  // from is partial.
  if (to.isShard())
    return time(CollectiveKind::ReduceScatter, bytes);
  return time(CollectiveKind::AllReduce, bytes);
}

double spmd::axisGroupBytes(const Mesh &mesh, const Layout &layout,
                            int64_t axis, double globalBytes) {
  double bytes = globalBytes;
  for (int64_t a = 0; a < mesh.rank(); ++a)
    if (a != axis && a < int64_t(layout.placements.size()) &&
        layout.placements[a].isShard())
      bytes /= double(mesh.axisSizes[a]);
  return bytes;
}

double spmd::reshardCost(const Mesh &mesh, const Layout &from, const Layout &to,
                         double globalBytes, const CommCostParams &p) {
  double cost = 0.0;
  for (int64_t a = 0; a < mesh.rank(); ++a)
    cost +=
        axisReshardCost(from.placements[a], to.placements[a], mesh.axisSizes[a],
                        axisGroupBytes(mesh, from, a, globalBytes), p, a);
  return cost;
}

double DeviceProfile::flopTime(double flops, unsigned bits) const {
  double rate = bits <= 16 ? flops16 : flops32;
  return rate > 0 ? flops / rate : 0;
}

double DeviceProfile::memoryTime(double bytes) const {
  double t = 0;
  if (cacheBandwidth > 0 && cacheBytes > 0) {
    double cached = std::min(bytes, cacheBytes);
    t += cached / cacheBandwidth;
    bytes -= cached;
  }
  if (memBandwidth > 0)
    t += bytes / memBandwidth;
  return t;
}

double DeviceProfile::computeTime(double flops, double bytes,
                                  unsigned bits) const {
  return std::max(flopTime(flops, bits), memoryTime(bytes));
}

std::optional<DeviceProfile> spmd::deviceProfile(std::string_view name) {
  struct Known {
    std::string_view name;
    double flops32, flops16, memBandwidth, cacheBytes, cacheBandwidth, alpha,
        linkBytesPerSecond;
  };
  // H100 SXM: FP32 (CUDA cores) and dense BF16 tensor-core peaks, HBM3 (its
  // L2 is left out: kernels stream through it), the bus bandwidth NCCL's
  // all-reduce reaches over NVLink; cpu: a few cores, DRAM past a share of
  // L3, a host interconnect. The cpu cache tier is fitted to simulated
  // ranks (bench/autoshard/fit_cpu.py): elementwise kernels on activations
  // ran 2-4x faster than 10 GB/s, Adam on replicated weights about at it.
  // Its 100 us per collective is what one costs between computations
  // (bench/autoshard/calibrate_cpu.py --between: 40-180 us on 4-8
  // simulated ranks, where a chain of bare collectives costs ~12 us; an MPI
  // all_reduce of a few bytes ~385 us).
  static const Known known[] = {
      {"h100", 67e12, 989e12, 3.35e12, 0, 0, 10e-6, 370e9},
      {"cpu", 50e9, 50e9, 10e9, 6.0 * (1 << 20), 25e9, 100e-6, 5e9},
  };
  for (const Known &k : known) {
    if (k.name != name)
      continue;
    DeviceProfile p;
    p.name = std::string(name);
    p.flops32 = k.flops32;
    p.flops16 = k.flops16;
    p.memBandwidth = k.memBandwidth;
    p.cacheBytes = k.cacheBytes;
    p.cacheBandwidth = k.cacheBandwidth;
    p.comm.alpha = k.alpha;
    p.comm.beta = 1.0 / k.linkBytesPerSecond;
    return p;
  }
  return std::nullopt;
}
