//===- Collectives.h - What the executor needs from a communicator -*- C++
//-*-===//
//
// The minimal collective interface the plan executor calls, on contiguous
// row-major blocks over the group of mesh axes `axes` (Mesh::group order).
// Semantics follow the spmd dialect's collectives ("v" style, torch.chunk
// splits). `outShape` is the output shape the plan expects; a collective
// whose exchanged shapes give another one fails instead of writing past the
// buffer. Errors come back as a message ("" is success).
//
// The runtime communicators (runtime/Communicator.h: in-process, MPI)
// implement it through the adapter runtime/CommCollectives.h.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_COLLECTIVES_H
#define SPMD_RUNTIME_COLLECTIVES_H

#include "runtime/Plan.h"

#include <memory>

namespace spmd::plan {

class Collectives {
public:
  virtual ~Collectives();
  virtual const Mesh &mesh() const = 0;
  virtual int64_t device() const = 0;
  /// Concatenation along `dim` of every member's block, in group order.
  virtual std::string allGather(const void *in, const Shape &inShape, void *out,
                                const Shape &outShape, DType type,
                                const std::vector<int64_t> &axes,
                                int64_t dim) = 0;
  /// Element-wise reduction of equally shaped blocks; `out` may be `in`.
  virtual std::string allReduce(const void *in, const Shape &shape, void *out,
                                DType type, const std::vector<int64_t> &axes,
                                ReduceKind kind) = 0;
  /// Reduction, then member i keeps torch.chunk i along `dim`.
  virtual std::string reduceScatter(const void *in, const Shape &inShape,
                                    void *out, const Shape &outShape,
                                    DType type,
                                    const std::vector<int64_t> &axes,
                                    int64_t dim, ReduceKind kind) = 0;
  /// Member i sends torch.chunk j along `split` to member j, which
  /// concatenates what it receives along `concat` in group order.
  virtual std::string allToAll(const void *in, const Shape &inShape, void *out,
                               const Shape &outShape, DType type,
                               const std::vector<int64_t> &axes, int64_t split,
                               int64_t concat) = 0;
};

/// Runs collective `step` (AllGather, AllReduce, ReduceScatter, AllToAll:
/// operand 0 in, operand 1 out) through `comm`.
std::string runCollective(Collectives &comm, const Step &step, const void *in,
                          const Shape &inShape, void *out,
                          const Shape &outShape);

/// Copies the box of size `extent` at `srcOffset` of a row-major `src` to
/// `dstOffset` of a row-major `dst`.
void copyBox(const void *src, const Shape &srcShape, const Shape &srcOffset,
             void *dst, const Shape &dstShape, const Shape &dstOffset,
             const Shape &extent, size_t elemBytes);

/// `acc[i] = reduce(acc[i], x[i])` for `n` elements.
void reduceInto(void *acc, const void *x, int64_t n, DType type,
                ReduceKind kind);
/// Divides `n` elements by `divisor` (for avg).
void scaleBy(void *data, int64_t n, DType type, double divisor);

} // namespace spmd::plan

#endif // SPMD_RUNTIME_COLLECTIVES_H
