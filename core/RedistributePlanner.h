//===- RedistributePlanner.h - plan a layout change as collectives -*- C++ -*-//
//
// Plain C++ (no MLIR): finds the cheapest sequence of collectives and local
// steps that turns a tensor in one layout into the same tensor in another.
//
// The search is a Dijkstra over layouts. Every step is valid under the
// nesting of core/Layout.h (several mesh axes sharding one tensor dim nest
// left to right in mesh order) and under the documented semantics of the
// spmd collectives (all_gather concatenates in group order; reduce_scatter,
// all_to_all and shard hand group member i torch.chunk i):
//  * AllGather(A, d): A is the innermost (last in mesh order) axes sharding
//    d, listed in mesh order; concatenating in group order restores the
//    enclosing chunk exactly.
//  * ReduceScatter(A, d) / LocalShard(A, d) / AllToAll(A, i <- j): the axes A
//    become the innermost axes sharding the split dim (all after every axis
//    already sharding it). With several axes the op splits flat (torch.chunk
//    of k = |group|), so such a step is only taken when the flat split equals
//    the nested one for every local size the dim can have.
//  * AllToAll(A, i <- j) also needs A to be the innermost axes sharding j.
//  * LocalPartial(A, kind): R -> P(kind). For sum, group index 0 keeps the
//    value and the others hold 0; for avg, max and min everyone keeps it.
// Layouts whose partial kinds do not commute (max or min together with any
// other kind) have no well-defined value; they are rejected as input and
// never used as intermediate states.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CORE_REDISTRIBUTEPLANNER_H
#define SPMD_CORE_REDISTRIBUTEPLANNER_H

#include "core/CostModel.h"
#include "core/Layout.h"

#include <cstdint>
#include <string>
#include <vector>

namespace spmd {

/// Collectives cost what core/CostModel.h says, the input's bytes being
/// those of the largest shard (uneven shards: the ring runs at its pace).
/// Local steps cost `localStep` so that, among equally priced plans, fewer
/// steps win.
struct RedistributeCostModel {
  CommCostParams comm;
  double localStep = 1e-9;
  /// The search gives up after settling this many layouts (meshes with many
  /// axes) and returns the plan through the replicated layout: reduce and
  /// gather everything, then slice and split locally.
  int64_t maxStates = 200000;
};

struct RedistributeStep {
  enum class Kind {
    AllGather,     // axes, dim
    AllReduce,     // axes, reduce
    ReduceScatter, // axes, dim, reduce
    AllToAll,      // axes, splitDim (new shard dim), concatDim (old one)
    LocalShard,    // axes, dim: R -> S(dim), a local slice
    LocalPartial,  // axes, reduce: R -> P(reduce), local
  };
  Kind kind = Kind::AllGather;
  /// Mesh axes of the group, in mesh order (also the group order).
  std::vector<int64_t> axes;
  int64_t dim = -1;                    // AllGather, ReduceScatter, LocalShard
  int64_t splitDim = -1;               // AllToAll
  int64_t concatDim = -1;              // AllToAll
  ReduceKind reduce = ReduceKind::Sum; // AllReduce, ReduceScatter, LocalPartial
  /// The layout after this step.
  Layout after;
  double cost = 0;

  /// False for LocalShard and LocalPartial, which send nothing.
  bool isCollective() const;
  /// "all_gather([tp], dim 0) -> [S(0), R]" with axis names from `mesh`.
  std::string str(const Mesh &mesh) const;
};

const char *stepKindName(RedistributeStep::Kind kind);

struct RedistributePlan {
  std::vector<RedistributeStep> steps;
  double cost = 0;
  /// Empty on success, else why no plan exists (invalid input).
  std::string error;

  bool ok() const { return error.empty(); }
  int64_t numCollectives() const;
  std::string str(const Mesh &mesh) const;
};

/// True if the value of a layout with these partial kinds is well defined:
/// at most one kind, or only sum and avg (both linear, so the order of the
/// reductions does not matter).
bool partialKindsCommute(const Layout &layout);

/// Plans source -> target for a tensor of `globalShape` with elements of
/// `elementBytes` bytes. Returns an empty plan when they are equal, and a
/// plan with `error` set when an input is invalid.
RedistributePlan planRedistribute(const Mesh &mesh,
                                  const std::vector<int64_t> &globalShape,
                                  int64_t elementBytes, const Layout &source,
                                  const Layout &target,
                                  const RedistributeCostModel &cost = {});

} // namespace spmd

#endif // SPMD_CORE_REDISTRIBUTEPLANNER_H
