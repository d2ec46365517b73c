//===- MpiComm.h - One MPI process per rank --------------------*- C++ -*-===//
//
// The MPI backend: the process with world rank d is mesh device d. Every
// ordered set of mesh axes gets a sub-communicator (MPI_Comm_split, key =
// group index), created up front because creation is collective over the
// world. Each collective first allgathers a fixed-size header per member
// (call, shape, output capacity, fingerprint) so all members validate the
// same data (planCollective) and know everyone's sizes; then
// MPI_Allgatherv / Allreduce / Reduce_scatter / Alltoallv move the data,
// with packing only where a piece is not contiguous. f16/bf16 are reduced
// in f32.
//
// Faults: abort(reason) prints the rank and reason and calls MPI_Abort, so
// mpirun stops every rank and exits non-zero. A watchdog thread turns a
// collective that does not complete within the timeout into the same kind
// of abort, naming the collective and its group.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_MPICOMM_H
#define SPMD_RUNTIME_MPICOMM_H

#include "runtime/Communicator.h"

#include <memory>

namespace spmd {

class MpiComm final : public Communicator {
public:
  /// MPI_Init_thread (asking for MPI_THREAD_MULTIPLE: the watchdog may call
  /// MPI_Abort from its thread), unless MPI is already initialized.
  static Status initialize(int *argc, char ***argv);
  static void finalize();
  static int worldRank();
  static int worldSize();
  /// MPI is initialized and not yet finalized in this process.
  static bool active();
  /// Stops the whole job from this process, before or without a
  /// communicator: prints "spmd: rank R aborts: REASON" and MPI_Abort.
  /// Without it an error on one rank (a missing input, say) left that rank
  /// waiting in MPI_Finalize and the others in communicator setup forever.
  [[noreturn]] static void abortWorld(const std::string &reason);

  /// This process's communicator for `mesh`; collective over the world,
  /// whose size must be the mesh's device count.
  static Status create(const Mesh &mesh, double timeoutSeconds,
                       std::unique_ptr<MpiComm> &comm);
  ~MpiComm() override;

  const char *backendName() const override { return "mpi"; }
  /// Prints "spmd: rank R aborts: REASON" and stops the whole job.
  [[noreturn]] void abort(const std::string &reason) override;

  struct State;

protected:
  CollectiveResult execute(const CallDesc &call, const Axes &axes,
                           const void *in, void *out) override;

private:
  MpiComm(const Mesh &mesh, int64_t device);
  std::unique_ptr<State> state;
};

} // namespace spmd

#endif // SPMD_RUNTIME_MPICOMM_H
