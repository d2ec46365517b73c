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
// NOTE for integration: the runtime communicators (runtime/Communicator.h,
// in-process and MPI) offer these operations; an adapter from that interface
// to this one is all the executor needs. ThreadCollectives below is a small
// in-process implementation for the plan tests.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_COLLECTIVES_H
#define SPMD_RUNTIME_COLLECTIVES_H

#include "runtime/Plan.h"

#include <condition_variable>
#include <memory>
#include <mutex>

namespace spmd::plan {

class Collectives {
public:
  virtual ~Collectives();
  virtual const Mesh &mesh() const = 0;
  virtual int64_t device() const = 0;
  /// Concatenation along `dim` of every member's block, in group order.
  virtual std::string allGather(const void *in, const Shape &inShape, void *out,
                                const Shape &outShape, ElemType type,
                                const std::vector<int64_t> &axes,
                                int64_t dim) = 0;
  /// Element-wise reduction of equally shaped blocks; `out` may be `in`.
  virtual std::string allReduce(const void *in, const Shape &shape, void *out,
                                ElemType type, const std::vector<int64_t> &axes,
                                ReduceKind kind) = 0;
  /// Reduction, then member i keeps torch.chunk i along `dim`.
  virtual std::string reduceScatter(const void *in, const Shape &inShape,
                                    void *out, const Shape &outShape,
                                    ElemType type,
                                    const std::vector<int64_t> &axes,
                                    int64_t dim, ReduceKind kind) = 0;
  /// Member i sends torch.chunk j along `split` to member j, which
  /// concatenates what it receives along `concat` in group order.
  virtual std::string allToAll(const void *in, const Shape &inShape, void *out,
                               const Shape &outShape, ElemType type,
                               const std::vector<int64_t> &axes, int64_t split,
                               int64_t concat) = 0;
};

/// State shared by the ranks of one in-process world.
struct ThreadWorldState;

/// All ranks as threads of one process: members publish their input blocks,
/// wait for each other, compute their own output from the members' blocks,
/// and wait again before anyone reuses its input.
class ThreadCollectives final : public Collectives {
public:
  ThreadCollectives(std::shared_ptr<ThreadWorldState> world, int64_t device);
  const Mesh &mesh() const override;
  int64_t device() const override { return theDevice; }
  std::string allGather(const void *in, const Shape &inShape, void *out,
                        const Shape &outShape, ElemType type,
                        const std::vector<int64_t> &axes, int64_t dim) override;
  std::string allReduce(const void *in, const Shape &shape, void *out,
                        ElemType type, const std::vector<int64_t> &axes,
                        ReduceKind kind) override;
  std::string reduceScatter(const void *in, const Shape &inShape, void *out,
                            const Shape &outShape, ElemType type,
                            const std::vector<int64_t> &axes, int64_t dim,
                            ReduceKind kind) override;
  std::string allToAll(const void *in, const Shape &inShape, void *out,
                       const Shape &outShape, ElemType type,
                       const std::vector<int64_t> &axes, int64_t split,
                       int64_t concat) override;
  /// Makes every pending and later collective of every rank fail.
  void abort(const std::string &reason);
  /// Tests: appended to this rank's fingerprints, to fake a rank running a
  /// different collective.
  void setFingerprintSalt(std::string salt) { this->salt = std::move(salt); }

  /// With `verifyCollectives`, each collective first compares a fingerprint
  /// (kind, group axes, dtype, the dims that must agree, sequence number)
  /// across the group; the first mismatch fails every rank, naming both.
  static std::shared_ptr<ThreadWorldState>
  makeWorld(const Mesh &mesh, double timeoutSeconds = 60,
            bool verifyCollectives = false);

private:
  std::string publishAndWait(const void *in, const Shape &shape,
                             const char *kind, ElemType type,
                             const std::vector<int64_t> &axes, int64_t free,
                             const std::string &params);
  std::string finish();

  std::shared_ptr<ThreadWorldState> world;
  int64_t theDevice;
  uint64_t sequence = 0;
  std::string salt;
};

/// Copies the box of size `extent` at `srcOffset` of a row-major `src` to
/// `dstOffset` of a row-major `dst`.
void copyBox(const void *src, const Shape &srcShape, const Shape &srcOffset,
             void *dst, const Shape &dstShape, const Shape &dstOffset,
             const Shape &extent, size_t elemBytes);

/// `acc[i] = reduce(acc[i], x[i])` for `n` elements.
void reduceInto(void *acc, const void *x, int64_t n, ElemType type,
                ReduceKind kind);
/// Divides `n` elements by `divisor` (for avg).
void scaleBy(void *data, int64_t n, ElemType type, double divisor);

} // namespace spmd::plan

#endif // SPMD_RUNTIME_COLLECTIVES_H
