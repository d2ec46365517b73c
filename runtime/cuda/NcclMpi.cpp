//===- NcclMpi.cpp - Bootstrap NCCL through MPI ---------------------------===//

#include "runtime/cuda/NcclMpi.h"

#include <mpi.h>

namespace spmd {
namespace cuda {

Status createNcclCommWithMpi(const Mesh &mesh, int gpu, double timeoutSeconds,
                             std::unique_ptr<NcclComm> &comm) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return Status::error("nccl: MPI is not initialized");
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != mesh.numDevices())
    return Status::error("nccl: " + std::to_string(size) +
                         " MPI processes for a mesh of " +
                         std::to_string(mesh.numDevices()) + " devices");
  if (gpu < 0) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                        MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &gpu);
    MPI_Comm_free(&node);
  }
  // Every rank learns whether rank 0 could make an id (e.g. no GPU), so
  // none waits in ncclCommInitRank for a rank that gave up.
  std::string id(128, '\0');
  Status s = Status::success();
  int good = 1;
  if (rank == 0) {
    s = NcclComm::newUniqueId(id);
    good = s.ok();
  }
  MPI_Bcast(&good, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!good)
    return rank == 0 ? s
                     : Status::error("nccl: rank 0 could not create the "
                                     "NCCL unique id");
  MPI_Bcast(&id[0], static_cast<int>(id.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
  return NcclComm::create(mesh, rank, gpu, id, timeoutSeconds, comm);
}

} // namespace cuda
} // namespace spmd
