//===- NcclComm.h - Collectives on GPUs through NCCL -----------*- C++ -*-===//
//
// The NCCL backend of runtime/Communicator.h: one process (or one thread)
// per GPU, buffers are device pointers (InBlock/OutBlock data hold
// CUdeviceptr values), and collectives are enqueued on a communication
// stream (setStream; by default the communicator's own).
//
// Communicators: a world communicator from a shared ncclUniqueId, and one
// per ordered set of mesh axes, split from it (ncclCommSplit, color = the
// group's first device, key = group index) on first use. Under SPMD every
// rank issues the same collectives in the same order, so every rank reaches
// each first use, which ncclCommSplit (collective over the world) needs.
//
// Bootstraps: createFromEnv (RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR /
// MASTER_PORT as torchrun sets them; the id travels through TcpStore),
// MPI (NcclMpi.h: MPI_Bcast of the id), and createSingleProcess (one thread
// per GPU in one process).
//
// Each collective first all-gathers a fixed-size header per member (call,
// shape, capacity, fingerprint) so every member validates the same data
// (planCollective) and knows all sizes; this is a host synchronization per
// collective. Then the data: ncclAllGather / ncclAllReduce /
// ncclReduceScatter directly when blocks are even along the leading dims,
// otherwise "v" style through padding to the largest member in a scratch
// buffer with strided device copies (cuMemcpy2DAsync) on each side;
// all-to-all as grouped ncclSend/ncclRecv. f16/bf16 reductions accumulate
// in f32 like the CPU backends (widened and narrowed by library kernels
// compiled for the device on first use through setRecompiler's), unless
// setNativeHalfReduce(true) trades that for half the traffic; integer avg
// is rejected.
//
// Faults: every communicator is non-blocking; waits poll the stream and
// ncclCommGetAsyncError against the timeout. An NCCL error or a timeout
// aborts every communicator of the rank (ncclCommAbort) and fails this and
// every later call with a message; peers then fail the same way (remote
// error or their own timeout). Data-phase errors of an enqueued collective
// surface at the next collective or at synchronize().
//
// Communicator::shard copies on the host; for device buffers use
// shardOnDevice.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_NCCLCOMM_H
#define SPMD_RUNTIME_CUDA_NCCLCOMM_H

#include "runtime/Communicator.h"
#include "runtime/cuda/CudaRuntime.h"

#include <memory>
#include <string>
#include <vector>

namespace spmd {
namespace cuda {

class NcclComm final : public Communicator {
public:
  /// A fresh ncclUniqueId's bytes (rank 0 makes it; everyone needs it).
  static Status newUniqueId(std::string &id);

  /// This rank's communicator: mesh device `device` on GPU `gpu`; every rank
  /// passes the same id. Collective over all mesh devices.
  static Status create(const Mesh &mesh, int64_t device, int gpu,
                       const std::string &uniqueId, double timeoutSeconds,
                       std::unique_ptr<NcclComm> &comm);
  /// torchrun-style: mesh device RANK on GPU LOCAL_RANK; WORLD_SIZE must be
  /// the mesh's device count.
  static Status createFromEnv(const Mesh &mesh, double timeoutSeconds,
                              std::unique_ptr<NcclComm> &comm);
  /// One process: mesh device i on GPU gpus[i]; each communicator is then
  /// used from its own thread.
  static Status
  createSingleProcess(const Mesh &mesh, const std::vector<int> &gpus,
                      double timeoutSeconds,
                      std::vector<std::unique_ptr<NcclComm>> &comms);
  ~NcclComm() override;

  const char *backendName() const override { return "nccl"; }
  /// Aborts every NCCL communicator of this rank; later calls fail with
  /// `reason`.
  void abort(const std::string &reason) override;

  const Device &gpu() const;
  /// The stream collectives are enqueued on (the executor's communication
  /// stream); null restores the communicator's own.
  void setStream(CUstream stream);
  CUstream stream() const;
  /// Reduce f16/bf16 in NCCL's 16-bit arithmetic instead of f32.
  void setNativeHalfReduce(bool on);
  /// Compiles the f32 widening kernels of f16/bf16 reductions for this GPU
  /// (the CUDA target's NVRTC: targets/cuda/Nvrtc.h nvrtcRecompiler); such
  /// reductions fail without one unless native.
  void setRecompiler(Recompiler recompile);
  /// Every member's block shape (group order) for the NEXT collective, as
  /// the plan computed them from mesh coordinates: that collective skips
  /// the header exchange (and its host synchronization, so it can be
  /// captured in a CUDA Graph) and is not verified. Capture after a warm-up
  /// step: scratch buffers grow (cuMemAlloc) on first use.
  void setPlannedShapes(std::vector<Shape> memberShapes);
  /// Waits (with the timeout) until everything enqueued has completed.
  Status synchronize();
  /// Communicator::shard for device buffers (a strided device copy).
  CollectiveResult shardOnDevice(const InBlock &in, OutBlock out,
                                 const Axes &axes, int64_t dim);

  struct State;

protected:
  CollectiveResult execute(const CallDesc &call, const Axes &axes,
                           const void *in, void *out) override;

private:
  NcclComm(const Mesh &mesh, int64_t device);
  std::unique_ptr<State> state;
};

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_NCCLCOMM_H
