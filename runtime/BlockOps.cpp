//===- BlockOps.cpp - Copies and reductions on row-major blocks -----------===//

#include "runtime/BlockOps.h"

#include <algorithm>
#include <cstring>

namespace spmd {

void copyBox(void *dst, const Shape &dstShape, const Shape &dstOffset,
             const void *src, const Shape &srcShape, const Shape &srcOffset,
             const Shape &box, size_t elementSize) {
  size_t rank = box.size();
  for (int64_t b : box)
    if (b == 0)
      return;
  // Byte strides of both blocks.
  std::vector<int64_t> srcStride(rank), dstStride(rank);
  int64_t s = static_cast<int64_t>(elementSize), d = s;
  for (size_t i = rank; i-- > 0;) {
    srcStride[i] = s;
    dstStride[i] = d;
    s *= srcShape[i];
    d *= dstShape[i];
  }
  int64_t srcPos = 0, dstPos = 0;
  for (size_t i = 0; i < rank; ++i) {
    srcPos += srcOffset[i] * srcStride[i];
    dstPos += dstOffset[i] * dstStride[i];
  }
  // Dims [outer, rank) form one contiguous run: every dim inside it but the
  // outermost is spanned fully by the box in both blocks.
  int64_t run = static_cast<int64_t>(elementSize);
  size_t outer = rank;
  while (outer > 0) {
    --outer;
    run *= box[outer];
    if (box[outer] != srcShape[outer] || box[outer] != dstShape[outer])
      break;
  }
  auto *dstBytes = static_cast<char *>(dst);
  const auto *srcBytes = static_cast<const char *>(src);
  if (outer == 0) {
    std::memcpy(dstBytes + dstPos, srcBytes + srcPos, run);
    return;
  }
  std::vector<int64_t> idx(outer, 0);
  while (true) {
    std::memcpy(dstBytes + dstPos, srcBytes + srcPos, run);
    size_t i = outer;
    while (i > 0) {
      --i;
      srcPos += srcStride[i];
      dstPos += dstStride[i];
      if (++idx[i] < box[i])
        break;
      srcPos -= box[i] * srcStride[i];
      dstPos -= box[i] * dstStride[i];
      idx[i] = 0;
      if (i == 0)
        return;
    }
  }
}

namespace {

template <typename T> struct Native {
  using Acc = T;
  static Acc load(const void *p, int64_t i) {
    return static_cast<const T *>(p)[i];
  }
  static void store(void *p, int64_t i, Acc v) { static_cast<T *>(p)[i] = v; }
};
struct Half {
  using Acc = float;
  static float load(const void *p, int64_t i) {
    return halfToFloat(static_cast<const uint16_t *>(p)[i]);
  }
  static void store(void *p, int64_t i, float v) {
    static_cast<uint16_t *>(p)[i] = floatToHalf(v);
  }
};
struct BFloat {
  using Acc = float;
  static float load(const void *p, int64_t i) {
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  }
  static void store(void *p, int64_t i, float v) {
    static_cast<uint16_t *>(p)[i] = floatToBF16(v);
  }
};

template <typename E>
void reduceTyped(ReduceKind kind, const void *const *inputs, int64_t n,
                 void *out, int64_t count, size_t elementSize) {
  using Acc = typename E::Acc;
  // A tile of accumulators on the stack keeps the inner loops simple (they
  // vectorize) and lets `out` alias an input.
  constexpr int64_t kTile = 512;
  Acc acc[kTile];
  for (int64_t base = 0; base < count; base += kTile) {
    int64_t len = std::min(kTile, count - base);
    const char *first = static_cast<const char *>(inputs[0]) +
                        base * static_cast<int64_t>(elementSize);
    for (int64_t k = 0; k < len; ++k)
      acc[k] = E::load(first, k);
    for (int64_t m = 1; m < n; ++m) {
      const char *in = static_cast<const char *>(inputs[m]) +
                       base * static_cast<int64_t>(elementSize);
      switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::Avg:
        for (int64_t k = 0; k < len; ++k)
          acc[k] += E::load(in, k);
        break;
      case ReduceKind::Max:
        for (int64_t k = 0; k < len; ++k) {
          Acc v = E::load(in, k);
          acc[k] = v > acc[k] ? v : acc[k];
        }
        break;
      case ReduceKind::Min:
        for (int64_t k = 0; k < len; ++k) {
          Acc v = E::load(in, k);
          acc[k] = v < acc[k] ? v : acc[k];
        }
        break;
      }
    }
    if (kind == ReduceKind::Avg)
      for (int64_t k = 0; k < len; ++k)
        acc[k] = static_cast<Acc>(acc[k] / static_cast<Acc>(n));
    char *dst =
        static_cast<char *>(out) + base * static_cast<int64_t>(elementSize);
    for (int64_t k = 0; k < len; ++k)
      E::store(dst, k, acc[k]);
  }
}

} // namespace

void reduceBuffers(DType dtype, ReduceKind kind, const void *const *inputs,
                   int64_t n, void *out, int64_t count) {
  if (count <= 0 || n <= 0)
    return;
  size_t es = dtypeSize(dtype);
  switch (dtype) {
  case DType::F32:
    return reduceTyped<Native<float>>(kind, inputs, n, out, count, es);
  case DType::F64:
    return reduceTyped<Native<double>>(kind, inputs, n, out, count, es);
  case DType::I32:
    return reduceTyped<Native<int32_t>>(kind, inputs, n, out, count, es);
  case DType::I64:
    return reduceTyped<Native<int64_t>>(kind, inputs, n, out, count, es);
  case DType::F16:
    return reduceTyped<Half>(kind, inputs, n, out, count, es);
  case DType::BF16:
    return reduceTyped<BFloat>(kind, inputs, n, out, count, es);
  }
}

void widenToF32(DType dtype, const void *src, float *dst, int64_t count) {
  const auto *bits = static_cast<const uint16_t *>(src);
  if (dtype == DType::BF16)
    for (int64_t i = 0; i < count; ++i)
      dst[i] = bf16ToFloat(bits[i]);
  else
    for (int64_t i = 0; i < count; ++i)
      dst[i] = halfToFloat(bits[i]);
}

void narrowFromF32(DType dtype, const float *src, void *dst, int64_t count) {
  auto *bits = static_cast<uint16_t *>(dst);
  if (dtype == DType::BF16)
    for (int64_t i = 0; i < count; ++i)
      bits[i] = floatToBF16(src[i]);
  else
    for (int64_t i = 0; i < count; ++i)
      bits[i] = floatToHalf(src[i]);
}

} // namespace spmd
