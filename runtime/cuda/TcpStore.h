//===- TcpStore.h - Hand a small blob from rank 0 to every rank -*- C++ -*-===//
//
// The bootstrap of NCCL without MPI (torchrun style): rank 0 creates the
// ncclUniqueId and serves it on MASTER_ADDR:MASTER_PORT; every other rank
// connects (retrying until rank 0 listens) and receives it. Both sides give
// up after a timeout with a message naming the address, so a missing rank 0
// or a blocked port does not hang a job. Plain POSIX sockets; no CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_TCPSTORE_H
#define SPMD_RUNTIME_CUDA_TCPSTORE_H

#include "runtime/Status.h"

#include <string>

namespace spmd {
namespace cuda {

/// Rank 0: listens on `port` (all interfaces) and sends `blob` to
/// `clients` connecting ranks, each of which first says its rank.
Status serveBlob(int port, const std::string &blob, int clients,
                 double timeoutSeconds);

/// Rank `rank` > 0: connects to host:port and receives `size` bytes.
Status fetchBlob(const std::string &host, int port, int rank, size_t size,
                 double timeoutSeconds, std::string &blob);

/// torchrun's variables.
struct LaunchEnv {
  int rank = 0, worldSize = 1, localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
};
/// Reads RANK, WORLD_SIZE, LOCAL_RANK (default: RANK), MASTER_ADDR
/// (default 127.0.0.1), MASTER_PORT (default 29500); an error naming the
/// variable when one is missing or malformed.
Status readLaunchEnv(LaunchEnv &env);

/// Exchanges `blob` (rank 0's) through the store: rank 0 serves, others
/// fetch; every rank ends with rank 0's bytes.
Status shareFromRankZero(const LaunchEnv &env, std::string &blob,
                         double timeoutSeconds);

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_TCPSTORE_H
