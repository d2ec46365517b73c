//===- CostModel.h - communication cost of layout changes -------*- C++ -*-===//
//
// A simple alpha-beta model of what it costs to change a tensor's layout on
// a mesh, used by spmd-propagate to resolve conflicts (and reusable by the
// partitioner to rank redistribution plans). Plain C++: no MLIR.
//
// Every mesh axis whose placement changes costs one collective over that
// axis: `alpha` (latency) plus bytes moved per rank times `beta` (inverse
// bandwidth). `bytes` is the size of the tensor as the group of that axis
// sees it: the global size divided by the shards the *other* axes make.
//
//   S -> R           all_gather      (k-1)/k   * bytes
//   P -> R           all_reduce      2(k-1)/k  * bytes
//   P -> S           reduce_scatter  (k-1)/k   * bytes
//   S(i) -> S(j)     all_to_all      (k-1)/k   * bytes / k
//   S -> P           all_gather, then keep on one member: as S -> R
//   P(a) -> P(b)     all_reduce, then keep on one member: as P -> R
//   R -> S, R -> P   local (slice / keep on group index 0): free
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CORE_COSTMODEL_H
#define SPMD_CORE_COSTMODEL_H

#include "core/Layout.h"

#include <cstdint>
#include <vector>

namespace spmd {

struct CommCostParams {
  /// Seconds per collective (latency).
  double alpha = 10e-6;
  /// Seconds per byte (inverse bandwidth, here 50 GB/s).
  double beta = 1.0 / 50e9;
};

/// Cost of changing one mesh axis of size `k` from `from` to `to` for a
/// tensor that the axis' group sees as `bytes` bytes.
inline double axisReshardCost(const Placement &from, const Placement &to,
                              int64_t k, double bytes,
                              const CommCostParams &p = {}) {
  if (from == to || k <= 1 || from.isReplicate())
    return 0.0;
  double frac = double(k - 1) / double(k);
  if (from.isShard()) {
    if (to.isShard()) // all_to_all
      return p.alpha + p.beta * frac * bytes / double(k);
    return p.alpha + p.beta * frac * bytes; // all_gather (R or P target)
  }
  // from is partial.
  if (to.isShard()) // reduce_scatter
    return p.alpha + p.beta * frac * bytes;
  return p.alpha + p.beta * 2.0 * frac * bytes; // all_reduce
}

/// Bytes of the tensor as seen by the group of mesh axis `axis` under
/// `layout`: the global size divided by the shards of every other axis.
inline double axisGroupBytes(const Mesh &mesh, const Layout &layout,
                             int64_t axis, double globalBytes) {
  double bytes = globalBytes;
  for (int64_t a = 0; a < mesh.rank(); ++a)
    if (a != axis && a < int64_t(layout.placements.size()) &&
        layout.placements[a].isShard())
      bytes /= double(mesh.axisSizes[a]);
  return bytes;
}

/// Total cost of changing `from` into `to` for a tensor of `globalBytes`
/// bytes: the sum over axes that change (each costed with `from`'s sharding
/// of the other axes).
inline double reshardCost(const Mesh &mesh, const Layout &from,
                          const Layout &to, double globalBytes,
                          const CommCostParams &p = {}) {
  double cost = 0.0;
  for (int64_t a = 0; a < mesh.rank(); ++a)
    cost +=
        axisReshardCost(from.placements[a], to.placements[a], mesh.axisSizes[a],
                        axisGroupBytes(mesh, from, a, globalBytes), p);
  return cost;
}

} // namespace spmd

#endif // SPMD_CORE_COSTMODEL_H
