//===- Collectives.cpp - Block helpers for plan collectives -------------===//

#include "runtime/Collectives.h"

#include <cstring>

using namespace spmd;
using namespace spmd::plan;

Collectives::~Collectives() = default;

void plan::copyBox(const void *src, const Shape &srcShape,
                   const Shape &srcOffset, void *dst, const Shape &dstShape,
                   const Shape &dstOffset, const Shape &extent,
                   size_t elemBytes) {
  size_t rank = extent.size();
  if (numElements(extent) == 0)
    return;
  if (rank == 0) {
    std::memcpy(dst, src, elemBytes);
    return;
  }
  // Row-major strides in elements.
  std::vector<int64_t> srcStride(rank, 1), dstStride(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) {
    srcStride[d - 1] = srcStride[d] * srcShape[d];
    dstStride[d - 1] = dstStride[d] * dstShape[d];
  }
  // The innermost dim is contiguous: one memcpy per row of the box.
  std::vector<int64_t> index(rank, 0);
  const char *s = static_cast<const char *>(src);
  char *t = static_cast<char *>(dst);
  size_t rowBytes = static_cast<size_t>(extent[rank - 1]) * elemBytes;
  while (true) {
    int64_t so = 0, to = 0;
    for (size_t d = 0; d < rank; ++d) {
      so += (srcOffset[d] + index[d]) * srcStride[d];
      to += (dstOffset[d] + index[d]) * dstStride[d];
    }
    std::memcpy(t + to * elemBytes, s + so * elemBytes, rowBytes);
    // Next row: advance dims rank-2 .. 0.
    int64_t d = static_cast<int64_t>(rank) - 2;
    for (; d >= 0; --d) {
      if (++index[d] < extent[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

template <typename T>
static void reduceTyped(T *acc, const T *x, int64_t n, ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Avg:
    for (int64_t i = 0; i < n; ++i)
      acc[i] += x[i];
    return;
  case ReduceKind::Max:
    for (int64_t i = 0; i < n; ++i)
      acc[i] = x[i] > acc[i] ? x[i] : acc[i];
    return;
  case ReduceKind::Min:
    for (int64_t i = 0; i < n; ++i)
      acc[i] = x[i] < acc[i] ? x[i] : acc[i];
    return;
  }
}

void plan::reduceInto(void *acc, const void *x, int64_t n, DType type,
                      ReduceKind kind) {
  switch (type) {
  case DType::F32:
    return reduceTyped(static_cast<float *>(acc), static_cast<const float *>(x),
                       n, kind);
  case DType::F64:
    return reduceTyped(static_cast<double *>(acc),
                       static_cast<const double *>(x), n, kind);
  case DType::I32:
    return reduceTyped(static_cast<int32_t *>(acc),
                       static_cast<const int32_t *>(x), n, kind);
  case DType::I64:
    return reduceTyped(static_cast<int64_t *>(acc),
                       static_cast<const int64_t *>(x), n, kind);
  default:
    // 16-bit floats and i8: through double, one rounding per step.
    for (int64_t i = 0; i < n; ++i) {
      double a = loadAsDouble(acc, type, i), b = loadAsDouble(x, type, i);
      double r = kind == ReduceKind::Max   ? (b > a ? b : a)
                 : kind == ReduceKind::Min ? (b < a ? b : a)
                                           : a + b;
      storeFromDouble(acc, type, i, r);
    }
  }
}

void plan::scaleBy(void *data, int64_t n, DType type, double divisor) {
  for (int64_t i = 0; i < n; ++i)
    storeFromDouble(data, type, i, loadAsDouble(data, type, i) / divisor);
}

std::string plan::runCollective(Collectives &comm, const Step &step,
                                const void *in, const Shape &inShape, void *out,
                                const Shape &outShape) {
  DType type = step.operands[0].type;
  switch (step.kind) {
  case StepKind::AllGather:
    return comm.allGather(in, inShape, out, outShape, type, step.axes,
                          step.dim0);
  case StepKind::AllReduce:
    return comm.allReduce(in, inShape, out, type, step.axes, step.reduce);
  case StepKind::ReduceScatter:
    return comm.reduceScatter(in, inShape, out, outShape, type, step.axes,
                              step.dim0, step.reduce);
  case StepKind::AllToAll:
    return comm.allToAll(in, inShape, out, outShape, type, step.axes, step.dim0,
                         step.dim1);
  default:
    return std::string(stepKindName(step.kind)) + " is not a collective";
  }
}
