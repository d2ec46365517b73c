//===- reference_kernels.cu - Concrete kernels over spmd_kernels.cuh ------===//
//
// One translation unit of the shape the code generator prints: extern "C"
// __global__ entry points (unmangled names for cuModuleGetFunction) that
// instantiate the library's templates for f32, f16 and bf16. The test suite
// compiles it with NVRTC for sm_80 and sm_90 and runs it on the CPU through
// the host emulation, against plain C++ references.
//
//===----------------------------------------------------------------------===//

#include "spmd_kernels.cuh"

using spmdk::bf16;
using spmdk::f16;
using spmdk::i64;

#define SPMD_FOR_EACH_TYPE(M) M(f32, float) M(f16, f16) M(bf16, bf16)

#define SPMD_KERNELS(S, T)                                                     \
  extern "C" __global__ void __launch_bounds__(1024) spmd_affine_gelu_##S(     \
      const T *x, const T *a, const T *b, T *y, i64 rows, i64 cols) {          \
    spmdk::affineGelu(x, a, b, y, rows, cols);                                 \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(1024)                           \
      spmd_softmax_fwd_##S(const T *x, T *y, i64 rows, i64 cols) {             \
    spmdk::softmaxForward(x, y, rows, cols);                                   \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(1024) spmd_softmax_bwd_##S(     \
      const T *y, const T *dy, T *dx, i64 rows, i64 cols) {                    \
    spmdk::softmaxBackward(y, dy, dx, rows, cols);                             \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(1024) spmd_layer_norm_fwd_##S(  \
      const T *x, const T *gamma, const T *beta, T *y, float *mean,            \
      float *rstd, i64 rows, i64 cols, float eps) {                            \
    spmdk::layerNormForward(x, gamma, beta, y, mean, rstd, rows, cols, eps);   \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(1024)                           \
      spmd_layer_norm_bwd_input_##S(const T *x, const T *dy, const T *gamma,   \
                                    const float *mean, const float *rstd,      \
                                    T *dx, i64 rows, i64 cols) {               \
    spmdk::layerNormBackwardInput(x, dy, gamma, mean, rstd, dx, rows, cols);   \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(1024)                           \
      spmd_layer_norm_bwd_params_##S(                                          \
          const T *x, const T *dy, const float *mean, const float *rstd,       \
          T *dgamma, T *dbeta, i64 rows, i64 cols) {                           \
    spmdk::layerNormBackwardParams(x, dy, mean, rstd, dgamma, dbeta, rows,     \
                                   cols);                                      \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(1024)                           \
      spmd_layer_norm_bwd_params_partial_##S(                                  \
          const T *x, const T *dy, const float *mean, const float *rstd,       \
          float *pgamma, float *pbeta, i64 rows, i64 cols) {                   \
    spmdk::layerNormBackwardParamsPartial(x, dy, mean, rstd, pgamma, pbeta,    \
                                          rows, cols);                         \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(1024) spmd_column_sum_##S(      \
      const float *partial, T *out, i64 chunks, i64 cols) {                    \
    spmdk::columnSum(partial, out, chunks, cols);                              \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(1024)                           \
      spmd_rms_norm_fwd_##S(const T *x, const T *gamma, T *y, float *rstd,     \
                            i64 rows, i64 cols, float eps) {                   \
    spmdk::rmsNormForward(x, gamma, y, rstd, rows, cols, eps);                 \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(1024)                           \
      spmd_cross_entropy_fwd_##S(const T *logits, const i64 *target,           \
                                 float *loss, float *total, T *probs,          \
                                 i64 rows, i64 cols, float scale) {            \
    spmdk::crossEntropyForward(logits, target, loss, total, probs, rows, cols, \
                               scale);                                         \
  }

SPMD_FOR_EACH_TYPE(SPMD_KERNELS)

extern "C" __global__ void __launch_bounds__(1024)
    spmd_affine_gelu_f32_vec4(const float *x, const float *a, const float *b,
                              float *y, i64 rows, i64 cols) {
  spmdk::affineGeluVec4(x, a, b, y, rows, cols);
}

#define SPMD_CONVERT(S, T)                                                     \
  extern "C" __global__ void spmd_convert_##S##_f32(const T *in, float *out,   \
                                                    i64 n) {                   \
    spmdk::convert(in, out, n);                                                \
  }                                                                            \
  extern "C" __global__ void spmd_convert_f32_##S(const float *in, T *out,     \
                                                  i64 n) {                     \
    spmdk::convert(in, out, n);                                                \
  }
SPMD_CONVERT(f16, f16)
SPMD_CONVERT(bf16, bf16)
