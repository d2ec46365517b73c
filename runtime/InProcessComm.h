//===- InProcessComm.h - All ranks as threads of one process ---*- C++ -*-===//
//
// Every rank of the mesh is a thread; a collective's members publish their
// buffers in a per-group arena and read each other's buffers directly
// (one copy per byte moved, no staging). Two generation-counted waits per
// collective: after everyone has published (the last arriver validates the
// calls once for the group) and after everyone has finished reading.
//
// Failure: a rank that calls abort(reason), or a wait that exceeds the
// timeout, fails the whole world; every pending and later collective of
// every rank then returns an error naming the failed rank and the reason.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_INPROCESSCOMM_H
#define SPMD_RUNTIME_INPROCESSCOMM_H

#include "runtime/Communicator.h"

#include <functional>
#include <map>
#include <memory>

namespace spmd {

struct InProcessShared;
struct InProcessArena;

struct InProcessOptions {
  double timeoutSeconds = 60.0;
  bool verifyCollectives = false;
};

class InProcessComm final : public Communicator {
public:
  InProcessComm(std::shared_ptr<InProcessShared> shared, int64_t device);
  ~InProcessComm() override;
  const char *backendName() const override { return "inproc"; }
  void abort(const std::string &reason) override;

protected:
  CollectiveResult execute(const CallDesc &call, const Axes &axes,
                           const void *in, void *out) override;

private:
  InProcessArena &arenaFor(const Axes &axes);

  std::shared_ptr<InProcessShared> shared;
  std::map<Axes, InProcessArena *> arenas; // this rank's groups, by axes
};

/// The ranks of one mesh, each with its communicator.
class InProcessWorld {
public:
  explicit InProcessWorld(Mesh mesh, InProcessOptions options = {});
  ~InProcessWorld();

  int64_t numRanks() const { return static_cast<int64_t>(comms.size()); }
  InProcessComm &comm(int64_t device) { return *comms[device]; }
  /// Runs `fn` for every rank on its own thread and joins them. If a
  /// thread cannot be started (the process's thread or memory limits), the
  /// world fails (the started ranks' collectives return errors), they are
  /// joined, and the message says which rank and why; empty otherwise.
  std::string run(const std::function<void(InProcessComm &)> &fn);
  /// Whether a rank aborted or timed out, and the message saying which.
  bool failed() const;
  std::string failureMessage() const;

private:
  std::shared_ptr<InProcessShared> shared;
  std::vector<std::unique_ptr<InProcessComm>> comms;
};

} // namespace spmd

#endif // SPMD_RUNTIME_INPROCESSCOMM_H
