//===- CudaKernelEmuTest.cpp - CUDA kernel source run on the CPU ----------===//
//
// Runs every kernel kind of runtime/cuda/kernels/reference_kernels.cu (the
// same text NVRTC compiles for the GPU) through the host emulation and
// compares with plain C++ references computed in double from the same
// (rounded) inputs: f32, f16 and bf16; shapes with rows/cols that are not
// multiples of the block size, a single element, and zero-size; grids
// smaller than the row count (grid-stride loops).
//
//===----------------------------------------------------------------------===//

#include "reference_kernels.cu"

#include "runtime/DType.h"
#include "runtime/cuda/LaunchConfig.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <unistd.h>
#include <vector>

namespace {

using spmd_emu::launch;
using spmd_emu::launchFlat;

template <class T> std::vector<T> toT(const std::vector<float> &v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = spmdk::fromF32<T>(v[i]);
  return out;
}
template <class T> std::vector<double> toD(const std::vector<T> &v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = spmdk::toF32(v[i]);
  return out;
}
std::vector<float> randomVec(size_t n, unsigned seed, float lo = -2,
                             float hi = 2) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

template <class T> double tol();
template <> double tol<float>() { return 2e-5; }
template <> double tol<f16>() { return 4e-3; }
template <> double tol<bf16>() { return 2e-2; }

/// |got - want| <= tol * max(1, |want|), elementwise, with the index named.
void expectClose(const std::vector<double> &got,
                 const std::vector<double> &want, double tolerance,
                 const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]),
              tolerance * std::max(1.0, std::fabs(want[i])))
        << what << " at " << i << ": got " << got[i] << ", want " << want[i];
}

struct Shape2 {
  int64_t rows, cols;
  unsigned block;
};
// Non-multiples of the block size, one element, a long row, zero-size.
const Shape2 kShapes[] = {{5, 37, 32},  {3, 130, 64},   {1, 1, 32},
                          {7, 300, 96}, {2, 1000, 256}, {0, 9, 32},
                          {200, 5, 32}, {4, 0, 64}};

unsigned rowGrid(int64_t rows) {
  return static_cast<unsigned>(std::min<int64_t>(rows, 3)); // < rows: strides
}

std::string label(const char *kind, const Shape2 &s) {
  return std::string(kind) + " " + std::to_string(s.rows) + "x" +
         std::to_string(s.cols) + " block " + std::to_string(s.block);
}

// Type-parameterized over the element types.
template <class T> struct Kernels;
#define SPMD_BIND(S, TT)                                                       \
  template <> struct Kernels<TT> {                                             \
    static constexpr auto affineGelu = spmd_affine_gelu_##S;                   \
    static constexpr auto softmaxFwd = spmd_softmax_fwd_##S;                   \
    static constexpr auto softmaxBwd = spmd_softmax_bwd_##S;                   \
    static constexpr auto layerNormFwd = spmd_layer_norm_fwd_##S;              \
    static constexpr auto layerNormBwdInput = spmd_layer_norm_bwd_input_##S;   \
    static constexpr auto layerNormBwdParams = spmd_layer_norm_bwd_params_##S; \
    static constexpr auto rmsNormFwd = spmd_rms_norm_fwd_##S;                  \
    static constexpr auto layerNormBwdParamsPartial =                          \
        spmd_layer_norm_bwd_params_partial_##S;                                \
    static constexpr auto columnSum = spmd_column_sum_##S;                     \
    static constexpr auto crossEntropyFwd = spmd_cross_entropy_fwd_##S;        \
  };
SPMD_FOR_EACH_TYPE(SPMD_BIND)

template <class T> class EmuKernels : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, f16, bf16>;
TYPED_TEST_SUITE(EmuKernels, ElementTypes);

