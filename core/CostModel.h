//===- CostModel.h - the one communication cost model -----------*- C++ -*-===//
//
// The alpha-beta model every communication estimate of spmd uses:
// propagation's conflict resolution, hoist-gathers, the redistribute
// planner's search, and the bytes of spmd-comm-report. Plain C++: no MLIR.
//
// One collective over a group of k devices costs `alpha` (latency) plus
// `beta` (seconds per byte) times the bytes each rank sends under the ring
// algorithms, I being the bytes of one rank's input:
//
//   all_gather                  (k-1)    * I
//   all_reduce                  2(k-1)/k * I   (one latency)
//   reduce_scatter, all_to_all  (k-1)/k  * I
//
// A layout change costs, per mesh axis whose placement changes, one such
// collective over that axis; G is the size of the tensor as that axis'
// group sees it (the global size divided by the shards of the other axes):
//
//   S -> R           all_gather      I = G / k
//   P -> R           all_reduce      I = G
//   P -> S           reduce_scatter  I = G
//   S(i) -> S(j)     all_to_all      I = G / k
//   S -> P           all_gather, then keep on one member: as S -> R
//   P(a) -> P(b)     all_reduce, then keep on one member: as P -> R
//   R -> S, R -> P   local (slice / keep on group index 0): free
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CORE_COSTMODEL_H
#define SPMD_CORE_COSTMODEL_H

#include "core/Layout.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmd {

struct CommCostParams {
  /// Seconds per collective (latency).
  double alpha = 10e-6;
  /// Seconds per byte (inverse bandwidth, here 50 GB/s).
  double beta = 1.0 / 50e9;
  /// Optional per mesh axis seconds per byte (overrides `beta`); a group
  /// over several axes runs at the slowest of them.
  std::vector<double> axisBeta;

  /// Seconds per byte of a group over `axes`.
  double betaOf(const std::vector<int64_t> &axes) const;
};

enum class CollectiveKind { AllGather, AllReduce, ReduceScatter, AllToAll };

/// Bytes one rank sends per byte of its input (the table above).
double ringSendFactor(CollectiveKind kind, int64_t k);

/// Seconds of one collective of `kind` over `k` devices whose input is
/// `inputBytes` on each rank, at `beta` seconds per byte.
double collectiveTime(CollectiveKind kind, int64_t k, double inputBytes,
                      double alpha, double beta);

/// Cost of changing one mesh axis (`axis`, of size `k`) from `from` to `to`
/// for a tensor that the axis' group sees as `bytes` bytes.
double axisReshardCost(const Placement &from, const Placement &to, int64_t k,
                       double bytes, const CommCostParams &p = {},
                       int64_t axis = -1);

/// Bytes of the tensor as seen by the group of mesh axis `axis` under
/// `layout`: the global size divided by the shards of every other axis.
double axisGroupBytes(const Mesh &mesh, const Layout &layout, int64_t axis,
                      double globalBytes);

/// What one device computes and moves per second: the roofline of a local
/// op (its flops at the rate of its element width, its bytes at the memory
/// bandwidth) and the links between devices. Propagation weighs a choice's
/// communication against the compute it saves or repeats on every rank
/// (computing a contraction replicated instead of one all_reduce of its
/// partial result), so the two must be in the same unit.
struct DeviceProfile {
  std::string name;
  /// Flop/s of elements wider than 16 bits (f32 without TF32).
  double flops32 = 0;
  /// Flop/s of 16-bit and narrower elements (tensor cores).
  double flops16 = 0;
  /// Bytes/s between the device and its memory.
  double memBandwidth = 0;
  /// Bytes of an op's operands and results that stay in cache (the device's
  /// share of it) and the bytes/s they move at; 0: no cache tier.
  double cacheBytes = 0;
  double cacheBandwidth = 0;
  CommCostParams comm;

  /// Seconds for `flops` flops on elements `bits` wide that read and write
  /// `bytes` bytes: the slower of the two (roofline).
  double computeTime(double flops, double bytes, unsigned bits) const;
  /// The two sides of it: the flops alone, the bytes alone (the first
  /// cacheBytes at cacheBandwidth, the rest at memBandwidth).
  double flopTime(double flops, unsigned bits) const;
  double memoryTime(double bytes) const;
};

/// The named profiles: "h100" (an H100 SXM: 67 TFLOP/s f32, 989 TFLOP/s
/// bf16, 3.35 TB/s HBM, NVLink at ~370 GB/s bus bandwidth per GPU for NCCL
/// rings, 10 us per collective) and "cpu" (a few x86 cores with simulated
/// ranks: ~50 GFLOP/s; an op's first 6 MiB at 25 GB/s from cache, the rest
/// at 10 GB/s from DRAM; collectives at ~5 GB/s, 100 us each).
/// Nullopt for another name.
std::optional<DeviceProfile> deviceProfile(std::string_view name);

/// Total cost of changing `from` into `to` for a tensor of `globalBytes`
/// bytes: the sum over axes that change (each costed with `from`'s sharding
/// of the other axes).
double reshardCost(const Mesh &mesh, const Layout &from, const Layout &to,
                   double globalBytes, const CommCostParams &p = {});

} // namespace spmd

#endif // SPMD_CORE_COSTMODEL_H
