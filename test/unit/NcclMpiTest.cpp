//===- NcclMpiTest.cpp - NCCL bootstrapped through MPI (mpirun -np 2) -----===//
//
// Without a GPU: every rank's createNcclCommWithMpi fails with the driver's
// message and the job ends normally (no hang, no crash). With GPUs: an
// all-reduce over the world checks the communicator works.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/NcclMpi.h"
#include "runtime/MpiComm.h"

#include <mpi.h>

#include <cstdio>
#include <vector>

using namespace spmd;
using namespace spmd::cuda;

int main(int argc, char **argv) {
  Status s = MpiComm::initialize(&argc, &argv);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  int rank = MpiComm::worldRank(), size = MpiComm::worldSize();
  Mesh mesh{{"x"}, {size}};
  int count = 0;
  bool haveGpu = deviceCount(count).ok() && count > 0;
  std::unique_ptr<NcclComm> comm;
  s = createNcclCommWithMpi(mesh, haveGpu ? rank % count : -1, 30, comm);
  int failed = 0;
  if (!haveGpu) {
    // Must fail cleanly, naming the missing driver or device.
    if (s.ok() || s.message().find("CUDA") == std::string::npos) {
      std::fprintf(stderr, "rank %d: expected a clean no-GPU error, got '%s'\n",
                   rank, s.message().c_str());
      failed = 1;
    } else {
      std::printf("rank %d: %s\n", rank, s.message().c_str());
    }
  } else if (!s.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, s.message().c_str());
    failed = 1;
  } else {
    const Device &dev = comm->gpu();
    CUdeviceptr buf;
    dev.api().cuMemAlloc(&buf, 16);
    float v[4] = {1.0f * rank, 2, 3, 4};
    dev.api().cuMemcpyHtoD(buf, v, 16);
    CollectiveResult r = comm->allReduce(
        {reinterpret_cast<void *>(buf), DType::F32, {4}},
        {reinterpret_cast<void *>(buf), 16}, {0}, ReduceKind::Sum);
    failed = !r.ok() || !comm->synchronize().ok();
    dev.api().cuMemcpyDtoH(v, buf, 16);
    failed |= v[0] != size * (size - 1) / 2.0f || v[3] != 4.0f * size;
    dev.api().cuMemFree(buf);
    comm.reset();
  }
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MpiComm::finalize();
  return any;
}
