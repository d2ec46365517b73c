//===- Sharding.cpp - Global arrays to rank blocks and back ---------------===//

#include "runtime/Sharding.h"

#include "runtime/BlockOps.h"

#include <cstring>

namespace spmd {

static Status check(const Mesh &mesh, const Layout &layout,
                    const Shape &globalShape) {
  std::string e = mesh.validate();
  if (e.empty())
    e = layout.validate(mesh, static_cast<int64_t>(globalShape.size()));
  for (int64_t s : globalShape)
    if (e.empty() && s < 0)
      e = "invalid global shape " + shapeStr(globalShape);
  if (!e.empty())
    return Status::error("layout " + layout.str() + ": " + e);
  return Status::success();
}

static void splitRanges(const std::vector<Range> &ranges, Shape &offsets,
                        Shape &sizes) {
  offsets.clear();
  sizes.clear();
  for (const Range &r : ranges) {
    offsets.push_back(r.offset);
    sizes.push_back(r.size);
  }
}

Status scatterToLocal(const Mesh &mesh, const Layout &layout, DType dtype,
                      const void *global, const Shape &globalShape,
                      int64_t device, std::vector<char> &local,
                      Shape &localShape) {
  if (Status s = check(mesh, layout, globalShape); !s.ok())
    return s;
  if (device < 0 || device >= mesh.numDevices())
    return Status::error("device " + std::to_string(device) +
                         " is not in a mesh of " +
                         std::to_string(mesh.numDevices()));
  std::vector<int64_t> coords = mesh.coords(device);
  Shape offsets;
  splitRanges(localRanges(mesh, layout, globalShape, coords), offsets,
              localShape);
  size_t es = dtypeSize(dtype);
  local.assign(static_cast<size_t>(numElements(localShape)) * es, 0);
  // P(sum) keeps the value only on index 0 of its axis.
  for (size_t a = 0; a < layout.placements.size(); ++a) {
    const Placement &p = layout.placements[a];
    if (p.isPartial() && p.reduce == ReduceKind::Sum && coords[a] != 0)
      return Status::success();
  }
  Shape zero(globalShape.size(), 0);
  copyBox(local.data(), localShape, zero, global, globalShape, offsets,
          localShape, es);
  return Status::success();
}

Status assembleGlobal(const Mesh &mesh, const Layout &layout, DType dtype,
                      const Shape &globalShape,
                      const std::vector<const void *> &blocks, void *global) {
  if (Status s = check(mesh, layout, globalShape); !s.ok())
    return s;
  int64_t n = mesh.numDevices();
  if (static_cast<int64_t>(blocks.size()) != n)
    return Status::error("assembling " + layout.str() + " needs " +
                         std::to_string(n) + " blocks, got " +
                         std::to_string(blocks.size()));
  std::vector<int64_t> partialAxes;
  for (size_t a = 0; a < layout.placements.size(); ++a)
    if (layout.placements[a].isPartial())
      partialAxes.push_back(static_cast<int64_t>(a));
  size_t es = dtypeSize(dtype);
  Shape zero(globalShape.size(), 0);
  for (int64_t d = 0; d < n; ++d) {
    // One representative per distinct block: coordinate 0 on every axis
    // that does not shard.
    std::vector<int64_t> coords = mesh.coords(d);
    bool representative = true;
    for (size_t a = 0; a < coords.size(); ++a)
      if (!layout.placements[a].isShard() && coords[a] != 0)
        representative = false;
    if (!representative)
      continue;
    Shape offsets, shape;
    splitRanges(localRanges(mesh, layout, globalShape, coords), offsets, shape);
    int64_t count = numElements(shape);
    if (count == 0)
      continue;
    if (partialAxes.empty()) {
      copyBox(global, globalShape, offsets, blocks[d], shape, zero, shape, es);
      continue;
    }
    // Members over the partial axes, row-major (the last axis fastest):
    // reduce runs of the last axis' size, then the next, and so on.
    std::vector<const void *> terms;
    for (int64_t m : mesh.group(d, partialAxes))
      terms.push_back(blocks[m]);
    std::vector<std::vector<char>> storage;
    for (size_t i = partialAxes.size(); i-- > 0;) {
      int64_t k = mesh.axisSizes[partialAxes[i]];
      ReduceKind kind = layout.placements[partialAxes[i]].reduce;
      std::vector<std::vector<char>> next(terms.size() / k);
      std::vector<const void *> reduced;
      for (size_t g = 0; g < next.size(); ++g) {
        next[g].resize(count * es);
        reduceBuffers(dtype, kind, terms.data() + g * k, k, next[g].data(),
                      count);
        reduced.push_back(next[g].data());
      }
      storage = std::move(next);
      terms = std::move(reduced);
    }
    copyBox(global, globalShape, offsets, terms[0], shape, zero, shape, es);
  }
  return Status::success();
}

} // namespace spmd
