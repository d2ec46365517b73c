//===- CudaBackend.h - spmd-run --backend cuda / cuda-emu -------*- C++ -*-===//
//
// The GPU side of spmd-run. Once per run: the plan's kernels printed as
// CUDA (targets/cuda/CudaEmitter.h) with their launch rules, then either
// NVRTC-compiled (or the module spmd-emit-cuda{embed=true} put in the plan)
// for the GPU, or compiled for the host emulation (`cuda-emu`: the same
// source and executor on the CPU, runtime/cuda/EmuBackend.h). Per rank: its
// device (emulated, or GPU `rank % count`) with the rank's collectives, for
// runtime/cuda/DeviceExecutor.
//
// Collectives on GPUs: `--comm nccl` drives one GPU per rank from one
// process through NCCL; `--comm mpi` one GPU per process (NCCL bootstrapped
// through MPI); `--comm inproc` lets ranks share GPUs, with collectives
// staged through host memory (for checking plans on fewer GPUs than ranks).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CUDA_CUDABACKEND_H
#define SPMD_TARGETS_CUDA_CUDABACKEND_H

#include "runtime/Collectives.h"
#include "runtime/Plan.h"
#include "runtime/cuda/DeviceExecutor.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>

namespace spmd {

struct CudaRunOptions {
  bool emulate = false;
  std::string cxx = "c++";     // host compiler for the emulation
  std::string workDir;         // where the emulation's shared object goes
  std::string comm = "inproc"; // inproc | nccl | mpi
};

/// The plan prepared for GPUs (opaque).
class CudaProgram {
public:
  virtual ~CudaProgram();
  virtual const std::vector<cuda::KernelSpec> &specs() const = 0;
  /// "4 kernels, NVRTC cubin sm_90 on NVIDIA H100" / "... emulated".
  virtual std::string summary() const = 0;
  /// Rank `device`'s backend. `hostComm` is the rank's host communicator
  /// (in-process or MPI; used for emulation and host-staged collectives).
  virtual std::string openRank(int64_t device, plan::Collectives *hostComm,
                               std::unique_ptr<cuda::DeviceBackend> &out) = 0;
  /// --comm nccl: before the rank threads start, one NCCL communicator per
  /// rank on GPUs 0..n-1 of this process.
  virtual std::string createNcclRanks(const Mesh &mesh, double timeout) = 0;
  /// A failing rank stops the others' NCCL collectives.
  virtual void abortNccl(const std::string &reason) = 0;
};

/// Prepares `schedule` of `plan`; an error message (no driver or no device
/// says so), empty on success.
std::string prepareCuda(mlir::ModuleOp plan, const plan::Schedule &schedule,
                        const CudaRunOptions &options,
                        std::unique_ptr<CudaProgram> &program);

} // namespace spmd

#endif // SPMD_TARGETS_CUDA_CUDABACKEND_H
