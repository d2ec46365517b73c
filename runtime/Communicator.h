//===- Communicator.h - Collectives of one rank of a mesh ------*- C++ -*-===//
//
// The interface every backend (in-process threads, MPI, later NCCL) gives the
// executor: collectives on typed contiguous row-major blocks over a group of
// mesh devices, named by mesh axes. Semantics follow the spmd dialect's
// collectives (dialects/spmd/SPMDOps.td):
//
//  * allGather(dim): concatenation in group order of every member's block
//    along `dim`; members may contribute different sizes there ("v" style,
//    zero included); all other dims agree.
//  * allReduce(kind): element-wise sum/avg/max/min of equally shaped blocks;
//    f16/bf16 accumulate in f32. `out.data == in.data` is allowed.
//  * reduceScatter(dim, kind): the reduction's torch.chunk `i` along `dim`
//    goes to member `i` (chunks may be uneven or empty).
//  * allToAll(split, concat): member `i` splits its block into torch.chunks
//    along `split`, chunk `j` goes to member `j`, which concatenates what it
//    receives in group order along `concat`. Blocks may differ on `concat`.
//  * barrier, and checkFingerprint (compares a caller-given fingerprint).
//
// The group over mesh axes `axes` is ::spmd::Mesh::group(device, axes);
// member order is Mesh::groupIndex. A call passes its own block's shape; the
// backend exchanges shapes, so output sizes need not be known in advance (the
// output buffer only needs enough capacity) and the result carries the
// output's shape. Validation runs on the data every member exchanged, so a
// bad call fails the same way on every member of the group.
//
// With verifyCollectives on, each collective first compares its Fingerprint
// (kind, group axes, dtype, the dims that must agree, sequence number) across
// the group and fails on every member, naming both fingerprints, at the first
// difference.
//
// Output buffers must not overlap any input (except in-place allReduce).
// Integer avg truncates toward zero. Each rank issues its collectives from
// one thread, one at a time; different groups run concurrently. Errors start
// with the call ("allGather #3 on mesh axes [tp] (ranks 1, 3): ...").
//
// Buffers are host memory for the in-process and MPI backends; an NCCL
// backend takes device pointers through the same calls (the shape exchange
// is a small header all-gather, which NCCL can do too).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_COMMUNICATOR_H
#define SPMD_RUNTIME_COMMUNICATOR_H

#include "core/Layout.h"
#include "runtime/DType.h"
#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace spmd {

/// Mesh axis indices naming a group.
using Axes = std::vector<int64_t>;

enum class CollectiveKind : uint8_t {
  AllGather,
  AllReduce,
  ReduceScatter,
  AllToAll,
  Barrier,
  Fingerprint,
};
const char *collectiveName(CollectiveKind kind);

/// What ranks of a group compare before a collective.
struct Fingerprint {
  CollectiveKind kind = CollectiveKind::Barrier;
  Axes axes;
  DType dtype = DType::F32;
  ReduceKind reduce = ReduceKind::Sum; // AllReduce, ReduceScatter
  int64_t dim0 = -1;                   // gather/scatter dim, or split dim
  int64_t dim1 = -1;                   // concat dim
  Shape shape; // the block's shape, -1 on dims members may differ on
  uint64_t sequence = 0;

  bool operator==(const Fingerprint &o) const;
  bool operator!=(const Fingerprint &o) const { return !(*this == o); }
  /// e.g. "allGather(axes=[tp], dim=1, f32, shape=[4, ?], seq=7)".
  std::string str(const Mesh &mesh) const;
};

/// One member's side of a collective, as exchanged within the group.
struct CallDesc {
  CollectiveKind kind = CollectiveKind::Barrier;
  DType dtype = DType::F32;
  ReduceKind reduce = ReduceKind::Sum;
  int64_t dim0 = -1, dim1 = -1;
  Shape shape;
  uint64_t capacityBytes = 0;
  uint64_t sequence = 0;
  Fingerprint fingerprint;
};

