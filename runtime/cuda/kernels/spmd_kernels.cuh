//===- spmd_kernels.cuh - Building blocks of generated CUDA kernels -------===//
//
// The CUDA C++ the kernel code generator prints into: element types (f16 and
// bf16 stored as 16 bits, computed in f32), index math, a grid-stride
// elementwise loop, block-per-row reductions with warp shuffles (softmax,
// layer_norm, RMSNorm and their backward, cross-entropy), and float4 loads
// where alignment allows.
//
// The same text compiles three ways: under NVRTC for the GPU (it is embedded
// in the binary and passed to NVRTC as the header "spmd_kernels.cuh"), and as
// ordinary C++ on the CPU through runtime/cuda/HostEmu.h for tests. It
// includes no toolkit header (not even cuda_fp16.h): a plan recompiled at
// load time on a machine with only the driver and NVRTC needs nothing else.
// The 16-bit types are layout-compatible with __half / __nv_bfloat16.
//
// Launch contract for the row kernels: blockDim.x a multiple of 32 (at most
// 1024), one block per row in a grid-stride loop over rows; nothing else is
// assumed about the shape (any row length, including 0).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_KERNELS_CUH
#define SPMD_KERNELS_CUH

#if defined(__CUDACC__)
#define SPMD_SHARED(T, name, n) __shared__ T name[n]
#else
#include "runtime/cuda/HostEmu.h"
#endif

namespace spmdk {

typedef long long i64;

//===-- Element types -----------------------------------------------------===//

struct __align__(2) f16 {
  unsigned short bits;
};
struct __align__(2) bf16 {
  unsigned short bits;
};

__device__ __forceinline__ float toF32(float v) { return v; }
__device__ __forceinline__ float toF32(f16 v) {
#if defined(__CUDACC__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
#else
  return spmd_emu::halfBitsToFloat(v.bits);
#endif
}
__device__ __forceinline__ float toF32(bf16 v) {
  return __uint_as_float(static_cast<unsigned>(v.bits) << 16);
}

template <class T> __device__ __forceinline__ T fromF32(float v);
template <> __device__ __forceinline__ float fromF32<float>(float v) {
  return v;
}
template <> __device__ __forceinline__ f16 fromF32<f16>(float v) {
  f16 h;
#if defined(__CUDACC__)
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(v));
#else
  h.bits = spmd_emu::floatToHalfBits(v);
#endif
  return h;
}
// Round to nearest even in plain integer code: identical on host and device.
template <> __device__ __forceinline__ bf16 fromF32<bf16>(float v) {
  unsigned u = __float_as_uint(v);
  bf16 b;
  if ((u & 0x7fffffffu) > 0x7f800000u) { // NaN stays a (quiet) NaN
    b.bits = static_cast<unsigned short>((u >> 16) | 0x40u);
    return b;
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  b.bits = static_cast<unsigned short>(u >> 16);
  return b;
}

template <class T> __device__ __forceinline__ float load(const T *p, i64 i) {
  return toF32(p[i]);
}
template <class T>
__device__ __forceinline__ void store(T *p, i64 i, float v) {
  p[i] = fromF32<T>(v);
}

__device__ __forceinline__ float posInf() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float negInf() {
  return __int_as_float(static_cast<int>(0xff800000u));
}

//===-- Index math --------------------------------------------------------===//

__device__ __forceinline__ i64 globalThreadIndex() {
  return static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ i64 globalThreadCount() {
  return static_cast<i64>(gridDim.x) * blockDim.x;
}

/// A row-major view of up to 6 dims with arbitrary element strides; a
/// broadcast operand has stride 0 on the dims it is broadcast along.
struct StridedView {
  int rank;
  i64 sizes[6];
  i64 strides[6];
  __device__ __forceinline__ i64 offset(i64 linear) const {
    i64 off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      i64 s = sizes[d];
      off += (linear % s) * strides[d];
      linear /= s;
    }
    return off;
  }
};

/// for (i in [0, n)) body(i), spread over the whole grid.
template <class Body> __device__ __forceinline__ void gridStride(i64 n, Body body) {
  for (i64 i = globalThreadIndex(); i < n; i += globalThreadCount())
    body(i);
}

__device__ __forceinline__ bool aligned16(const void *p) {
  return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}
template <int Bytes> __device__ __forceinline__ bool alignedTo(const void *p) {
  return (reinterpret_cast<unsigned long long>(p) & (Bytes - 1ull)) == 0;
}

/// W neighbouring elements moved by one load or store of W * sizeof(T)
/// bytes (the vector form of generated elementwise kernels): 8 bf16 are one
/// 16-byte access where element by element they are eight 2-byte ones.
template <class T, int W> struct alignas(W * sizeof(T)) Vec {
  T v[W];
};

//===-- Reductions --------------------------------------------------------===//

__device__ __forceinline__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum (or max) of `v` over the block, returned to every thread. `scratch`
/// is 32 floats of shared memory; it may be reused after the call.
template <bool IsMax>
__device__ __forceinline__ float blockReduce(float v, float *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  const float identity = IsMax ? negInf() : 0.0f;
  v = IsMax ? warpMax(v) : warpSum(v);
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? scratch[lane] : identity;
    v = IsMax ? warpMax(v) : warpSum(v);
    if (lane == 0)
      scratch[0] = v;
  }
  __syncthreads();
  v = scratch[0];
  __syncthreads();
  return v;
}
__device__ __forceinline__ float blockSum(float v, float *scratch) {
  return blockReduce<false>(v, scratch);
}
__device__ __forceinline__ float blockMax(float v, float *scratch) {
  return blockReduce<true>(v, scratch);
}

