//===- Layout.h - Mesh, placements and shard arithmetic ---------*- C++ -*-===//
//
// Plain C++ (no MLIR) description of a device mesh and of a tensor layout on
// it, in DTensor's vocabulary, plus the arithmetic every other component uses
// to find which part of a global tensor a rank owns.
//
// Uneven sizes follow torch.chunk: with c = ceil(n/k), chunk r of k covers
// [r*c, min(n, (r+1)*c)); trailing chunks may be short or empty. Several mesh
// axes sharding one tensor dim nest left to right: the first axis chunks the
// dim, the next chunks that chunk, and so on.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CORE_LAYOUT_H
#define SPMD_CORE_LAYOUT_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmd {

enum class ReduceKind { Sum, Avg, Max, Min };

const char *reduceKindName(ReduceKind kind);
std::optional<ReduceKind> parseReduceKind(std::string_view name);

/// One mesh axis' view of a tensor: shard a tensor dim, replicate, or hold a
/// term of a pending element-wise reduction.
struct Placement {
  enum class Kind { Replicate, Shard, Partial };
  Kind kind = Kind::Replicate;
  int64_t dim = 0;                     // for Shard
  ReduceKind reduce = ReduceKind::Sum; // for Partial

  static Placement replicate() { return {}; }
  static Placement shard(int64_t dim) { return {Kind::Shard, dim, {}}; }
  static Placement partial(ReduceKind r = ReduceKind::Sum) {
    return {Kind::Partial, 0, r};
  }
  bool isReplicate() const { return kind == Kind::Replicate; }
  bool isShard() const { return kind == Kind::Shard; }
  bool isShard(int64_t d) const { return isShard() && dim == d; }
  bool isPartial() const { return kind == Kind::Partial; }

  bool operator==(const Placement &o) const {
    return kind == o.kind && (kind != Kind::Shard || dim == o.dim) &&
           (kind != Kind::Partial || reduce == o.reduce);
  }
  bool operator!=(const Placement &o) const { return !(*this == o); }

  /// "R", "S(1)", "P(sum)".
  std::string str() const;
  /// Inverse of str(); whitespace inside the parentheses is allowed.
  static std::optional<Placement> parse(std::string_view text);
};

/// The most devices a mesh may have: every component enumerates them.
constexpr int64_t kMaxMeshDevices = int64_t(1) << 20;

/// A named N-D device mesh. Ranks are numbered row-major over the axes.
struct Mesh {
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;

  int64_t rank() const { return static_cast<int64_t>(axisSizes.size()); }
  int64_t numDevices() const;
  std::optional<int64_t> axisIndex(std::string_view name) const;
  std::vector<int64_t> coords(int64_t device) const;
  int64_t device(const std::vector<int64_t> &coords) const;
  /// The devices that share every coordinate of `device` except those on
  /// `axes`, ordered row-major over `axes` in the order given. This is the
  /// group of a collective over `axes`; the position of `device` in it is
  /// groupIndex().
  std::vector<int64_t> group(int64_t device,
                             const std::vector<int64_t> &axes) const;
  int64_t groupIndex(int64_t device, const std::vector<int64_t> &axes) const;
  int64_t groupSize(const std::vector<int64_t> &axes) const;
  /// Checks names are unique and non-empty, sizes positive and the device
  /// count at most kMaxMeshDevices; returns an error message or an empty
  /// string.
  std::string validate() const;
};

/// A half-open range [offset, offset + size) of one tensor dimension.
struct Range {
  int64_t offset = 0;
  int64_t size = 0;
  bool operator==(const Range &o) const {
    return offset == o.offset && size == o.size;
  }
};

/// torch.chunk: the largest chunk of n split k ways.
int64_t chunkCapacity(int64_t n, int64_t k);
/// torch.chunk: chunk `index` of n split k ways (possibly empty).
Range chunkRange(int64_t n, int64_t k, int64_t index);

/// A range nested through several splits: `splits[i]` chunks the result of
/// the splits before it, and `indices[i]` picks the chunk.
Range nestedChunkRange(int64_t n, const std::vector<int64_t> &splits,
                       const std::vector<int64_t> &indices);

/// One placement per mesh axis.
struct Layout {
  std::vector<Placement> placements;

  bool operator==(const Layout &o) const { return placements == o.placements; }
  bool operator!=(const Layout &o) const { return !(*this == o); }
  bool isReplicated() const;
  bool hasPartial() const;
  /// The mesh axes that shard tensor dim `dim`, in nesting order (mesh order).
  std::vector<int64_t> shardAxes(int64_t dim) const;
  /// "[S(0), R, P(sum)]".
  std::string str() const;
  /// Checks the layout against a mesh and, if given (rank >= 0), a tensor
  /// rank; returns an error message or an empty string.
  std::string validate(const Mesh &mesh, int64_t tensorRank = -1) const;

  static Layout replicated(int64_t meshRank) {
    return Layout{std::vector<Placement>(meshRank, Placement::replicate())};
  }
};

/// The part of a global tensor of shape `globalShape` that the device at mesh
/// coordinates `coords` holds under `layout`, one range per tensor dim.
std::vector<Range> localRanges(const Mesh &mesh, const Layout &layout,
                               const std::vector<int64_t> &globalShape,
                               const std::vector<int64_t> &coords);
std::vector<int64_t> localShape(const Mesh &mesh, const Layout &layout,
                                const std::vector<int64_t> &globalShape,
                                const std::vector<int64_t> &coords);
/// Per tensor dim: the local size if every device has the same one, else
/// nullopt (the local type then has a dynamic dim).
std::vector<std::optional<int64_t>>
uniformLocalShape(const Mesh &mesh, const Layout &layout,
                  const std::vector<int64_t> &globalShape);
/// Per tensor dim: the largest local size over all devices.
std::vector<int64_t> maxLocalShape(const Mesh &mesh, const Layout &layout,
                                   const std::vector<int64_t> &globalShape);

} // namespace spmd

#endif // SPMD_CORE_LAYOUT_H
