//===- Layout.cpp - Mesh, placements and shard arithmetic -----------------===//

#include "core/Layout.h"

#include "core/Checked.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <set>

namespace spmd {

const char *reduceKindName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Avg:
    return "avg";
  case ReduceKind::Max:
    return "max";
  case ReduceKind::Min:
    return "min";
  }
  return "?";
}

std::optional<ReduceKind> parseReduceKind(std::string_view name) {
  for (ReduceKind k :
       {ReduceKind::Sum, ReduceKind::Avg, ReduceKind::Max, ReduceKind::Min})
    if (name == reduceKindName(k))
      return k;
  return std::nullopt;
}

std::string Placement::str() const {
  switch (kind) {
  case Kind::Replicate:
    return "R";
  case Kind::Shard:
    return "S(" + std::to_string(dim) + ")";
  case Kind::Partial:
    return std::string("P(") + reduceKindName(reduce) + ")";
  }
  return "?";
}

static std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

std::optional<Placement> Placement::parse(std::string_view text) {
  text = trim(text);
  if (text == "R")
    return replicate();
  if (text.size() < 4 || text[1] != '(' || text.back() != ')')
    return std::nullopt;
  std::string_view arg = trim(text.substr(2, text.size() - 3));
  if (text[0] == 'S') {
    if (arg.empty() || arg.size() > 18)
      return std::nullopt;
    int64_t dim = 0;
    for (char c : arg) {
      if (!std::isdigit(static_cast<unsigned char>(c)))
        return std::nullopt;
      dim = dim * 10 + (c - '0');
    }
    return shard(dim);
  }
  if (text[0] == 'P')
    if (auto r = parseReduceKind(arg))
      return partial(*r);
  return std::nullopt;
}

int64_t Mesh::numDevices() const {
  int64_t n = 1;
  for (int64_t s : axisSizes)
    n *= s;
  return n;
}

std::optional<int64_t> Mesh::axisIndex(std::string_view name) const {
  for (size_t i = 0; i < axisNames.size(); ++i)
    if (axisNames[i] == name)
      return static_cast<int64_t>(i);
  return std::nullopt;
}

std::vector<int64_t> Mesh::coords(int64_t device) const {
  std::vector<int64_t> c(axisSizes.size());
  for (int64_t i = rank() - 1; i >= 0; --i) {
    c[i] = device % axisSizes[i];
    device /= axisSizes[i];
  }
  return c;
}

int64_t Mesh::device(const std::vector<int64_t> &c) const {
  int64_t d = 0;
  for (int64_t i = 0; i < rank(); ++i)
    d = d * axisSizes[i] + c[i];
  return d;
}

int64_t Mesh::groupSize(const std::vector<int64_t> &axes) const {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= axisSizes[a];
  return n;
}

std::vector<int64_t> Mesh::group(int64_t dev,
                                 const std::vector<int64_t> &axes) const {
  std::vector<int64_t> c = coords(dev);
  int64_t n = groupSize(axes);
  std::vector<int64_t> members;
  members.reserve(n);
  for (int64_t idx = 0; idx < n; ++idx) {
    // Row-major over `axes` in the order given: the last axis varies fastest.
    int64_t rest = idx;
    for (int64_t i = static_cast<int64_t>(axes.size()) - 1; i >= 0; --i) {
      c[axes[i]] = rest % axisSizes[axes[i]];
      rest /= axisSizes[axes[i]];
    }
    members.push_back(device(c));
  }
  return members;
}

int64_t Mesh::groupIndex(int64_t dev, const std::vector<int64_t> &axes) const {
  std::vector<int64_t> c = coords(dev);
  int64_t idx = 0;
  for (int64_t a : axes)
    idx = idx * axisSizes[a] + c[a];
  return idx;
}

std::string Mesh::validate() const {
  if (axisNames.size() != axisSizes.size())
    return "mesh has " + std::to_string(axisNames.size()) + " axis names but " +
           std::to_string(axisSizes.size()) + " sizes";
  if (axisNames.empty())
    return "mesh has no axes";
  std::set<std::string> seen;
  for (size_t i = 0; i < axisNames.size(); ++i) {
    if (axisNames[i].empty())
      return "mesh axis " + std::to_string(i) + " has an empty name";
    if (!seen.insert(axisNames[i]).second)
      return "mesh axis name '" + axisNames[i] + "' is used twice";
    if (axisSizes[i] <= 0)
      return "mesh axis '" + axisNames[i] + "' has non-positive size " +
             std::to_string(axisSizes[i]);
  }
  // Every component enumerates the devices (the partitioner, the runtime's
  // ranks): a bigger mesh would hang or overflow its int64 device numbers.
  std::optional<int64_t> devices = checkedProduct(axisSizes);
  if (!devices || *devices > kMaxMeshDevices)
    return "mesh has " +
           (devices ? std::to_string(*devices) + " devices"
                    : std::string("a device count that overflows int64")) +
           ", more than the supported 2^20 (" +
           std::to_string(kMaxMeshDevices) + ")";
  return {};
}

int64_t chunkCapacity(int64_t n, int64_t k) {
  assert(k > 0 && n >= 0);
  // Not (n + k - 1) / k, which wraps negative for n near INT64_MAX.
  return n / k + (n % k != 0);
}

