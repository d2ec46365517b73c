//===- Gemm.h - GEMMs through cuBLASLt -------------------------*- C++ -*-===//
//
// C = alpha * op(A) @ op(B) + beta * C (+ bias, GELU) for row-major operands,
// optionally batched with strides: f32 (TF32 tensor cores when allowed), and
// f16 / bf16 inputs and outputs with f32 accumulation. Row-major is handled
// by computing C^T = op(B)^T op(A)^T in cuBLASLt's column-major terms, so the
// bias (cuBLASLt's per-row vector of D) is the per-column bias of a linear
// layer. cuBLASLt's GELU epilogue is the tanh approximation; a program that
// asks for exact (erf) GELU keeps it as a separate kernel.
//
// Algorithm choices (cublasLtMatmulAlgoGetHeuristic) are cached per shape.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_GEMM_H
#define SPMD_RUNTIME_CUDA_GEMM_H

#include "runtime/cuda/GemmDesc.h"

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace spmd {
namespace cuda {

class Device;
class Stream;

class GemmRunner {
public:
  /// A cuBLASLt handle and `workspaceBytes` of device workspace on `device`.
  static Status create(const Device &device, size_t workspaceBytes,
                       std::unique_ptr<GemmRunner> &runner);
  ~GemmRunner();
  /// Enqueues the GEMM on `stream`; `bias` (length n) is needed exactly when
  /// the epilogue has one.
  Status run(const GemmDesc &desc, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
             CUdeviceptr bias, const Stream &stream);

  struct Impl;

private:
  GemmRunner() = default;
  std::unique_ptr<Impl> impl;
};

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_GEMM_H