double geluRef(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

TYPED_TEST(EmuKernels, AffineGelu) {
  using T = TypeParam;
  for (const Shape2 &s : kShapes) {
    size_t n = s.rows * s.cols;
    auto x = toT<T>(randomVec(n, 1)), a = toT<T>(randomVec(s.cols, 2)),
         b = toT<T>(randomVec(s.cols, 3));
    std::vector<T> y(n);
    if (n) {
      unsigned grid = static_cast<unsigned>(std::min<size_t>(
          (n + s.block - 1) / s.block, 2)); // fewer threads than elements
      ASSERT_EQ(launch(Kernels<T>::affineGelu, dim3(grid), dim3(s.block),
                       x.data(), a.data(), b.data(), y.data(), s.rows, s.cols),
                "");
    }
    auto xd = toD(x), ad = toD(a), bd = toD(b);
    std::vector<double> want(n);
    for (size_t i = 0; i < n; ++i)
      want[i] = geluRef(xd[i] * ad[i % s.cols] + bd[i % s.cols]);
    expectClose(toD(y), want, tol<T>(), label("affine_gelu", s));
  }
}

TEST(EmuKernels, AffineGeluVec4MatchesScalar) {
  const int64_t rows = 6, cols = 44;
  auto x = randomVec(rows * cols, 4), a = randomVec(cols, 5),
       b = randomVec(cols, 6);
  std::vector<float> y1(rows * cols), y2(rows * cols);
  ASSERT_TRUE(spmdk::aligned16(x.data()) && spmdk::aligned16(a.data()));
  ASSERT_EQ(launch(spmd_affine_gelu_f32_vec4, dim3(2), dim3(32), x.data(),
                   a.data(), b.data(), y1.data(), rows, cols),
            "");
  ASSERT_EQ(launch(spmd_affine_gelu_f32, dim3(3), dim3(64), x.data(), a.data(),
                   b.data(), y2.data(), rows, cols),
            "");
  for (size_t i = 0; i < y1.size(); ++i)
    ASSERT_EQ(y1[i], y2[i]) << i;
}

TEST(EmuKernels, SoftmaxVec4PathMatchesScalarPath) {
  const int64_t rows = 5, cols = 132;
  // One extra float in front: offset 1 is misaligned (scalar path),
  // offset 4 is aligned (float4 path); same values in both.
  auto v = randomVec(rows * cols, 50, -5, 5);
  std::vector<float> x1(rows * cols + 4), y1(rows * cols + 4),
      y4(rows * cols + 4);
  std::copy(v.begin(), v.end(), x1.begin() + 1);
  std::vector<float> x4(rows * cols + 4);
  std::copy(v.begin(), v.end(), x4.begin() + 4);
  ASSERT_FALSE(spmdk::aligned16(x1.data() + 1));
  ASSERT_TRUE(spmdk::aligned16(x4.data() + 4));
  ASSERT_EQ(launch(spmd_softmax_fwd_f32, dim3(2), dim3(64), x1.data() + 1,
                   y1.data() + 1, rows, cols),
            "");
  ASSERT_EQ(launch(spmd_softmax_fwd_f32, dim3(2), dim3(64), x4.data() + 4,
                   y4.data() + 4, rows, cols),
            "");
  for (int64_t i = 0; i < rows * cols; ++i)
    ASSERT_NEAR(y1[i + 1], y4[i + 4], 1e-6 * std::max(1.0f, y1[i + 1])) << i;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      sum += y4[4 + r * cols + c];
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

TYPED_TEST(EmuKernels, Softmax) {
  using T = TypeParam;
  for (const Shape2 &s : kShapes) {
    size_t n = s.rows * s.cols;
    auto x = toT<T>(randomVec(n, 7, -6, 6)), dy = toT<T>(randomVec(n, 8));
    std::vector<T> y(n), dx(n);
    if (s.rows) {
      ASSERT_EQ(launch(Kernels<T>::softmaxFwd, dim3(rowGrid(s.rows)),
                       dim3(s.block), x.data(), y.data(), s.rows, s.cols),
                "");
      ASSERT_EQ(launch(Kernels<T>::softmaxBwd, dim3(rowGrid(s.rows)),
                       dim3(s.block), y.data(), dy.data(), dx.data(), s.rows,
                       s.cols),
                "");
    }
    auto xd = toD(x), yd = toD(y), dyd = toD(dy);
    std::vector<double> want(n), wantDx(n);
    for (int64_t r = 0; r < s.rows; ++r) {
      double m = -INFINITY, sum = 0, dot = 0;
      for (int64_t c = 0; c < s.cols; ++c)
        m = std::max(m, xd[r * s.cols + c]);
      for (int64_t c = 0; c < s.cols; ++c)
        sum += std::exp(xd[r * s.cols + c] - m);
      for (int64_t c = 0; c < s.cols; ++c)
        want[r * s.cols + c] = std::exp(xd[r * s.cols + c] - m) / sum;
      // The backward from the kernel's own (rounded) forward output.
      for (int64_t c = 0; c < s.cols; ++c)
        dot += yd[r * s.cols + c] * dyd[r * s.cols + c];
      for (int64_t c = 0; c < s.cols; ++c)
        wantDx[r * s.cols + c] =
            yd[r * s.cols + c] * (dyd[r * s.cols + c] - dot);
    }
    expectClose(yd, want, tol<T>(), label("softmax_fwd", s));
    expectClose(toD(dx), wantDx, 2 * tol<T>(), label("softmax_bwd", s));
  }
}

TYPED_TEST(EmuKernels, LayerNorm) {
  using T = TypeParam;
  const float eps = 1e-5f;
  for (const Shape2 &s : kShapes) {
    size_t n = s.rows * s.cols;
    auto x = toT<T>(randomVec(n, 9, -3, 5)), g = toT<T>(randomVec(s.cols, 10)),
         b = toT<T>(randomVec(s.cols, 11)), dy = toT<T>(randomVec(n, 12));
    std::vector<T> y(n), dx(n), dg(s.cols), db(s.cols);
    std::vector<float> mean(s.rows, -1), rstd(s.rows, -1);
    if (s.rows) {
      ASSERT_EQ(launch(Kernels<T>::layerNormFwd, dim3(rowGrid(s.rows)),
                       dim3(s.block), x.data(), g.data(), b.data(), y.data(),
                       mean.data(), rstd.data(), s.rows, s.cols, eps),
                "");
      ASSERT_EQ(launch(Kernels<T>::layerNormBwdInput, dim3(rowGrid(s.rows)),
                       dim3(s.block), x.data(), dy.data(), g.data(),
                       mean.data(), rstd.data(), dx.data(), s.rows, s.cols),
                "");
    }
    if (s.cols) {
      ASSERT_EQ(launch(Kernels<T>::layerNormBwdParams,
                       dim3((s.cols + s.block - 1) / s.block), dim3(s.block),
                       x.data(), dy.data(), mean.data(), rstd.data(), dg.data(),
                       db.data(), s.rows, s.cols),
                "");
    }
    // The two-stage version, with the launch the backend would choose
    // (few SMs, so tall inputs get several row chunks).
    std::vector<T> dg2(s.cols), db2(s.cols);
    spmd::cuda::LaunchDims pd =
        spmd::cuda::columnPartialLaunch(s.rows, s.cols, /*smCount=*/2);
    if (pd.grid) {
      std::vector<float> pg(pd.gridY * s.cols), pb(pd.gridY * s.cols);
      ASSERT_EQ(launch(Kernels<T>::layerNormBwdParamsPartial,
                       dim3(pd.grid, pd.gridY), dim3(pd.block), x.data(),
                       dy.data(), mean.data(), rstd.data(), pg.data(),
                       pb.data(), s.rows, s.cols),
                "");
      spmdk::i64 chunks = pd.gridY;
      ASSERT_EQ(launch(Kernels<T>::columnSum, dim3(1), dim3(64), pg.data(),
                       dg2.data(), chunks, s.cols),
                "");
      ASSERT_EQ(launch(Kernels<T>::columnSum, dim3(1), dim3(64), pb.data(),
                       db2.data(), chunks, s.cols),
                "");
    }
    auto xd = toD(x), gd = toD(g), bd = toD(b), dyd = toD(dy);
    std::vector<double> wantY(n), wantDx(n), wantDg(s.cols, 0),
        wantDb(s.cols, 0), wantMean(s.rows), wantRstd(s.rows);
    for (int64_t r = 0; r < s.rows; ++r) {
      const double *xr = &xd[r * s.cols];
      double mu = 0, var = 0;
      for (int64_t c = 0; c < s.cols; ++c)
        mu += xr[c];
      mu = s.cols ? mu / s.cols : 0;
      for (int64_t c = 0; c < s.cols; ++c)
        var += (xr[c] - mu) * (xr[c] - mu);
      var = s.cols ? var / s.cols : 0;
      double rs = 1 / std::sqrt(var + eps);
      wantMean[r] = mu;
      wantRstd[r] = rs;
      double sg = 0, sgx = 0;
      for (int64_t c = 0; c < s.cols; ++c) {
        double xh = (xr[c] - mu) * rs, gg = dyd[r * s.cols + c] * gd[c];
        wantY[r * s.cols + c] = xh * gd[c] + bd[c];
        sg += gg;
        sgx += gg * xh;
        wantDg[c] += dyd[r * s.cols + c] * xh;
        wantDb[c] += dyd[r * s.cols + c];
      }
      for (int64_t c = 0; c < s.cols; ++c) {
        double xh = (xr[c] - mu) * rs, gg = dyd[r * s.cols + c] * gd[c];
        wantDx[r * s.cols + c] = rs * (gg - sg / s.cols - xh * sgx / s.cols);
      }
    }
    std::vector<double> meanD(mean.begin(), mean.end()),
        rstdD(rstd.begin(), rstd.end());
    expectClose(meanD, wantMean, 1e-5, label("layer_norm mean", s));
    expectClose(rstdD, wantRstd, 1e-4, label("layer_norm rstd", s));
    expectClose(toD(y), wantY, tol<T>(), label("layer_norm_fwd", s));
    expectClose(toD(dx), wantDx, 4 * tol<T>(), label("layer_norm_bwd dx", s));
    // Column sums over up to 7 rows of O(1) terms.
    expectClose(toD(dg), wantDg, 4 * tol<T>(),
                label("layer_norm_bwd dgamma", s));
    expectClose(toD(db), wantDb, 4 * tol<T>(),
                label("layer_norm_bwd dbeta", s));
    expectClose(toD(dg2), wantDg, 4 * tol<T>(),
                label("layer_norm_bwd dgamma (two-stage)", s));
    expectClose(toD(db2), wantDb, 4 * tol<T>(),
                label("layer_norm_bwd dbeta (two-stage)", s));
  }
}

TYPED_TEST(EmuKernels, RmsNorm) {
  using T = TypeParam;
  const float eps = 1e-6f;
  for (const Shape2 &s : kShapes) {
    size_t n = s.rows * s.cols;
    auto x = toT<T>(randomVec(n, 13)), g = toT<T>(randomVec(s.cols, 14));
    std::vector<T> y(n);
    std::vector<float> rstd(s.rows);
    if (s.rows) {
      ASSERT_EQ(launch(Kernels<T>::rmsNormFwd, dim3(rowGrid(s.rows)),
                       dim3(s.block), x.data(), g.data(), y.data(), rstd.data(),
                       s.rows, s.cols, eps),
                "");
    }
    auto xd = toD(x), gd = toD(g);
    std::vector<double> want(n);
    for (int64_t r = 0; r < s.rows; ++r) {
      double q = 0;
      for (int64_t c = 0; c < s.cols; ++c)
        q += xd[r * s.cols + c] * xd[r * s.cols + c];
      double rs = 1 / std::sqrt((s.cols ? q / s.cols : 0) + eps);
      for (int64_t c = 0; c < s.cols; ++c)
        want[r * s.cols + c] = xd[r * s.cols + c] * rs * gd[c];
    }
    expectClose(toD(y), want, tol<T>(), label("rms_norm_fwd", s));
  }
}

TYPED_TEST(EmuKernels, CrossEntropy) {
  using T = TypeParam;
  for (const Shape2 &s : kShapes) {
    if (!s.cols)
      continue; // no class to point at
    size_t n = s.rows * s.cols;
    auto x = toT<T>(randomVec(n, 15, -4, 4));
    std::vector<spmdk::i64> target(s.rows);
    int64_t counted = 0;
    for (int64_t r = 0; r < s.rows; ++r) {
      target[r] = r == 1 ? -100 : (r * 7 + 3) % s.cols; // row 1 ignored
      counted += target[r] >= 0;
    }
    std::vector<float> loss(s.rows, -1);
    float total = 0;
    std::vector<T> probs(n);
    float scale = counted ? 1.0f / counted : 0.0f;
    if (s.rows) {
      ASSERT_EQ(launch(Kernels<T>::crossEntropyFwd, dim3(rowGrid(s.rows)),
                       dim3(s.block), x.data(), target.data(), loss.data(),
                       &total, probs.data(), s.rows, s.cols, scale),
                "");
    }
    auto xd = toD(x);
    std::vector<double> wantLoss(s.rows), wantProbs(n);
    double wantTotal = 0;
    for (int64_t r = 0; r < s.rows; ++r) {
      double m = -INFINITY, sum = 0;
      for (int64_t c = 0; c < s.cols; ++c)
        m = std::max(m, xd[r * s.cols + c]);
      for (int64_t c = 0; c < s.cols; ++c)
        sum += std::exp(xd[r * s.cols + c] - m);
      for (int64_t c = 0; c < s.cols; ++c)
        wantProbs[r * s.cols + c] = std::exp(xd[r * s.cols + c] - m) / sum;
      wantLoss[r] =
          target[r] >= 0 ? m + std::log(sum) - xd[r * s.cols + target[r]] : 0;
      wantTotal += wantLoss[r] * scale;
    }
    std::vector<double> lossD(loss.begin(), loss.end());
    expectClose(lossD, wantLoss, 1e-5, label("cross_entropy loss", s));
    expectClose({total}, {wantTotal}, 1e-5, label("cross_entropy mean", s));
    expectClose(toD(probs), wantProbs, tol<T>(),
                label("cross_entropy probs", s));
  }
}

TEST(EmuKernels, ConvertsBetween16BitFloatsAndF32) {
  auto v = randomVec(1000, 30, -70000, 70000); // beyond f16's range too
  std::vector<f16> h(v.size());
  std::vector<bf16> b(v.size());
  std::vector<float> back(v.size());
  ASSERT_EQ(launch(spmd_convert_f32_f16, dim3(3), dim3(64), v.data(), h.data(),
                   (spmdk::i64)v.size()),
            "");
  ASSERT_EQ(launch(spmd_convert_f32_bf16, dim3(3), dim3(64), v.data(), b.data(),
                   (spmdk::i64)v.size()),
            "");
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(h[i].bits, spmd::floatToHalf(v[i])) << i;
    ASSERT_EQ(b[i].bits, spmd::floatToBF16(v[i])) << i;
  }
  ASSERT_EQ(launch(spmd_convert_bf16_f32, dim3(2), dim3(32), b.data(),
                   back.data(), (spmdk::i64)v.size()),
            "");
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(back[i], spmd::bf16ToFloat(b[i].bits)) << i;
  ASSERT_EQ(launch(spmd_convert_f16_f32, dim3(2), dim3(32), h.data(),
                   back.data(), (spmdk::i64)v.size()),
            "");
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(back[i], spmd::halfToFloat(h[i].bits)) << i;
}

// A kernel as the code generator prints it for a broadcast: out[i, j, k] =
// tanh(a[i, j, k] + b[i, 0, k]) with b read through a StridedView whose
// stride is 0 along the broadcast dim.
extern "C" __global__ void generatedBroadcast(const bf16 *a, const float *b,
                                              bf16 *out, spmdk::StridedView bv,
                                              long long n) {
  spmdk::gridStride(n, [&](long long i) {
    spmdk::store(out, i, tanhf(spmdk::load(a, i) + b[bv.offset(i)]));
  });
}

TEST(EmuKernels, GeneratedBroadcastThroughStridedView) {
  const int64_t I = 3, J = 4, K = 5, n = I * J * K;
  auto a = toT<bf16>(randomVec(n, 40));
  auto b = randomVec(I * K, 41);
  std::vector<bf16> out(n);
  spmdk::StridedView bv{3, {I, J, K}, {K, 0, 1}};
  ASSERT_EQ(launch(generatedBroadcast, dim3(2), dim3(32), a.data(), b.data(),
                   out.data(), bv, (long long)n),
            "");
  auto ad = toD(a);
  std::vector<double> want(n);
  for (int64_t i = 0; i < I; ++i)
    for (int64_t j = 0; j < J; ++j)
      for (int64_t k = 0; k < K; ++k) {
        int64_t l = (i * J + j) * K + k;
        want[l] = std::tanh(ad[l] + b[i * K + k]);
      }
  expectClose(toD(out), want, tol<bf16>(), "broadcast through StridedView");
}

// The emulation itself: barriers order shared-memory phases, shuffles move
// values between lanes, divergent barriers are reported, bad launches too.
void reverseInBlock(int *data) {
  SPMD_SHARED(int, tile, 128);
  tile[threadIdx.x] = data[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  data[blockIdx.x * blockDim.x + threadIdx.x] =
      tile[blockDim.x - 1 - threadIdx.x];
}
void shuffles(int *out) {
  int lane = threadIdx.x & 31;
  out[threadIdx.x * 2] = __shfl_xor_sync(0xffffffffu, lane * 10, 5);
  out[threadIdx.x * 2 + 1] = __shfl_down_sync(0xffffffffu, lane * 10, 3);
}
// Lane 0 waits for its warp while the rest of the block waits at
// __syncthreads: neither barrier can complete.
void divergent(int *) {
  if (threadIdx.x == 0)
    __syncwarp();
  else
    __syncthreads();
}

TEST(HostEmu, BarrierOrdersSharedMemory) {
  std::vector<int> data(3 * 128);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<int>(i);
  ASSERT_EQ(launch(reverseInBlock, dim3(3), dim3(128), data.data()), "");
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 128; ++t)
      ASSERT_EQ(data[b * 128 + t], b * 128 + 127 - t);
}

TEST(HostEmu, WarpShuffles) {
  std::vector<int> out(64 * 2);
  ASSERT_EQ(launch(shuffles, dim3(1), dim3(64), out.data()), "");
  for (int t = 0; t < 64; ++t) {
    int lane = t & 31;
    EXPECT_EQ(out[t * 2], (lane ^ 5) * 10) << t;
    EXPECT_EQ(out[t * 2 + 1], (lane + 3 < 32 ? lane + 3 : lane) * 10) << t;
  }
}

TEST(HostEmu, DivergentBarrierIsReported) {
  std::string err = launch(divergent, dim3(1), dim3(64), (int *)nullptr);
  EXPECT_NE(err.find("threads wait at different barriers"), std::string::npos)
      << err;
}

TEST(HostEmu, BadLaunchesAreReported) {
  EXPECT_NE(launch(divergent, dim3(0), dim3(32), (int *)nullptr), "");
  EXPECT_NE(launch(divergent, dim3(1), dim3(2048), (int *)nullptr), "");
}

// A grid-stride loop, the shape of kernels run without fibers.
void gridStrideSquare(const int *in, int *out, long long n) {
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x)
    out[i] = in[i] * in[i];
}

