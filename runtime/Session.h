//===- Session.h - A plan held on its ranks between runs --------*- C++ -*-===//
//
// What the Python module (frontend/torch/native) runs: a plan's ranks with
// their arguments, executors and arenas kept from one run to the next, so
// a training step's parameters and optimizer state stay sharded in the
// ranks between calls. The ranks are threads of this process (in-process
// collectives), or, in an mpirun job, this process holds its own rank (MPI
// collectives; reading a global value is then collective: every process
// must ask for the same ones in the same order). Arguments are set and read
// as global values (scattered to and assembled from the ranks' blocks by
// their layouts); a run may feed results back into arguments (the updated
// state of a training step). Errors are messages ("" on success); a rank
// that fails stops the others (in an mpirun job, the whole job), and the
// session then refuses to run.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_SESSION_H
#define SPMD_RUNTIME_SESSION_H

#include "runtime/Executor.h"
#include "runtime/Npy.h"
#include "runtime/Plan.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace spmd::plan {

struct SessionState;
class RankSteps;
class Collectives;

/// Makes rank `device`'s steps (on a backend) with collectives `comm`, its
/// argument blocks `blocks` (a CPU rank keeps using them), `allShapes[r]`
/// rank r's argument shapes; null and `error` on failure.
using RankMaker = std::function<std::unique_ptr<RankSteps>(
    int64_t device, Collectives *comm, std::vector<std::vector<char>> &blocks,
    const std::vector<std::vector<Shape>> &allShapes, std::string &error)>;

struct SessionOptions {
  double timeoutSeconds = 60;
  /// This process's rank of an mpirun job (MPI initialized), not threads.
  bool mpi = false;
  /// Compute threads per rank; 0: the cores divided among the ranks this
  /// machine runs (see setRankThreads).
  int64_t threadsPerRank = 0;
};

class Session {
public:
  /// The schedule and kernels must outlive the session. Arguments start as
  /// zeros of their global shapes. Null and `error` on failure.
  static std::unique_ptr<Session> create(const Schedule &schedule,
                                         const RankMaker &makeRank,
                                         SessionOptions options,
                                         std::string &error);
  /// Ranks on the CPU executor with these kernels.
  static RankMaker cpuRanks(const Schedule &schedule,
                            std::vector<KernelFn> kernels);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  const Schedule &schedule() const { return sched; }
  /// The ranks this process holds (every rank, or its own under MPI).
  const std::vector<int64_t> &ranks() const;
  /// Argument i's global shape (what setArg expects).
  Shape argGlobalShape(size_t i) const;

  /// Sets argument i to the global value `data` (row-major, of `type` and
  /// `shape`): every rank gets its block. `type` is the argument's, or f32
  /// for an f16/bf16 argument.
  std::string setArg(size_t i, DType type, const Shape &shape,
                     const void *data);
  /// Argument i's global value, assembled from the ranks' blocks.
  std::string getArg(size_t i, NpyArray &global) const;
  /// One run of every rank; then results 0..feed-1 become arguments
  /// 0..feed-1 (result and argument of the same type, shape and layout).
  std::string run(size_t feed = 0);
  /// Result i of the last run, assembled.
  std::string getResult(size_t i, NpyArray &global) const;
  int64_t runs() const { return numRuns; }
  /// Under MPI, returns when every process has called it (a no-op with
  /// threads).
  std::string barrier();
  /// Bytes of rank `rank`'s argument blocks (its arena is
  /// schedule().arenaBytes).
  int64_t argumentBytes(int64_t rank) const;

  /// Records every step of later runs (per rank) when on; false where a
  /// backend cannot (the GPU executors).
  bool setTrace(bool on);
  const std::vector<std::vector<TraceEvent>> &traces() const;
  void clearTrace();

private:
  // Out of line: SessionState is incomplete here.
  explicit Session(const Schedule &schedule);
  const Schedule &sched;
  std::unique_ptr<SessionState> state;
  int64_t numRuns = 0;
};

} // namespace spmd::plan

#endif // SPMD_RUNTIME_SESSION_H