//===-- Activations -------------------------------------------------------===//

/// torch.nn.functional.gelu (exact, erf form).
__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
__device__ __forceinline__ float geluTanh(float x) {
  const float k = 0.79788456080286536f; // sqrt(2/pi)
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

//===-- Fused elementwise: y = gelu(x * a[c] + b[c]) ----------------------===//

template <class T>
__device__ __forceinline__ void affineGelu(const T *__restrict__ x,
                                           const T *__restrict__ a,
                                           const T *__restrict__ b,
                                           T *__restrict__ y, i64 rows,
                                           i64 cols) {
  gridStride(rows * cols, [&](i64 i) {
    i64 c = i % cols;
    store(y, i, gelu(load(x, i) * load(a, c) + load(b, c)));
  });
}

/// The f32 version with float4 loads; needs cols % 4 == 0 and 16-byte
/// aligned pointers (the launcher checks, see affineGeluVectorizable).
__device__ __forceinline__ void affineGeluVec4(const float *__restrict__ x,
                                               const float *__restrict__ a,
                                               const float *__restrict__ b,
                                               float *__restrict__ y, i64 rows,
                                               i64 cols) {
  const i64 qcols = cols / 4;
  gridStride(rows * qcols, [&](i64 q) {
    i64 c = q % qcols;
    float4 xv = reinterpret_cast<const float4 *>(x)[q];
    float4 av = reinterpret_cast<const float4 *>(a)[c];
    float4 bv = reinterpret_cast<const float4 *>(b)[c];
    float4 r;
    r.x = gelu(xv.x * av.x + bv.x);
    r.y = gelu(xv.y * av.y + bv.y);
    r.z = gelu(xv.z * av.z + bv.z);
    r.w = gelu(xv.w * av.w + bv.w);
    reinterpret_cast<float4 *>(y)[q] = r;
  });
}

/// out[i] = in[i] converted (through f32): widening before a reduction in
/// f32, narrowing after.
template <class S, class D>
__device__ __forceinline__ void convert(const S *__restrict__ in,
                                        D *__restrict__ out, i64 n) {
  gridStride(n, [&](i64 i) { store(out, i, load(in, i)); });
}

//===-- Row softmax -------------------------------------------------------===//

template <class T> struct IsF32 {
  static constexpr bool value = false;
};
template <> struct IsF32<float> {
  static constexpr bool value = true;
};

/// softmaxForward for f32 rows read and written as float4 (cols % 4 == 0,
/// 16-byte aligned rows).
__device__ __forceinline__ void softmaxForwardVec4(const float *__restrict__ x,
                                                   float *__restrict__ y,
                                                   i64 rows, i64 cols) {
  SPMD_SHARED(float, scratch, 32);
  const i64 q = cols / 4;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float4 *xr = reinterpret_cast<const float4 *>(x + r * cols);
    float4 *yr = reinterpret_cast<float4 *>(y + r * cols);
    float m = negInf();
    for (i64 c = threadIdx.x; c < q; c += blockDim.x) {
      float4 v = xr[c];
      m = fmaxf(fmaxf(m, fmaxf(v.x, v.y)), fmaxf(v.z, v.w));
    }
    m = blockMax(m, scratch);
    float s = 0.0f;
    for (i64 c = threadIdx.x; c < q; c += blockDim.x) {
      float4 v = xr[c];
      s += expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
    }
    s = blockSum(s, scratch);
    const float inv = 1.0f / s;
    for (i64 c = threadIdx.x; c < q; c += blockDim.x) {
      float4 v = xr[c], o;
      o.x = expf(v.x - m) * inv;
      o.y = expf(v.y - m) * inv;
      o.z = expf(v.z - m) * inv;
      o.w = expf(v.w - m) * inv;
      yr[c] = o;
    }
  }
}

