//===- RankBuffers.cpp - A schedule's sizes and buffers on one rank -------===//

#include "runtime/RankBuffers.h"

#include "core/Checked.h"

#include <algorithm>

using namespace spmd;
using namespace spmd::plan;

std::string RankBuffers::bind(const Schedule &schedule, int64_t device,
                              const std::vector<Shape> &shapes,
                              int64_t alignment) {
  args.clear();
  for (size_t i = 0; i < schedule.args.size(); ++i) {
    const Shape &declared = schedule.args[i].localShape;
    Shape actual = shapes.empty() ? declared : shapes[i];
    bool ok = actual.size() == declared.size();
    for (size_t d = 0; ok && d < declared.size(); ++d)
      ok = actual[d] >= 0 && (declared[d] < 0 || declared[d] == actual[d]);
    if (!ok)
      return "argument " + std::to_string(i) + " has shape " +
             shapeStr(actual) + ", which does not fit its type";
    args.push_back(actual);
  }
  values.clear();
  const Mesh &mesh = schedule.mesh;
  std::vector<int64_t> coords = mesh.coords(device);
  for (const SizeSource &size : schedule.sizes) {
    switch (size.kind) {
    case SizeSource::Kind::ArgDim:
      values.push_back(args[size.arg][size.dim]);
      break;
    case SizeSource::Kind::GroupChunk:
      values.push_back(chunkRange(size.globalSize, mesh.groupSize(size.axes),
                                  mesh.groupIndex(device, size.axes))
                           .size);
      break;
    case SizeSource::Kind::LocalChunk:
    case SizeSource::Kind::LocalOffset: {
      std::vector<int64_t> splits, indices;
      for (int64_t axis : size.axes) {
        splits.push_back(mesh.axisSizes[axis]);
        indices.push_back(coords[axis]);
      }
      Range range = nestedChunkRange(size.globalSize, splits, indices);
      values.push_back(size.kind == SizeSource::Kind::LocalOffset ? range.offset
                                                                  : range.size);
      break;
    }
    }
  }
  return placeHeapBuffers(schedule, alignment);
}

Shape RankBuffers::resolve(const BufferRef &ref) const {
  // An argument under its own (maybe dynamic) type, or a static view of it.
  if (ref.where == BufferRef::Where::Arg && !ref.isStatic())
    return args[ref.index];
  Shape shape = ref.shape;
  size_t slot = 0;
  for (int64_t &d : shape)
    if (d < 0) {
      d = values[ref.sizeSlots[slot]];
      if (!ref.sizeScales.empty())
        d = d * ref.sizeScales[slot].first / ref.sizeScales[slot].second;
      ++slot;
    }
  return shape;
}

int64_t RankBuffers::bytes(const BufferRef &ref) const {
  return numElements(resolve(ref)) * static_cast<int64_t>(dtypeSize(ref.type));
}

std::optional<int64_t> RankBuffers::checkedBytes(const BufferRef &ref) const {
  // resolve(), without wrapping: a plan's sizes are untrusted.
  std::optional<int64_t> n = static_cast<int64_t>(dtypeSize(ref.type));
  size_t slot = 0;
  for (int64_t d : ref.shape) {
    if (d < 0) {
      d = values[ref.sizeSlots[slot]];
      if (!ref.sizeScales.empty()) {
        auto [num, den] = ref.sizeScales[slot];
        std::optional<int64_t> scaled = checkedMul(d, num);
        if (!scaled || den <= 0)
          return std::nullopt;
        d = *scaled / den;
      }
      ++slot;
    }
    if (d < 0 || !(n = checkedMul(*n, d)))
      return std::nullopt;
  }
  return n;
}

std::string RankBuffers::placeHeapBuffers(const Schedule &schedule,
                                          int64_t alignment) {
  // First fit, largest first, by step liveness; results live to the end.
  size_t n = static_cast<size_t>(schedule.numHeapBuffers);
  std::vector<int64_t> size(n, 0), first(n, -1), last(n, -1);
  std::string error;
  auto use = [&](const BufferRef &ref, int64_t at) {
    if (ref.where != BufferRef::Where::Heap)
      return;
    size_t id = static_cast<size_t>(ref.index);
    std::optional<int64_t> need = checkedBytes(ref);
    if (!need) {
      if (error.empty())
        error = "runtime-sized buffer " + std::to_string(id) + " (" +
                shapeStr(ref.shape) + ") has a byte size that overflows int64";
      return;
    }
    size[id] = std::max(size[id], *need);
    if (first[id] < 0)
      first[id] = at;
    last[id] = std::max(last[id], at);
  };
  int64_t end = static_cast<int64_t>(schedule.steps.size());
  for (int64_t i = 0; i < end; ++i)
    for (const BufferRef &ref : schedule.steps[i].operands)
      use(ref, i);
  for (const BufferRef &ref : schedule.resultRefs)
    use(ref, end);
  if (!error.empty())
    return error;
  // A collective runs asynchronously on a GPU until the first later step
  // touching its buffers (spmd-plan-memory does the same for the arena):
  // its heap buffers stay live until then.
  for (int64_t i = 0; i < end; ++i) {
    const Step &step = schedule.steps[i];
    if (!isCollective(step.kind))
      continue;
    auto same = [](const BufferRef &a, const BufferRef &b) {
      return a.where == b.where && a.index == b.index;
    };
    int64_t done = end;
    for (int64_t j = i + 1; j < end && done == end; ++j)
      for (const BufferRef &ref : schedule.steps[j].operands)
        if (same(ref, step.operands[0]) || same(ref, step.operands[1]))
          done = j;
    for (const BufferRef &ref : step.operands)
      if (ref.where == BufferRef::Where::Heap)
        last[ref.index] = std::max(last[ref.index], done);
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return size[a] > size[b]; });
  heapOffsets.assign(n, 0);
  heapTotal = 0;
  std::vector<size_t> placed;
  for (size_t id : order) {
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t p : placed)
      if (first[p] <= last[id] && first[id] <= last[p])
        taken.push_back({heapOffsets[p], heapOffsets[p] + size[p]});
    std::sort(taken.begin(), taken.end());
    // Every end is below 2^63: offset + size and the rounding up are checked.
    int64_t offset = 0;
    for (auto [lo, hi] : taken) {
      std::optional<int64_t> end = checkedAdd(offset, size[id]);
      if (end && *end <= lo)
        break;
      std::optional<int64_t> next = checkedAdd(hi, alignment - 1);
      if (!next)
        return "the runtime-sized buffers need more than 2^63 bytes";
      offset = std::max(offset, *next / alignment * alignment);
    }
    std::optional<int64_t> end = checkedAdd(offset, size[id]);
    if (!end)
      return "the runtime-sized buffers need more than 2^63 bytes";
    heapOffsets[id] = offset;
    heapTotal = std::max(heapTotal, *end);
    placed.push_back(id);
  }
  return "";
}
