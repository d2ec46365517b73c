//===- RankBuffers.h - A schedule's sizes and buffers on one rank -*- C++
//-*-===//
//
// What every executor (CPU, GPU, emulated GPU) works out at the start of a
// run of a Schedule on one rank: the arguments' shapes, the values of
// Schedule::sizes (argument dims, torch.chunk sizes and offsets from the
// rank's mesh coordinates), the shape of any buffer under them, and where
// the runtime-sized (Heap) buffers go in one region, placed by liveness like
// the compiler's static arena.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_RANKBUFFERS_H
#define SPMD_RUNTIME_RANKBUFFERS_H

#include "runtime/Plan.h"

#include <optional>
#include <string>
#include <vector>

namespace spmd::plan {

class RankBuffers {
public:
  /// Binds `schedule` to mesh device `device` with argument shapes
  /// `shapes` (empty: the declared ones, which must then be static).
  /// Heap offsets are multiples of `alignment`. Returns an error message
  /// naming the argument whose shape does not fit its type or the
  /// runtime-sized buffer whose bytes overflow int64, or "".
  std::string bind(const Schedule &schedule, int64_t device,
                   const std::vector<Shape> &shapes, int64_t alignment);

  /// The shape of `ref` on this rank.
  Shape resolve(const BufferRef &ref) const;
  /// Bytes of `ref` on this rank.
  int64_t bytes(const BufferRef &ref) const;
  const std::vector<Shape> &argShapes() const { return args; }
  /// Schedule::sizes on this rank.
  const std::vector<int64_t> &sizes() const { return values; }
  int64_t heapOffset(int64_t id) const { return heapOffsets[id]; }
  /// Bytes of the region holding every Heap buffer.
  int64_t heapBytes() const { return heapTotal; }

private:
  /// bytes(), or std::nullopt where a size or the product overflows.
  std::optional<int64_t> checkedBytes(const BufferRef &ref) const;
  /// Places the Heap buffers; an error where their bytes overflow int64.
  std::string placeHeapBuffers(const Schedule &schedule, int64_t alignment);

  std::vector<Shape> args;
  std::vector<int64_t> values;
  std::vector<int64_t> heapOffsets;
  int64_t heapTotal = 0;
};

} // namespace spmd::plan

#endif // SPMD_RUNTIME_RANKBUFFERS_H
