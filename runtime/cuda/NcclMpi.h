//===- NcclMpi.h - Bootstrap NCCL through MPI ------------------*- C++ -*-===//
//
// Under mpirun: world rank r is mesh device r; rank 0's ncclUniqueId is
// broadcast with MPI_Bcast; the GPU is the rank's index among the ranks of
// its node (MPI_COMM_TYPE_SHARED) unless given. MPI must be initialized
// (MpiComm::initialize).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_NCCLMPI_H
#define SPMD_RUNTIME_CUDA_NCCLMPI_H

#include "runtime/cuda/NcclComm.h"

namespace spmd {
namespace cuda {

/// `gpu` < 0: the node-local rank.
Status createNcclCommWithMpi(const Mesh &mesh, int gpu, double timeoutSeconds,
                             std::unique_ptr<NcclComm> &comm);

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_NCCLMPI_H