TEST(HostEmu, FlatLaunchesRunEveryThread) {
  std::vector<int> in(1000), fibers(1000, -1), flat(1000, -1);
  for (int i = 0; i < 1000; ++i)
    in[i] = i - 500;
  ASSERT_EQ(launch(gridStrideSquare, dim3(3), dim3(64), in.data(),
                   fibers.data(), 1000LL),
            "");
  ASSERT_EQ(launchFlat(gridStrideSquare, dim3(3), dim3(64), in.data(),
                       flat.data(), 1000LL),
            "");
  EXPECT_EQ(flat, fibers);
  EXPECT_EQ(flat[7], 493 * 493);
  EXPECT_NE(launchFlat(gridStrideSquare, dim3(0), dim3(64), in.data(),
                       flat.data(), 1000LL),
            "");
}

TEST(HostEmuDeathTest, FlatLaunchRefusesBarriers) {
  std::vector<int> data(128);
  EXPECT_DEATH(
      (void)launchFlat(reverseInBlock, dim3(1), dim3(128), data.data()),
      "shared memory in a kernel launched without fibers");
}

TEST(HostEmu, HalfConversionsMatchRuntime) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 1e-7f, 3.14159f, 1e30f}) {
    EXPECT_EQ(spmdk::fromF32<f16>(v).bits, spmd::floatToHalf(v)) << v;
    EXPECT_EQ(spmdk::fromF32<bf16>(v).bits, spmd::floatToBF16(v)) << v;
    EXPECT_EQ(spmdk::toF32(spmdk::fromF32<bf16>(v)),
              spmd::bf16ToFloat(spmd::floatToBF16(v)));
  }
}

