//===- gemm_bench.cpp - cuBLASLt GEMM throughput
//---------------------------===//
//
//   spmd-cuda-gemm-bench [m n k]   (default: a sweep of square and
//                                   transformer-shaped GEMMs)
//
// TFLOP/s = 2 m n k / time, per element type (f32, f32 with TF32, bf16,
// f16), through GemmRunner exactly as a plan calls it, and cuBLASLt called
// directly on the same buffers: its first heuristic (what GemmRunner takes)
// and the fastest of its first 8 heuristics, each timed (autotuning, as
// PyTorch's TunableOp or cuBLASLt's own samples do). `runner / best` says
// what GemmRunner leaves: the wrapper's cost and the heuristic's miss.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "runtime/cuda/Gemm.h"

#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <vector>

using namespace spmd;
using namespace spmd::cuda;
using namespace spmd::cuda::bench;

namespace {

void ltOrDie(cublasStatus_t st, const char *what) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", what, cublasLtGetStatusString(st));
    std::exit(1);
  }
}

/// Row-major C[m, n] = A[m, k] * B[n, k]^T with cuBLASLt, written here
/// without GemmRunner: in column-major terms C^T (n x m) = B (n x k, stored
/// k x n transposed) * A^T (k x m).
struct DirectGemm {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t lb = nullptr, la = nullptr, lc = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;

  DirectGemm(cublasLtHandle_t handle, cudaDataType_t t, bool tf32, int64_t m,
             int64_t n, int64_t k, size_t workspace) {
    ltOrDie(cublasLtMatmulDescCreate(
                &op, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                CUDA_R_32F),
            "cublasLtMatmulDescCreate");
    cublasOperation_t trans = CUBLAS_OP_T, none = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans,
                                   sizeof trans);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &none,
                                   sizeof none);
    ltOrDie(cublasLtMatrixLayoutCreate(&lb, t, k, n, k), "layout B");
    ltOrDie(cublasLtMatrixLayoutCreate(&la, t, k, m, k), "layout A");
    ltOrDie(cublasLtMatrixLayoutCreate(&lc, t, n, m, n), "layout C");
    cublasLtMatmulPreference_t pref;
    ltOrDie(cublasLtMatmulPreferenceCreate(&pref), "preference");
    uint64_t ws = workspace;
    cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    algos.resize(8);
    int found = 0;
    ltOrDie(cublasLtMatmulAlgoGetHeuristic(handle, op, lb, la, lc, lc, pref,
                                           int(algos.size()), algos.data(),
                                           &found),
            "cublasLtMatmulAlgoGetHeuristic");
    algos.resize(found);
    cublasLtMatmulPreferenceDestroy(pref);
  }
  ~DirectGemm() {
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatmulDescDestroy(op);
  }
  cublasStatus_t run(cublasLtHandle_t handle, size_t i, CUdeviceptr a,
                     CUdeviceptr b, CUdeviceptr c, CUdeviceptr workspace,
                     size_t workspaceBytes, CUstream stream) const {
    float alpha = 1, beta = 0;
    return cublasLtMatmul(handle, op, &alpha, reinterpret_cast<const void *>(b),
                          lb, reinterpret_cast<const void *>(a), la, &beta,
                          reinterpret_cast<const void *>(c), lc,
                          reinterpret_cast<void *>(c), lc, &algos[i].algo,
                          reinterpret_cast<void *>(workspace), workspaceBytes,
                          reinterpret_cast<cudaStream_t>(stream));
  }
};

cudaDataType_t cudaTypeOf(DType t) {
  return t == DType::BF16  ? CUDA_R_16BF
         : t == DType::F16 ? CUDA_R_16F
                           : CUDA_R_32F;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::array<int64_t, 3>> shapes;
  if (argc > 3)
    shapes.push_back(
        {std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3])});
  else
    shapes = {{1024, 1024, 1024},  {4096, 4096, 4096},   {8192, 8192, 8192},
              {16384, 4096, 4096}, {16384, 16384, 4096}, {16384, 4096, 16384}};
  std::unique_ptr<Device> dev;
  orDie(Device::open(0, dev), "device");
  std::unique_ptr<Stream> stream;
  orDie(Stream::create(*dev, stream), "stream");
  constexpr size_t kWorkspace = 64 << 20;
  std::unique_ptr<GemmRunner> gemm;
  orDie(GemmRunner::create(*dev, kWorkspace, gemm), "cublasLt");
  cublasLtHandle_t handle;
  ltOrDie(cublasLtCreate(&handle), "cublasLtCreate");
  CUdeviceptr workspace;
  if (dev->api().cuMemAlloc(&workspace, kWorkspace) != CUDA_SUCCESS) {
    std::fprintf(stderr, "workspace: out of memory\n");
    return 1;
  }
  std::printf("# %s (sm_%d)\n%-8s %-22s %10s %10s %12s %12s %9s %14s\n",
              dev->name().c_str(), dev->arch(), "type", "m x n x k", "time_ms",
              "TFLOP/s", "lt_first_ms", "lt_best_ms", "lt_algos",
              "runner/best");
  for (auto [m, n, k] : shapes) {
    size_t maxBytes = 4 * std::max({m * k, k * n, m * n});
    std::unique_ptr<DeviceArena> arena;
    orDie(DeviceArena::create(*dev, 3 * DeviceArena::align(maxBytes), arena),
          "arena");
    dev->api().cuMemsetD8Async(arena->base(), 0, arena->size(), stream->get());
    CUdeviceptr a = arena->base(), b = a + DeviceArena::align(maxBytes),
                c = b + DeviceArena::align(maxBytes);
    struct Variant {
      const char *name;
      DType t;
      bool tf32;
    };
    for (Variant v :
         {Variant{"f32", DType::F32, false}, Variant{"tf32", DType::F32, true},
          Variant{"bf16", DType::BF16, false},
          Variant{"f16", DType::F16, false}}) {
      GemmDesc d;
      d.dtype = v.t;
      d.allowTF32 = v.tf32;
      d.m = m, d.n = n, d.k = k;
      d.transB = true; // a linear layer: x @ W^T
      double ms = timeMs(*dev, *stream, [&] {
        orDie(gemm->run(d, a, b, c, 0, *stream), "gemm");
      });
      char shape[64];
      std::snprintf(shape, sizeof shape, "%lld x %lld x %lld", (long long)m,
                    (long long)n, (long long)k);
      DirectGemm direct(handle, cudaTypeOf(v.t), v.tf32, m, n, k, kWorkspace);
      double first = 0, best = 0;
      for (size_t i = 0; i < direct.algos.size(); ++i) {
        bool ok = true;
        double t = timeMs(*dev, *stream, [&] {
          ok = ok && direct.run(handle, i, a, b, c, workspace, kWorkspace,
                                stream->get()) == CUBLAS_STATUS_SUCCESS;
        });
        if (!ok)
          continue; // an algorithm that does not run here: not a candidate
        if (i == 0)
          first = t;
        if (best == 0 || t < best)
          best = t;
      }
      std::printf("%-8s %-22s %10.3f %10.1f %12.3f %12.3f %9zu %14.3f\n",
                  v.name, shape, ms, 2.0 * m * n * k / (ms * 1e-3) / 1e12,
                  first, best, direct.algos.size(), best > 0 ? ms / best : 0.0);
    }
  }
  dev->api().cuMemFree(workspace);
  cublasLtDestroy(handle);
  return 0;
}
