//===- GemmDesc.cpp - A GEMM as cuBLASLt runs it --------------------------===//

#include "runtime/cuda/GemmDesc.h"

using namespace spmd;
using namespace spmd::cuda;

bool cuda::hasBias(GemmEpilogue e) {
  return e == GemmEpilogue::Bias || e == GemmEpilogue::BiasGelu;
}

std::string GemmDesc::str() const {
  std::string s = std::string("gemm ") + dtypeName(dtype) + " [";
  if (batch != 1)
    s += std::to_string(batch) + " x ";
  s += std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
       "]";
  if (transA)
    s += " A^T";
  if (transB)
    s += " B^T";
  if (hasBias(epilogue))
    s += " +bias";
  if (epilogue == GemmEpilogue::Gelu || epilogue == GemmEpilogue::BiasGelu)
    s += " +gelu";
  if (dtype == DType::F32 && allowTF32)
    s += " tf32";
  return s;
}

Status cuda::validateGemm(const GemmDesc &d) {
  if (d.dtype != DType::F32 && d.dtype != DType::F16 && d.dtype != DType::BF16)
    return Status::error(d.str() +
                         ": cuBLASLt GEMMs take f32, f16 or bf16, "
                         "not " +
                         dtypeName(d.dtype));
  if (d.m < 0 || d.n < 0 || d.k < 0 || d.batch < 0)
    return Status::error(d.str() + ": negative size");
  if (d.allowTF32 && d.dtype != DType::F32)
    return Status::error(d.str() + ": TF32 applies to f32 GEMMs only");
  if (d.strideA < 0 || d.strideB < 0 || d.strideC < 0)
    return Status::error(d.str() + ": negative batch stride");
  // cuBLASLt takes 64-bit sizes, but leading dimensions must fit its
  // int64 layout and a matrix dimension must be at most 2^31-1 in practice.
  const int64_t lim = (int64_t(1) << 31) - 1;
  if (d.m > lim || d.n > lim || d.k > lim || d.batch > lim)
    return Status::error(d.str() + ": a dimension above 2^31-1");
  return Status::success();
}