/// Row softmax; f32 rows take the float4 path when the shape and the
/// pointers allow (a block-uniform branch).
template <class T>
__device__ __forceinline__ void softmaxForward(const T *__restrict__ x,
                                               T *__restrict__ y, i64 rows,
                                               i64 cols) {
  if constexpr (IsF32<T>::value) {
    if ((cols & 3) == 0 && aligned16(x) && aligned16(y)) {
      softmaxForwardVec4(x, y, rows, cols);
      return;
    }
  }
  SPMD_SHARED(float, scratch, 32);
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * cols;
    T *yr = y + r * cols;
    float m = negInf();
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
      m = fmaxf(m, load(xr, c));
    m = blockMax(m, scratch);
    float s = 0.0f;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
      s += expf(load(xr, c) - m);
    s = blockSum(s, scratch);
    const float inv = 1.0f / s;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
      store(yr, c, expf(load(xr, c) - m) * inv);
  }
}

/// dx = y * (dy - sum(dy * y)) per row.
template <class T>
__device__ __forceinline__ void softmaxBackward(const T *__restrict__ y,
                                                const T *__restrict__ dy,
                                                T *__restrict__ dx, i64 rows,
                                                i64 cols) {
  SPMD_SHARED(float, scratch, 32);
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const i64 base = r * cols;
    float dot = 0.0f;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
      dot += load(y, base + c) * load(dy, base + c);
    dot = blockSum(dot, scratch);
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
      store(dx, base + c, load(y, base + c) * (load(dy, base + c) - dot));
  }
}

//===-- layer_norm / RMSNorm ----------------------------------------------===//

/// y = (x - mean) * rstd * gamma + beta; saves mean and rstd (f32) per row
/// for the backward. gamma/beta may be null (no affine).
template <class T>
__device__ __forceinline__ void layerNormForward(
    const T *__restrict__ x, const T *__restrict__ gamma,
    const T *__restrict__ beta, T *__restrict__ y, float *__restrict__ mean,
    float *__restrict__ rstd, i64 rows, i64 cols, float eps) {
  SPMD_SHARED(float, scratch, 32);
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * cols;
    float s = 0.0f;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
      s += load(xr, c);
    const float mu = cols ? blockSum(s, scratch) / cols : 0.0f;
    // Two passes (mean, then centred squares): no cancellation.
    float q = 0.0f;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
      float d = load(xr, c) - mu;
      q += d * d;
    }
    const float var = cols ? blockSum(q, scratch) / cols : 0.0f;
    const float rs = rsqrtf(var + eps);
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
      float v = (load(xr, c) - mu) * rs;
      if (gamma)
        v *= load(gamma, c);
      if (beta)
        v += load(beta, c);
      store(y, r * cols + c, v);
    }
    if (threadIdx.x == 0) {
      if (mean)
        mean[r] = mu;
      if (rstd)
        rstd[r] = rs;
    }
  }
}

/// dx of layer_norm: with xhat = (x - mean) * rstd and g = dy * gamma,
/// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
template <class T>
__device__ __forceinline__ void layerNormBackwardInput(
    const T *__restrict__ x, const T *__restrict__ dy,
    const T *__restrict__ gamma, const float *__restrict__ mean,
    const float *__restrict__ rstd, T *__restrict__ dx, i64 rows, i64 cols) {
  SPMD_SHARED(float, scratch, 32);
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const i64 base = r * cols;
    const float mu = mean[r], rs = rstd[r];
    float sg = 0.0f, sgx = 0.0f;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
      float g = load(dy, base + c) * (gamma ? load(gamma, c) : 1.0f);
      float xh = (load(x, base + c) - mu) * rs;
      sg += g;
      sgx += g * xh;
    }
    sg = blockSum(sg, scratch);
    sgx = blockSum(sgx, scratch);
    const float inv = cols ? 1.0f / cols : 0.0f;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
      float g = load(dy, base + c) * (gamma ? load(gamma, c) : 1.0f);
      float xh = (load(x, base + c) - mu) * rs;
      store(dx, base + c, rs * (g - sg * inv - xh * sgx * inv));
    }
  }
}

