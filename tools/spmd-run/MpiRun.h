//===- MpiRun.h - spmd-run's --comm mpi: one rank per process ---*- C++ -*-===//
//
// This process's rank of an mpirun job: the plan executor's collectives
// through runtime/MpiComm (via runtime/CommCollectives), and the gathering
// of every rank's results for assembly. Kept apart from spmd-run.cpp so the
// communicator's spmd::Shape helpers do not meet the plan's. Without MPI in
// the build, create() fails with a message.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TOOLS_SPMD_RUN_MPIRUN_H
#define SPMD_TOOLS_SPMD_RUN_MPIRUN_H

#include "runtime/Collectives.h"
#include "runtime/Plan.h"

#include <memory>
#include <string>

namespace spmd {

class MpiRun {
public:
  /// MPI_Init (a no-op without MPI); "" or an error.
  static std::string initialize(int *argc, char ***argv);
  static void finalize();
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
                std::vector<std::vector<plan::Shape>> &outShapes) = 0;
};

} // namespace spmd

#endif // SPMD_TOOLS_SPMD_RUN_MPIRUN_H
