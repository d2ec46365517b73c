//===- KernelCheck.h - A plan's CUDA kernels checked ------------*- C++ -*-===//
//
// The checks of spmd-cuda-check on a plan whose kernels were printed as one
// translation unit (CudaEmitter.h), each printing its lines to `os` and
// counting what fails in `failures`; an error Status is fatal (the check
// could not run):
//  * the module spmd-emit-cuda{embed=true} put in the plan holds this very
//    source and a cubin per arch defining every kernel;
//  * NVRTC compiles the unit for every arch, each cubin defining every
//    kernel;
//  * every kernel runs on random buffers through the host emulation
//    (runtime/cuda/HostEmu.h) and, with a GPU, on GPU 0, compared with the
//    CPU backend's JIT-compiled kernel (targets/plan), optionally timed.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CUDA_KERNELCHECK_H
#define SPMD_TARGETS_CUDA_KERNELCHECK_H

#include "runtime/Status.h"
#include "targets/cuda/CudaEmitter.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace spmd {

/// Checks the plan's embedded module (cudagen::kCudaModuleAttrName), if any.
Status checkEmbeddedModule(mlir::ModuleOp plan, const std::string &unit,
                           const std::vector<cudagen::CudaKernel> &kernels,
                           llvm::raw_ostream &os, int &failures);

/// Compiles `unit` as `name` with NVRTC for `archs` (empty: the default).
Status checkNvrtc(const std::string &name, const std::string &unit,
                  const std::vector<cudagen::CudaKernel> &kernels,
                  const std::vector<int> &archs, llvm::raw_ostream &os,
                  int &failures);

struct KernelRunOptions {
  bool emulate = false;   // through the host emulation
  bool gpu = false;       // also on GPU 0
  int benchIters = 0;     // with gpu: time every kernel over this many runs
  int64_t dimSize = 5;    // size of every dynamic dim
  int64_t indexValue = 0; // value of index arguments
  unsigned seed = 1;
  /// Every buffer this many bytes past a 16-byte boundary.
  unsigned offsetBytes = 0;
  std::string workDir; // the emulation's shared object (default: temp dir)
  std::string cxx = "c++";
  /// (tests) one output element of this kernel changed after its emulated
  /// run, to show a mismatch fails.
  std::string breakKernel;
};

/// Runs every kernel on the emulation and/or GPU against the CPU backend.
Status checkKernelRuns(mlir::ModuleOp plan, const std::string &unit,
                       const std::vector<cudagen::CudaKernel> &kernels,
                       const KernelRunOptions &options, llvm::raw_ostream &os,
                       int &failures);

} // namespace spmd

#endif // SPMD_TARGETS_CUDA_KERNELCHECK_H