/// dgamma[c] = sum_r dy * xhat, dbeta[c] = sum_r dy: one thread per column
/// (coalesced across a warp), deterministic (no atomics).
template <class T>
__device__ __forceinline__ void layerNormBackwardParams(
    const T *__restrict__ x, const T *__restrict__ dy,
    const float *__restrict__ mean, const float *__restrict__ rstd,
    T *__restrict__ dgamma, T *__restrict__ dbeta, i64 rows, i64 cols) {
  gridStride(cols, [&](i64 c) {
    float sg = 0.0f, sb = 0.0f;
    for (i64 r = 0; r < rows; ++r) {
      float g = load(dy, r * cols + c);
      sg += g * (load(x, r * cols + c) - mean[r]) * rstd[r];
      sb += g;
    }
    if (dgamma)
      store(dgamma, c, sg);
    if (dbeta)
      store(dbeta, c, sb);
  });
}

/// The same in two deterministic stages for tall inputs, where one thread
/// per column leaves most of the GPU idle: stage 1 runs gridDim.y chunks of
/// rows and writes f32 partial sums partial[chunk * cols + c]; stage 2
/// (columnSum) adds the chunks up.
template <class T>
__device__ __forceinline__ void layerNormBackwardParamsPartial(
    const T *__restrict__ x, const T *__restrict__ dy,
    const float *__restrict__ mean, const float *__restrict__ rstd,
    float *__restrict__ partialGamma, float *__restrict__ partialBeta, i64 rows,
    i64 cols) {
  const i64 chunk = (rows + gridDim.y - 1) / gridDim.y;
  const i64 r0 = blockIdx.y * chunk;
  const i64 r1 = r0 + chunk < rows ? r0 + chunk : rows;
  gridStride(cols, [&](i64 c) {
    float sg = 0.0f, sb = 0.0f;
    for (i64 r = r0; r < r1; ++r) {
      float g = load(dy, r * cols + c);
      sg += g * (load(x, r * cols + c) - mean[r]) * rstd[r];
      sb += g;
    }
    partialGamma[blockIdx.y * cols + c] = sg;
    partialBeta[blockIdx.y * cols + c] = sb;
  });
}

/// out[c] = sum over k < chunks of partial[k * cols + c].
template <class T>
__device__ __forceinline__ void columnSum(const float *__restrict__ partial,
                                          T *__restrict__ out, i64 chunks,
                                          i64 cols) {
  gridStride(cols, [&](i64 c) {
    float s = 0.0f;
    for (i64 k = 0; k < chunks; ++k)
      s += partial[k * cols + c];
    store(out, c, s);
  });
}

/// y = x * rsqrt(mean(x^2) + eps) * gamma; saves rstd per row.
template <class T>
__device__ __forceinline__ void rmsNormForward(const T *__restrict__ x,
                                               const T *__restrict__ gamma,
                                               T *__restrict__ y,
                                               float *__restrict__ rstd,
                                               i64 rows, i64 cols, float eps) {
  SPMD_SHARED(float, scratch, 32);
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const i64 base = r * cols;
    float q = 0.0f;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
      float v = load(x, base + c);
      q += v * v;
    }
    q = blockSum(q, scratch);
    const float rs = rsqrtf((cols ? q / cols : 0.0f) + eps);
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
      store(y, base + c,
            load(x, base + c) * rs * (gamma ? load(gamma, c) : 1.0f));
    if (threadIdx.x == 0 && rstd)
      rstd[r] = rs;
  }
}

//===-- Cross-entropy -----------------------------------------------------===//

/// Per row: loss[r] = logsumexp(logits[r]) - logits[r][target[r]] (0 for a
/// target outside [0, cols), e.g. ignore_index -100); total += loss[r] *
/// scale (atomic; the host passes scale = 1 / number of counted rows for a
/// mean). Also writes the row's softmax to `probs` when non-null (what the
/// backward needs: dlogits = (probs - onehot) * scale).
template <class T>
__device__ __forceinline__ void crossEntropyForward(
    const T *__restrict__ logits, const i64 *__restrict__ target,
    float *__restrict__ loss, float *__restrict__ total, T *__restrict__ probs,
    i64 rows, i64 cols, float scale) {
  SPMD_SHARED(float, scratch, 32);
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = logits + r * cols;
    float m = negInf();
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
      m = fmaxf(m, load(xr, c));
    m = blockMax(m, scratch);
    float s = 0.0f;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
      s += expf(load(xr, c) - m);
    s = blockSum(s, scratch);
    if (probs) {
      const float inv = 1.0f / s;
      for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
        store(probs, r * cols + c, expf(load(xr, c) - m) * inv);
    }
    if (threadIdx.x == 0) {
      const i64 t = target[r];
      const float l = (t >= 0 && t < cols) ? m + logf(s) - load(xr, t) : 0.0f;
      if (loss)
        loss[r] = l;
      if (total)
        atomicAdd(total, l * scale);
    }
  }
}

} // namespace spmdk

#endif // SPMD_KERNELS_CUH
