//===- CudaEmitter.h - Plan kernels printed as CUDA C++ --------*- C++ -*-===//
//
// Prints the kernels of a plan (func.func ops marked spmd.plan_kernel: views,
// constants and one linalg op on buffers) as CUDA C++ over the kernel
// library runtime/cuda/kernels/spmd_kernels.cuh. The same text is compiled by
// NVRTC for the GPU and as C++ through runtime/cuda/HostEmu.h for tests.
//
// Kernel parameters, in this order (the launcher's contract):
//   * every function argument: a memref is an element pointer (`const` when
//     the kernel only reads it), an index/integer/float scalar a value
//     (`long long` for index);
//   * then, for every memref argument in order, each dynamic dim (`?`) in
//     order, as `long long`.
// Launch: `work` is the number of threads' worth of items (see CudaKernel);
// grid-stride kernels are launched with elementwiseLaunch(work), the
// warp-per-row kernels with `work` rows, 8 rows (warps) per 256-thread block.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CUDA_CUDAEMITTER_H
#define SPMD_TARGETS_CUDA_CUDAEMITTER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <utility>
#include <vector>

namespace spmd {
namespace cudagen {

/// One parameter of a printed kernel.
struct CudaParam {
  enum Kind { Buffer, Scalar, Dim } kind;
  unsigned arg = 0; // function argument index
  unsigned dim = 0; // for Dim: the memref dim
  std::string cType;
  std::string name;
};

/// How a kernel is launched.
enum class CudaLaunchKind {
  /// One thread per parallel iteration, grid-stride (elementwiseLaunch).
  GridStride,
  /// One warp per parallel iteration (a row reduction over the innermost
  /// loops), 8 warps per 256-thread block, grid-stride over the rows.
  WarpPerRow,
};

struct CudaKernel {
  std::string name;
  std::string source; // the __global__ function, without the prelude
  std::vector<CudaParam> params;
  CudaLaunchKind launch = CudaLaunchKind::GridStride;
  /// Whether the block's threads meet at barriers (the tile form of a
  /// grid-stride kernel): the host emulation then runs them as fibers.
  bool barriers = false;
  /// work = workConstant * product of workFactors, each (argument, dim) of a
  /// memref argument's size, or (argument, -1) for an index argument's value.
  int64_t workConstant = 1;
  std::vector<std::pair<unsigned, int>> workFactors;
};

/// The text every translation unit starts with: the kernel library include
/// and the scalar helpers printed code uses.
std::string cudaPrelude();

/// Prints `kernel`; on failure emits an error on the op (or type) it cannot
/// print, with the reason, and returns failure. `rowReductions` selects the
/// warp-per-row form for reductions over the innermost loops.
mlir::LogicalResult emitCudaKernel(mlir::func::FuncOp kernel,
                                   CudaKernel &result,
                                   bool rowReductions = true);

/// Every spmd.plan_kernel function of `module`, in order, as one translation
/// unit (prelude first).
mlir::LogicalResult emitCudaModule(mlir::ModuleOp module, std::string &unit,
                                   std::vector<CudaKernel> &kernels,
                                   bool rowReductions = true);

/// The host emulation's entry point for `kernel` (runtime/cuda/HostEmu.h,
/// EmuBackend.h): `extern "C" const char *spmdemu_<name>(unsigned grid,
/// unsigned block, void **params)`, with cuLaunchKernel's parameters (each
/// points at its value); returns an error text, empty on success. The unit
/// it goes into includes HostEmu.h before the kernel.
std::string cudaEmulationEntry(const CudaKernel &kernel);

/// The attributes the emitter records on a kernel function for the
/// launcher: spmd_cuda.launch ("grid_stride" | "warp_per_row") and
/// spmd_cuda.work ([constant, arg, dim, arg, dim, ...]).
constexpr const char *kCudaLaunchAttrName = "spmd_cuda.launch";
constexpr const char *kCudaWorkAttrName = "spmd_cuda.work";
/// On the module: the NVRTC-compiled translation unit
/// (runtime/cuda/CudaModule.h serializeModule bytes).
constexpr const char *kCudaModuleAttrName = "spmd_cuda.module";

} // namespace cudagen
} // namespace spmd

#endif // SPMD_TARGETS_CUDA_CUDAEMITTER_H
