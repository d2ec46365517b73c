//===- Collectives.cpp - In-process collectives for plans -----------------===//

#include "runtime/Collectives.h"

#include <chrono>
#include <cstring>

using namespace spmd;
using namespace spmd::plan;

Collectives::~Collectives() = default;

void plan::copyBox(const void *src, const Shape &srcShape,
                   const Shape &srcOffset, void *dst, const Shape &dstShape,
                   const Shape &dstOffset, const Shape &extent,
                   size_t elemBytes) {
  size_t rank = extent.size();
  if (numElements(extent) == 0)
    return;
  if (rank == 0) {
    std::memcpy(dst, src, elemBytes);
    return;
  }
  // Row-major strides in elements.
  std::vector<int64_t> srcStride(rank, 1), dstStride(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) {
    srcStride[d - 1] = srcStride[d] * srcShape[d];
    dstStride[d - 1] = dstStride[d] * dstShape[d];
  }
  // The innermost dim is contiguous: one memcpy per row of the box.
  std::vector<int64_t> index(rank, 0);
  const char *s = static_cast<const char *>(src);
  char *t = static_cast<char *>(dst);
  size_t rowBytes = static_cast<size_t>(extent[rank - 1]) * elemBytes;
  while (true) {
    int64_t so = 0, to = 0;
    for (size_t d = 0; d < rank; ++d) {
      so += (srcOffset[d] + index[d]) * srcStride[d];
      to += (dstOffset[d] + index[d]) * dstStride[d];
    }
    std::memcpy(t + to * elemBytes, s + so * elemBytes, rowBytes);
    // Next row: advance dims rank-2 .. 0.
    int64_t d = static_cast<int64_t>(rank) - 2;
    for (; d >= 0; --d) {
      if (++index[d] < extent[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

template <typename T>
static void reduceTyped(T *acc, const T *x, int64_t n, ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Avg:
    for (int64_t i = 0; i < n; ++i)
      acc[i] += x[i];
    return;
  case ReduceKind::Max:
    for (int64_t i = 0; i < n; ++i)
      acc[i] = x[i] > acc[i] ? x[i] : acc[i];
    return;
  case ReduceKind::Min:
    for (int64_t i = 0; i < n; ++i)
      acc[i] = x[i] < acc[i] ? x[i] : acc[i];
    return;
  }
}

void plan::reduceInto(void *acc, const void *x, int64_t n, ElemType type,
                      ReduceKind kind) {
  switch (type) {
  case ElemType::F32:
    return reduceTyped(static_cast<float *>(acc), static_cast<const float *>(x),
                       n, kind);
  case ElemType::F64:
    return reduceTyped(static_cast<double *>(acc),
                       static_cast<const double *>(x), n, kind);
  case ElemType::I32:
    return reduceTyped(static_cast<int32_t *>(acc),
                       static_cast<const int32_t *>(x), n, kind);
  case ElemType::I64:
    return reduceTyped(static_cast<int64_t *>(acc),
                       static_cast<const int64_t *>(x), n, kind);
  default:
    // 16-bit floats and i8: through double, one rounding per step.
    for (int64_t i = 0; i < n; ++i) {
      double a = loadElement(acc, type, i), b = loadElement(x, type, i);
      double r = kind == ReduceKind::Max   ? (b > a ? b : a)
                 : kind == ReduceKind::Min ? (b < a ? b : a)
                                           : a + b;
      storeElement(acc, type, i, r);
    }
  }
}

void plan::scaleBy(void *data, int64_t n, ElemType type, double divisor) {
  for (int64_t i = 0; i < n; ++i)
    storeElement(data, type, i, loadElement(data, type, i) / divisor);
}

namespace spmd::plan {
struct ThreadWorldState {
  Mesh mesh;
  std::mutex mutex;
  std::condition_variable cv;
  int64_t arrived = 0;
  uint64_t generation = 0;
  std::vector<const void *> inputs;
  std::vector<Shape> shapes;
  std::vector<std::string> fingerprints;
  bool verify = false;
  bool failed = false;
  std::string failure;
  double timeoutSeconds = 60;

  /// Waits until every rank arrives; "" or why the world failed.
  std::string barrier() {
    std::unique_lock<std::mutex> lock(mutex);
    if (failed)
      return failure;
    uint64_t gen = generation;
    if (++arrived == mesh.numDevices()) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return "";
    }
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(timeoutSeconds);
    while (generation == gen && !failed) {
      if (cv.wait_until(lock, deadline) == std::cv_status::timeout &&
          generation == gen && !failed) {
        failed = true;
        failure = "collective timed out after " +
                  std::to_string(timeoutSeconds) +
                  " s waiting for the other ranks";
        cv.notify_all();
      }
    }
    // A barrier that completed succeeds even if a rank failed right after.
    return generation != gen ? "" : failure;
  }
};
} // namespace spmd::plan

std::shared_ptr<ThreadWorldState>
ThreadCollectives::makeWorld(const Mesh &mesh, double timeoutSeconds,
                             bool verifyCollectives) {
  auto world = std::make_shared<ThreadWorldState>();
  world->mesh = mesh;
  world->verify = verifyCollectives;
  world->timeoutSeconds = timeoutSeconds;
  world->inputs.assign(mesh.numDevices(), nullptr);
  world->shapes.assign(mesh.numDevices(), {});
  world->fingerprints.assign(mesh.numDevices(), {});
  return world;
}

ThreadCollectives::ThreadCollectives(std::shared_ptr<ThreadWorldState> world,
                                     int64_t device)
    : world(std::move(world)), theDevice(device) {}

const Mesh &ThreadCollectives::mesh() const { return world->mesh; }

void ThreadCollectives::abort(const std::string &reason) {
  std::lock_guard<std::mutex> lock(world->mutex);
  if (!world->failed) {
    world->failed = true;
    world->failure = "rank " + std::to_string(theDevice) + " failed: " + reason;
  }
  world->cv.notify_all();
}

std::string ThreadCollectives::publishAndWait(
    const void *in, const Shape &shape, const char *kind, ElemType type,
    const std::vector<int64_t> &axes, int64_t free, const std::string &params) {
  world->inputs[theDevice] = in;
  world->shapes[theDevice] = shape;
  uint64_t seq = sequence++;
  if (world->verify) {
    std::string dims = "[";
    for (size_t d = 0; d < shape.size(); ++d)
      dims += (d ? ", " : "") + (static_cast<int64_t>(d) == free
                                     ? std::string("?")
                                     : std::to_string(shape[d]));
    std::string axesText;
    for (int64_t a : axes)
      axesText += (axesText.empty() ? "" : ", ") + world->mesh.axisNames[a];
    world->fingerprints[theDevice] =
        std::string(kind) + "(axes=[" + axesText + "]" + params + ", " +
        elemTypeName(type) + ", shape=" + dims +
        "], seq=" + std::to_string(seq) + ")" + salt;
  }
  if (std::string err = world->barrier(); !err.empty())
    return err;
  if (!world->verify)
    return "";
  for (int64_t member : world->mesh.group(theDevice, axes)) {
    if (world->fingerprints[member] == world->fingerprints[theDevice])
      continue;
    std::string message =
        "collective mismatch: rank " + std::to_string(theDevice) + " runs " +
        world->fingerprints[theDevice] + ", rank " + std::to_string(member) +
        " runs " + world->fingerprints[member];
    std::lock_guard<std::mutex> lock(world->mutex);
    if (!world->failed) {
      world->failed = true;
      world->failure = message;
    }
    world->cv.notify_all();
    return world->failure;
  }
  return "";
}

std::string ThreadCollectives::finish() { return world->barrier(); }

static std::string checkOutput(const char *what, const Shape &actual,
                               const Shape &expected) {
  if (actual == expected)
    return "";
  return std::string(what) + ": the group's blocks give an output of shape " +
         shapeStr(actual) + ", the plan's output buffer is " +
         shapeStr(expected);
}

/// Member shapes must agree on every dim but `free` (-1: all dims).
static std::string checkShapes(const ThreadWorldState &w,
                               const std::vector<int64_t> &group, int64_t free,
                               const char *what) {
  const Shape &first = w.shapes[group[0]];
  for (int64_t member : group) {
    const Shape &s = w.shapes[member];
    bool ok = s.size() == first.size();
    for (size_t d = 0; ok && d < s.size(); ++d)
      ok = static_cast<int64_t>(d) == free || s[d] == first[d];
    if (!ok)
      return std::string(what) + ": rank " + std::to_string(member) +
             " passes shape " + shapeStr(s) + ", rank " +
             std::to_string(group[0]) + " passes " + shapeStr(first);
  }
  return "";
}

std::string ThreadCollectives::allGather(const void *in, const Shape &inShape,
                                         void *out, const Shape &expected,
                                         ElemType type,
                                         const std::vector<int64_t> &axes,
                                         int64_t dim) {
  if (std::string err = publishAndWait(in, inShape, "all_gather", type, axes,
                                       dim, ", dim=" + std::to_string(dim));
      !err.empty())
    return err;
  std::vector<int64_t> group = world->mesh.group(theDevice, axes);
  std::string err = checkShapes(*world, group, dim, "all_gather");
  if (err.empty()) {
    Shape outShape = inShape;
    outShape[dim] = 0;
    for (int64_t m : group)
      outShape[dim] += world->shapes[m][dim];
    err = checkOutput("all_gather", outShape, expected);
  }
  if (err.empty()) {
    Shape outShape = expected;
    Shape zero(inShape.size(), 0), at(inShape.size(), 0);
    for (int64_t m : group) {
      const Shape &s = world->shapes[m];
      copyBox(world->inputs[m], s, zero, out, outShape, at, s, elemSize(type));
      at[dim] += s[dim];
    }
  }
  std::string done = finish();
  return err.empty() ? done : err;
}

std::string ThreadCollectives::allReduce(const void *in, const Shape &shape,
                                         void *out, ElemType type,
                                         const std::vector<int64_t> &axes,
                                         ReduceKind kind) {
  if (std::string err =
          publishAndWait(in, shape, "all_reduce", type, axes, -1,
                         std::string(", ") + reduceKindName(kind));
      !err.empty())
    return err;
  std::vector<int64_t> group = world->mesh.group(theDevice, axes);
  std::string err = checkShapes(*world, group, -1, "all_reduce");
  int64_t n = numElements(shape);
  size_t bytes = static_cast<size_t>(n) * elemSize(type);
  // Every member reduces in group order, so all get bit-identical results;
  // in place, the others may still read `in`: reduce into a scratch copy.
  std::vector<char> scratch(bytes);
  if (err.empty() && n > 0) {
    std::memcpy(scratch.data(), world->inputs[group[0]], bytes);
    for (size_t i = 1; i < group.size(); ++i)
      reduceInto(scratch.data(), world->inputs[group[i]], n, type, kind);
    if (kind == ReduceKind::Avg)
      scaleBy(scratch.data(), n, type, static_cast<double>(group.size()));
  }
  std::string done = finish();
  if (err.empty() && done.empty() && n > 0)
    std::memcpy(out, scratch.data(), bytes);
  return err.empty() ? done : err;
}

std::string ThreadCollectives::reduceScatter(const void *in,
                                             const Shape &inShape, void *out,
                                             const Shape &expected,
                                             ElemType type,
                                             const std::vector<int64_t> &axes,
                                             int64_t dim, ReduceKind kind) {
  if (std::string err = publishAndWait(
          in, inShape, "reduce_scatter", type, axes, -1,
          ", dim=" + std::to_string(dim) + ", " + reduceKindName(kind));
      !err.empty())
    return err;
  std::vector<int64_t> group = world->mesh.group(theDevice, axes);
  std::string err = checkShapes(*world, group, -1, "reduce_scatter");
  if (err.empty()) {
    int64_t index = world->mesh.groupIndex(theDevice, axes);
    Range r =
        chunkRange(inShape[dim], static_cast<int64_t>(group.size()), index);
    Shape box = inShape, at(inShape.size(), 0), zero(inShape.size(), 0);
    box[dim] = r.size;
    at[dim] = r.offset;
    err = checkOutput("reduce_scatter", box, expected);
  }
  if (err.empty()) {
    int64_t index = world->mesh.groupIndex(theDevice, axes);
    Range r =
        chunkRange(inShape[dim], static_cast<int64_t>(group.size()), index);
    Shape box = inShape, at(inShape.size(), 0), zero(inShape.size(), 0);
    box[dim] = r.size;
    at[dim] = r.offset;
    int64_t n = numElements(box);
    std::vector<char> part(static_cast<size_t>(n) * elemSize(type));
    copyBox(world->inputs[group[0]], inShape, at, out, box, zero, box,
            elemSize(type));
    for (size_t i = 1; i < group.size() && n > 0; ++i) {
      copyBox(world->inputs[group[i]], inShape, at, part.data(), box, zero, box,
              elemSize(type));
      reduceInto(out, part.data(), n, type, kind);
    }
    if (kind == ReduceKind::Avg && n > 0)
      scaleBy(out, n, type, static_cast<double>(group.size()));
  }
  std::string done = finish();
  return err.empty() ? done : err;
}

std::string ThreadCollectives::allToAll(const void *in, const Shape &inShape,
                                        void *out, const Shape &expected,
                                        ElemType type,
                                        const std::vector<int64_t> &axes,
                                        int64_t split, int64_t concat) {
  if (std::string err =
          publishAndWait(in, inShape, "all_to_all", type, axes, concat,
                         ", split=" + std::to_string(split) +
                             ", concat=" + std::to_string(concat));
      !err.empty())
    return err;
  std::vector<int64_t> group = world->mesh.group(theDevice, axes);
  std::string err = checkShapes(*world, group, concat, "all_to_all");
  if (err.empty()) {
    int64_t index = world->mesh.groupIndex(theDevice, axes);
    int64_t k = static_cast<int64_t>(group.size());
    Range mine = chunkRange(inShape[split], k, index);
    Shape outShape = inShape;
    outShape[split] = mine.size;
    outShape[concat] = 0;
    for (int64_t m : group)
      outShape[concat] +=
          split == concat ? mine.size : world->shapes[m][concat];
    err = checkOutput("all_to_all", outShape, expected);
  }
  if (err.empty()) {
    int64_t index = world->mesh.groupIndex(theDevice, axes);
    int64_t k = static_cast<int64_t>(group.size());
    Range mine = chunkRange(inShape[split], k, index);
    Shape outShape = expected;
    Shape at(inShape.size(), 0);
    for (int64_t m : group) {
      const Shape &s = world->shapes[m];
      Shape from(s.size(), 0), box = s;
      from[split] = mine.offset;
      box[split] = mine.size;
      copyBox(world->inputs[m], s, from, out, outShape, at, box,
              elemSize(type));
      at[concat] += box[concat];
    }
  }
  std::string done = finish();
  return err.empty() ? done : err;
}
