//===- GemmDesc.h - A GEMM as cuBLASLt runs it -----------------*- C++ -*-===//
//
// The description of one (batched) row-major GEMM the GPU backend runs
// through cuBLASLt (Gemm.h), kept apart from it so that code without the
// CUDA toolkit (the emulated device) describes GEMMs the same way.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_GEMMDESC_H
#define SPMD_RUNTIME_CUDA_GEMMDESC_H

#include "runtime/DType.h"
#include "runtime/Status.h"

#include <cstdint>
#include <string>

namespace spmd {
namespace cuda {

enum class GemmEpilogue : uint8_t { None, Bias, Gelu, BiasGelu };

struct GemmDesc {
  DType dtype = DType::F32; // A, B, C and bias
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0; // C is m x n; op(A) m x k; op(B) k x n
  int64_t batch = 1;
  // Element strides between batch members (0: packed, i.e. m*k, k*n, m*n).
  int64_t strideA = 0, strideB = 0, strideC = 0;
  float alpha = 1.0f, beta = 0.0f;
  bool allowTF32 = false; // f32 only
  GemmEpilogue epilogue = GemmEpilogue::None;

  /// "gemm bf16 [2 x 128x256x64] A^T +bias+gelu", for messages.
  std::string str() const;
};

/// Checks what cuBLASLt would reject, with a message (no GPU needed).
Status validateGemm(const GemmDesc &desc);

bool hasBias(GemmEpilogue e);

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_GEMMDESC_H