Range chunkRange(int64_t n, int64_t k, int64_t index) {
  assert(index >= 0 && index < k);
  int64_t c = chunkCapacity(n, k);
  // A chunk's start, clamped to n: past it (trailing empty chunks) the
  // product may pass int64 too.
  auto start = [&](int64_t i) {
    std::optional<int64_t> s = checkedMul(i, c);
    return s ? std::min(n, *s) : n;
  };
  int64_t begin = start(index);
  int64_t end = start(index + 1);
  return {begin, end - begin};
}

Range nestedChunkRange(int64_t n, const std::vector<int64_t> &splits,
                       const std::vector<int64_t> &indices) {
  assert(splits.size() == indices.size());
  Range r{0, n};
  for (size_t i = 0; i < splits.size(); ++i) {
    Range inner = chunkRange(r.size, splits[i], indices[i]);
    r = {r.offset + inner.offset, inner.size};
  }
  return r;
}

bool Layout::isReplicated() const {
  return std::all_of(placements.begin(), placements.end(),
                     [](const Placement &p) { return p.isReplicate(); });
}

bool Layout::hasPartial() const {
  return std::any_of(placements.begin(), placements.end(),
                     [](const Placement &p) { return p.isPartial(); });
}

std::vector<int64_t> Layout::shardAxes(int64_t dim) const {
  std::vector<int64_t> axes;
  for (size_t i = 0; i < placements.size(); ++i)
    if (placements[i].isShard(dim))
      axes.push_back(static_cast<int64_t>(i));
  return axes;
}

std::string Layout::str() const {
  std::string s = "[";
  for (size_t i = 0; i < placements.size(); ++i) {
    if (i)
      s += ", ";
    s += placements[i].str();
  }
  return s + "]";
}

std::string Layout::validate(const Mesh &mesh, int64_t tensorRank) const {
  if (static_cast<int64_t>(placements.size()) != mesh.rank())
    return "layout has " + std::to_string(placements.size()) +
           " placements but the mesh has " + std::to_string(mesh.rank()) +
           " axes";
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement &p = placements[i];
    if (!p.isShard())
      continue;
    if (p.dim < 0 || (tensorRank >= 0 && p.dim >= tensorRank))
      return "placement " + p.str() + " on mesh axis '" + mesh.axisNames[i] +
             "' shards dim " + std::to_string(p.dim) + " of a rank-" +
             std::to_string(tensorRank) + " tensor";
  }
  return {};
}

static std::vector<int64_t> splitsOf(const Mesh &mesh,
                                     const std::vector<int64_t> &axes) {
  std::vector<int64_t> splits;
  for (int64_t a : axes)
    splits.push_back(mesh.axisSizes[a]);
  return splits;
}

std::vector<Range> localRanges(const Mesh &mesh, const Layout &layout,
                               const std::vector<int64_t> &globalShape,
                               const std::vector<int64_t> &coords) {
  std::vector<Range> ranges;
  for (size_t d = 0; d < globalShape.size(); ++d) {
    std::vector<int64_t> axes = layout.shardAxes(static_cast<int64_t>(d));
    std::vector<int64_t> indices;
    for (int64_t a : axes)
      indices.push_back(coords[a]);
    ranges.push_back(
        nestedChunkRange(globalShape[d], splitsOf(mesh, axes), indices));
  }
  return ranges;
}

std::vector<int64_t> localShape(const Mesh &mesh, const Layout &layout,
                                const std::vector<int64_t> &globalShape,
                                const std::vector<int64_t> &coords) {
  std::vector<int64_t> shape;
  for (const Range &r : localRanges(mesh, layout, globalShape, coords))
    shape.push_back(r.size);
  return shape;
}

/// Calls `fn` with the size of every chunk a dim of `n` elements can have
/// under the nested `splits`.
template <typename Fn>
static void forEachChunkSize(int64_t n, const std::vector<int64_t> &splits,
                             Fn fn) {
  std::vector<int64_t> idx(splits.size(), 0);
  while (true) {
    fn(nestedChunkRange(n, splits, idx).size);
    size_t i = splits.size();
    while (i > 0 && ++idx[i - 1] == splits[i - 1])
      idx[--i] = 0;
    if (i == 0)
      return;
  }
}

std::vector<std::optional<int64_t>>
uniformLocalShape(const Mesh &mesh, const Layout &layout,
                  const std::vector<int64_t> &globalShape) {
  std::vector<std::optional<int64_t>> shape;
  for (size_t d = 0; d < globalShape.size(); ++d) {
    std::vector<int64_t> splits =
        splitsOf(mesh, layout.shardAxes(static_cast<int64_t>(d)));
    std::optional<int64_t> common;
    bool uniform = true;
    forEachChunkSize(globalShape[d], splits, [&](int64_t size) {
      if (!common)
        common = size;
      else if (*common != size)
        uniform = false;
    });
    shape.push_back(uniform ? common : std::nullopt);
  }
  return shape;
}

std::vector<int64_t> maxLocalShape(const Mesh &mesh, const Layout &layout,
                                   const std::vector<int64_t> &globalShape) {
  std::vector<int64_t> shape;
  for (size_t d = 0; d < globalShape.size(); ++d) {
    int64_t best = 0;
    forEachChunkSize(globalShape[d],
                     splitsOf(mesh, layout.shardAxes(static_cast<int64_t>(d))),
                     [&](int64_t size) { best = std::max(best, size); });
    shape.push_back(best);
  }
  return shape;
}

} // namespace spmd
