//===- Ranks.h - spmd-run's ranks: threads (inproc) or processes (mpi) -===//
//
// How spmd-run runs its ranks, with the plan executor's collectives on the
// runtime communicators (through runtime/CommCollectives):
// * runInProcess: every rank a thread of this process (runtime/InProcessComm);
// * MpiRun: this process's rank of an mpirun job (runtime/MpiComm), and the
//   gathering of every rank's results for assembly. Without MPI in the
//   build, create() fails with a message.
// Kept apart from spmd-run.cpp so the communicator's spmd::Shape helpers do
// not meet the plan's.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_RANKS_H
#define SPMD_RUNTIME_RANKS_H

#include "runtime/Collectives.h"
#include "runtime/Plan.h"

#include <functional>
#include <memory>
#include <string>

namespace spmd {

/// A rank's failure: stops the other ranks' collectives with `reason`.
using AbortFn = std::function<void(const std::string &reason)>;
/// One rank's work.
using RankFn =
    std::function<void(int64_t device, plan::Collectives &, const AbortFn &)>;

/// Runs `fn` for every device of `mesh` on its own thread and joins them.
/// `mismatchRank`'s all-reduces use another reduction (a test of
/// --verify-collectives).
/// Returns an error if a rank's thread could not be started.
std::string runInProcess(const Mesh &mesh, double timeoutSeconds, bool verify,
                         int64_t mismatchRank, const RankFn &fn);

class MpiRun {
public:
  /// MPI_Init (a no-op without MPI); "" or an error.
  static std::string initialize(int *argc, char ***argv);
  static void finalize();
  /// Whether MPI is initialized (and not finalized) in this process.
  static bool active();
  /// Prints the reason naming this process's rank and stops every process
  /// of the job (an error before or outside any collective).
  [[noreturn]] static void abortJob(const std::string &reason);
  /// This process's rank on `mesh` (collective over the job); null and
  /// `error` on failure.
  static std::unique_ptr<MpiRun> create(const Mesh &mesh, double timeout,
                                        bool verify, std::string &error);
  virtual ~MpiRun();
  virtual int64_t device() const = 0;
  virtual plan::Collectives &collectives() = 0;
  /// Prints the reason and stops every process of the job.
  [[noreturn]] virtual void abort(const std::string &reason) = 0;
  /// All-gathers every rank's results (flattened) so that every process
  /// holds `outputs[d][i]` and `outShapes[d][i]` of every rank `d`.
  virtual std::string
  gatherResults(const plan::Schedule &schedule,
                std::vector<std::vector<std::vector<char>>> &outputs,
                std::vector<std::vector<Shape>> &outShapes) = 0;
  /// The same for any tensors: `blocks[me][i]` (of shape `shapes[me][i]`)
  /// in, every rank's out.
  virtual std::string
  gatherTensors(const std::vector<plan::TensorInfo> &tensors,
                std::vector<std::vector<std::vector<char>>> &blocks,
                std::vector<std::vector<Shape>> &shapes) = 0;
};

} // namespace spmd

#endif // SPMD_RUNTIME_RANKS_H
