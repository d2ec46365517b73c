//===- CommCollectives.h - Plan collectives over a Communicator -*- C++ -*-===//
//
// The plan executor's collective interface (runtime/Collectives.h) on top of
// the runtime communicators (runtime/Communicator.h: InProcessComm,
// MpiComm, later NCCL): element types map to DTypes, the plan's expected
// output shape becomes the output capacity and is checked against the shape
// the communicator computed from what the group exchanged.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_COMMCOLLECTIVES_H
#define SPMD_RUNTIME_COMMCOLLECTIVES_H

#include "runtime/Collectives.h"
#include "runtime/Communicator.h"

namespace spmd::plan {

class CommCollectives final : public Collectives {
public:
  explicit CommCollectives(Communicator &comm) : comm(comm) {}
  const Mesh &mesh() const override { return comm.mesh(); }
  Communicator &communicator() { return comm; }
  int64_t device() const override { return comm.device(); }
  std::string allGather(const void *in, const Shape &inShape, void *out,
                        const Shape &outShape, DType type,
                        const std::vector<int64_t> &axes, int64_t dim) override;
  std::string allReduce(const void *in, const Shape &shape, void *out,
                        DType type, const std::vector<int64_t> &axes,
                        ReduceKind kind) override;
  std::string reduceScatter(const void *in, const Shape &inShape, void *out,
                            const Shape &outShape, DType type,
                            const std::vector<int64_t> &axes, int64_t dim,
                            ReduceKind kind) override;
  std::string allToAll(const void *in, const Shape &inShape, void *out,
                       const Shape &outShape, DType type,
                       const std::vector<int64_t> &axes, int64_t split,
                       int64_t concat) override;

  /// Tests: this rank's all-reduces use max instead of the plan's kind, a
  /// mismatched collective for --verify-collectives to catch.
  void mismatchForTesting() { mismatch = true; }

private:
  Communicator &comm;
  bool mismatch = false;
};

} // namespace spmd::plan

#endif // SPMD_RUNTIME_COMMCOLLECTIVES_H
