//===- Gemm.cpp - GEMMs through cuBLASLt ----------------------------------===//

#include "runtime/cuda/Gemm.h"

#include "runtime/cuda/CudaRuntime.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace spmd {
namespace cuda {

namespace {

std::string lt(cublasStatus_t s) {
  return std::string(cublasLtGetStatusName(s)) + " (" +
         cublasLtGetStatusString(s) + ")";
}

cudaDataType_t cudaType(DType t) {
  switch (t) {
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

cublasLtEpilogue_t ltEpilogue(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case GemmEpilogue::Gelu:
    return CUBLASLT_EPILOGUE_GELU;
  case GemmEpilogue::BiasGelu:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  default:
    return CUBLASLT_EPILOGUE_DEFAULT;
  }
}

// Owns the descriptors of one GEMM shape and its chosen algorithm.
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo;
  ~Plan() {
    if (op)
      cublasLtMatmulDescDestroy(op);
    if (la)
      cublasLtMatrixLayoutDestroy(la);
    if (lb)
      cublasLtMatrixLayoutDestroy(lb);
    if (lc)
      cublasLtMatrixLayoutDestroy(lc);
  }
};

} // namespace

struct GemmRunner::Impl {
  const Device *device = nullptr;
  cublasLtHandle_t handle = nullptr;
  CUdeviceptr workspace = 0;
  size_t workspaceBytes = 0;
  std::map<std::string, std::unique_ptr<Plan>> plans;
  ~Impl() {
    if (workspace)
      device->api().cuMemFree(workspace);
    if (handle)
      cublasLtDestroy(handle);
  }
};

Status GemmRunner::create(const Device &device, size_t workspaceBytes,
                          std::unique_ptr<GemmRunner> &runner) {
  std::unique_ptr<GemmRunner> r(new GemmRunner());
  r->impl.reset(new Impl());
  Impl &im = *r->impl;
  im.device = &device;
  Status s = device.makeCurrent();
  if (!s.ok())
    return s;
  cublasStatus_t st = cublasLtCreate(&im.handle);
  if (st != CUBLAS_STATUS_SUCCESS)
    return Status::error("cublasLtCreate: " + lt(st));
  if (workspaceBytes) {
    CUresult rc = device.api().cuMemAlloc(&im.workspace, workspaceBytes);
    if (rc != CUDA_SUCCESS)
      return Status::error("cuBLASLt workspace: " +
                           errorText(device.api(), rc));
    im.workspaceBytes = workspaceBytes;
  }
  runner = std::move(r);
  return Status::success();
}

GemmRunner::~GemmRunner() = default;

Status GemmRunner::run(const GemmDesc &d, CUdeviceptr a, CUdeviceptr b,
                       CUdeviceptr c, CUdeviceptr bias, const Stream &stream) {
  Status v = validateGemm(d);
  if (!v.ok())
    return v;
  if (hasBias(d.epilogue) != (bias != 0))
    return Status::error(d.str() + (bias ? ": a bias without a bias epilogue"
                                         : ": the bias epilogue has no bias"));
  if (d.m == 0 || d.n == 0 || d.batch == 0)
    return Status::success();
  Impl &im = *impl;
  auto fail = [&](const char *what, cublasStatus_t st) {
    return Status::error(d.str() + ": " + what + ": " + lt(st));
  };
  // Heuristics assume 256-byte aligned operands unless told otherwise, and
  // plan buffers are aligned less (64 bytes by default): say how much.
  auto alignment = [](CUdeviceptr p) -> uint32_t {
    return p ? static_cast<uint32_t>(std::min<uint64_t>(256, p & (~p + 1)))
             : 256;
  };
  uint32_t alignA = alignment(a), alignB = alignment(b), alignC = alignment(c);
  // The cache key: everything that shapes the descriptors.
  std::string key =
      d.str() + "/" + std::to_string(d.strideA) + "," +
      std::to_string(d.strideB) + "," + std::to_string(d.strideC) + "/" +
      std::to_string(d.beta != 0.0f) + "/" + std::to_string(alignA) + "," +
      std::to_string(alignB) + "," + std::to_string(alignC);
  auto it = im.plans.find(key);
  if (it == im.plans.end()) {
    std::unique_ptr<Plan> p(new Plan());
    cublasComputeType_t compute = d.dtype == DType::F32 && d.allowTF32
                                      ? CUBLAS_COMPUTE_32F_FAST_TF32
                                      : CUBLAS_COMPUTE_32F;
    cublasStatus_t st = cublasLtMatmulDescCreate(&p->op, compute, CUDA_R_32F);
    if (st != CUBLAS_STATUS_SUCCESS)
      return fail("cublasLtMatmulDescCreate", st);
    // Column-major: D^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m).
    cublasOperation_t opFirst = d.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opSecond = d.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opFirst,
                                   sizeof opFirst);
    cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                   &opSecond, sizeof opSecond);
    cublasLtEpilogue_t epi = ltEpilogue(d.epilogue);
    cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                   sizeof epi);
    if (hasBias(d.epilogue)) {
      cudaDataType_t bt = cudaType(d.dtype);
      cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                     &bt, sizeof bt);
    }
    cudaDataType_t t = cudaType(d.dtype);
    // Stored shapes, column-major view of row-major storage.
    uint64_t bRows = d.transB ? d.k : d.n, bCols = d.transB ? d.n : d.k;
    uint64_t aRows = d.transA ? d.m : d.k, aCols = d.transA ? d.k : d.m;
    if ((st = cublasLtMatrixLayoutCreate(&p->la, t, bRows, bCols, bRows)) ||
        (st = cublasLtMatrixLayoutCreate(&p->lb, t, aRows, aCols, aRows)) ||
        (st = cublasLtMatrixLayoutCreate(&p->lc, t, d.n, d.m, d.n)))
      return fail("cublasLtMatrixLayoutCreate", st);
    if (d.batch > 1) {
      int32_t count = static_cast<int32_t>(d.batch);
      int64_t sB = d.strideB ? d.strideB : d.k * d.n;
      int64_t sA = d.strideA ? d.strideA : d.m * d.k;
      int64_t sC = d.strideC ? d.strideC : d.m * d.n;
      for (auto [layout, stride] :
           {std::pair{p->la, sB}, std::pair{p->lb, sA}, std::pair{p->lc, sC}}) {
        cublasLtMatrixLayoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
        cublasLtMatrixLayoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
            sizeof stride);
      }
    }
    cublasLtMatmulPreference_t pref = nullptr;
    if ((st = cublasLtMatmulPreferenceCreate(&pref)))
      return fail("cublasLtMatmulPreferenceCreate", st);
    uint64_t ws = im.workspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    // cuBLASLt's A is our B (column-major view), its B our A.
    for (auto [attr, value] :
         {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignB},
          std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignA},
          std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignC},
          std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignC}})
      cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof value);
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    st = cublasLtMatmulAlgoGetHeuristic(im.handle, p->op, p->la, p->lb, p->lc,
                                        p->lc, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS)
      return fail("cublasLtMatmulAlgoGetHeuristic", st);
    if (found == 0)
      return Status::error(d.str() + ": cuBLASLt has no algorithm for it");
    p->algo = result.algo;
    it = im.plans.emplace(key, std::move(p)).first;
  }
  Plan &p = *it->second;
  if (hasBias(d.epilogue)) {
    void *bp = reinterpret_cast<void *>(bias);
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp,
                                   sizeof bp);
  }
  cublasStatus_t st = cublasLtMatmul(
      im.handle, p.op, &d.alpha, reinterpret_cast<const void *>(b), p.la,
      reinterpret_cast<const void *>(a), p.lb, &d.beta,
      reinterpret_cast<const void *>(c), p.lc, reinterpret_cast<void *>(c),
      p.lc, &p.algo, reinterpret_cast<void *>(im.workspace), im.workspaceBytes,
      reinterpret_cast<cudaStream_t>(stream.get()));
  if (st != CUBLAS_STATUS_SUCCESS)
    return fail("cublasLtMatmul", st);
  return Status::success();
}

} // namespace cuda
} // namespace spmd