/// The fixed-size form of a CallDesc that message-passing backends (MPI,
/// NCCL) exchange within the group before every collective. `hVerify` is
/// left for the backend: whether this member asks for fingerprint checks.
namespace callheader {
constexpr size_t kMaxRank = 16;
constexpr size_t kMaxAxes = 8;
enum : size_t {
  hKind,
  hDType,
  hReduce,
  hDim0,
  hDim1,
  hSeq,
  hCapacity,
  hRank,
  hShape,
  hFpKind = hShape + kMaxRank,
  hFpDType,
  hFpReduce,
  hFpDim0,
  hFpDim1,
  hFpSeq,
  hFpNumAxes,
  hFpAxes,
  hFpRank = hFpAxes + kMaxAxes,
  hFpShape,
  hVerify = hFpShape + kMaxRank,
  kHeaderWords,
};

/// Encodes `call` into kHeaderWords words at `header`; false if the call has
/// more than kMaxRank dims or kMaxAxes group axes.
bool encode(const CallDesc &call, int64_t *header);
CallDesc decode(const int64_t *header);
} // namespace callheader

/// An input block and an output buffer.
struct InBlock {
  const void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;
};
struct OutBlock {
  void *data = nullptr;
  size_t capacityBytes = 0;
};

struct [[nodiscard]] CollectiveResult {
  Status status;
  Shape shape; // the output block's shape when status is ok
  bool ok() const { return status.ok(); }
};

/// "[tp] (ranks 1, 3)": the axes by name and the members of the group of
/// `device`.
std::string describeGroup(const Mesh &mesh, const Axes &axes, int64_t device);

/// Checks the calls of all members of a group (in group order; `group` holds
/// their devices) against each other and computes every member's output
/// shape. Everything it looks at was exchanged, so every member gets the same
/// answer.
Status planCollective(const Mesh &mesh, const std::vector<int64_t> &group,
                      const std::vector<const CallDesc *> &members, bool verify,
                      std::vector<Shape> &outShapes);

class Communicator {
public:
  Communicator(Mesh mesh, int64_t device);
  virtual ~Communicator();

  const Mesh &mesh() const { return theMesh; }
  /// This rank's device number in the mesh (row-major over the axes).
  int64_t device() const { return theDevice; }
  virtual const char *backendName() const = 0;

  void setVerifyCollectives(bool on) { verify = on; }
  bool verifyCollectives() const { return verify; }
  /// How long a collective may wait for the rest of its group.
  virtual void setTimeoutSeconds(double seconds) { timeout = seconds; }
  double timeoutSeconds() const { return timeout; }
  /// How many collectives this rank has issued.
  uint64_t sequence() const { return nextSequence; }

  CollectiveResult allGather(const InBlock &in, OutBlock out, const Axes &axes,
                             int64_t dim);
  CollectiveResult allReduce(const InBlock &in, OutBlock out, const Axes &axes,
                             ReduceKind kind);
  CollectiveResult reduceScatter(const InBlock &in, OutBlock out,
                                 const Axes &axes, int64_t dim,
                                 ReduceKind kind);
  CollectiveResult allToAll(const InBlock &in, OutBlock out, const Axes &axes,
                            int64_t splitDim, int64_t concatDim);
  Status barrier(const Axes &axes);
  /// Fails on every member of the group unless all pass equal fingerprints.
  Status checkFingerprint(const Axes &axes, const Fingerprint &fingerprint);
  /// spmd.shard: this device's torch.chunk (its group index over `axes`)
  /// of a group-replicated block along `dim`. Local: nothing is sent and
  /// no sequence number is used.
  CollectiveResult shard(const InBlock &in, OutBlock out, const Axes &axes,
                         int64_t dim) const;

  /// This rank gives up: every other rank's pending and future collectives
  /// fail naming this rank and `reason` (the MPI backend stops the job).
  virtual void abort(const std::string &reason) = 0;

  /// "allGather #3 on mesh axes [tp] (ranks 0, 1)", for messages.
  std::string describeCall(const CallDesc &call, const Axes &axes) const;

  /// Mesh axis names to indices ("tp" -> 1), or an error.
  Status resolveAxes(const std::vector<std::string> &names, Axes &axes) const;

protected:
  /// Runs one validated-locally call; `in`/`out` may be null for
  /// Barrier/Fingerprint.
  virtual CollectiveResult execute(const CallDesc &call, const Axes &axes,
                                   const void *in, void *out) = 0;

private:
  CollectiveResult issue(CallDesc call, const Axes &axes, const void *in,
                         void *out);

  Mesh theMesh;
  int64_t theDevice;
  bool verify = false;
  double timeout = 60.0;
  uint64_t nextSequence = 0;
};

} // namespace spmd

#endif // SPMD_RUNTIME_COMMUNICATOR_H