// The kernels against PyTorch itself (softmax and its backward, layer_norm
// with affine parameters and its backward, cross-entropy with an ignored
// row), on a shape that is not a multiple of the block.
// PyTorch computes in f64 here; the inputs are f32 values printed exactly.
TEST(EmuKernels, SoftmaxLayerNormCrossEntropyMatchPyTorch) {
  const std::string python = SPMD_PYTHON;
  if (std::system((python + " -c 'import torch' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "needs " << python << " with torch";
  const int64_t rows = 5, cols = 77;
  auto x = randomVec(rows * cols, 21, -3, 3), dy = randomVec(rows * cols, 22);
  auto g = randomVec(cols, 23), b = randomVec(cols, 24);
  std::string path = testing::TempDir() + "spmd_emu_torch_" +
                     std::to_string(getpid()) + ".txt";
  {
    FILE *f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    for (auto *v : {&x, &dy, &g, &b}) {
      for (float e : *v)
        std::fprintf(f, "%.9g ", e);
      std::fprintf(f, "\n");
    }
    std::fclose(f);
  }
  std::string cmd =
      python +
      " -c \""
      "import torch,sys\n"
      "L=[list(map(float,l.split())) for l in open(sys.argv[1])]\n"
      "x=torch.tensor(L[0],dtype=torch.float64).reshape(5,77).requires_grad_()"
      "\n"
      "dy=torch.tensor(L[1],dtype=torch.float64).reshape(5,77)\n"
      "g=torch.tensor(L[2],dtype=torch.float64);b=torch.tensor(L[3],dtype="
      "torch.float64)\n"
      "y=torch.softmax(x,-1);y.backward(dy)\n"
      "sg=x.grad\n"
      "x2=x.detach().clone().requires_grad_();g.requires_grad_();b."
      "requires_grad_()\n"
      "ln=torch.nn.functional.layer_norm(x2,(77,),g,b,1e-5);ln.backward(dy)\n"
      "t=torch.tensor([3,-100,76,0,41])\n"
      "ce=torch.nn.functional.cross_entropy(x.detach(),t,reduction='none')\n"
      "cm=torch.nn.functional.cross_entropy(x.detach(),t)\n"
      "for v in (y,sg,ln,x2.grad,g.grad,b.grad,ce,cm.reshape(1)):print(' '."
      "join(repr(e) for e in v.detach().flatten().tolist()))\n"
      "\" " +
      path;
  FILE *p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t k = std::fread(buf, 1, sizeof buf, p))
    out.append(buf, k);
  ASSERT_EQ(pclose(p), 0) << out;
  std::remove(path.c_str());
  std::istringstream in(out);
  std::vector<std::vector<double>> want(8);
  for (int i : {0, 1, 2, 3})
    want[i].resize(rows * cols);
  want[4].resize(cols);
  want[5].resize(cols);
  want[6].resize(rows);
  want[7].resize(1);
  for (auto &w : want)
    for (double &v : w)
      ASSERT_TRUE(in >> v);

  std::vector<float> y(rows * cols), dx(rows * cols), ln(rows * cols),
      mean(rows), rstd(rows);
  ASSERT_EQ(launch(spmd_softmax_fwd_f32, dim3(2), dim3(64), x.data(), y.data(),
                   rows, cols),
            "");
  ASSERT_EQ(launch(spmd_softmax_bwd_f32, dim3(2), dim3(64), y.data(), dy.data(),
                   dx.data(), rows, cols),
            "");
  ASSERT_EQ(launch(spmd_layer_norm_fwd_f32, dim3(5), dim3(32), x.data(),
                   g.data(), b.data(), ln.data(), mean.data(), rstd.data(),
                   rows, cols, 1e-5f),
            "");
  auto d = [](const std::vector<float> &v) {
    return std::vector<double>(v.begin(), v.end());
  };
  expectClose(d(y), want[0], 1e-5, "softmax vs torch");
  expectClose(d(dx), want[1], 1e-5, "softmax backward vs torch");
  expectClose(d(ln), want[2], 1e-5, "layer_norm vs torch");
  std::vector<float> lnDx(rows * cols), dg(cols), db(cols), loss(rows);
  ASSERT_EQ(launch(spmd_layer_norm_bwd_input_f32, dim3(3), dim3(64), x.data(),
                   dy.data(), g.data(), mean.data(), rstd.data(), lnDx.data(),
                   rows, cols),
            "");
  ASSERT_EQ(launch(spmd_layer_norm_bwd_params_f32, dim3(1), dim3(32), x.data(),
                   dy.data(), mean.data(), rstd.data(), dg.data(), db.data(),
                   rows, cols),
            "");
  std::vector<spmdk::i64> target = {3, -100, 76, 0, 41};
  float total = 0;
  ASSERT_EQ(launch(spmd_cross_entropy_fwd_f32, dim3(2), dim3(32), x.data(),
                   target.data(), loss.data(), &total, (float *)nullptr, rows,
                   cols, 1.0f / 4), // 4 rows counted
            "");
  expectClose(d(lnDx), want[3], 1e-5, "layer_norm backward dx vs torch");
  expectClose(d(dg), want[4], 1e-5, "layer_norm dgamma vs torch");
  expectClose(d(db), want[5], 1e-5, "layer_norm dbeta vs torch");
  expectClose(d(loss), want[6], 1e-5, "cross_entropy per row vs torch");
  expectClose({total}, want[7], 1e-5, "cross_entropy mean vs torch");
}

} // namespace
