//===- BlockOps.h - Copies and reductions on row-major blocks --*- C++ -*-===//
//
// The data movement every communicator and the layout helpers share: copying
// an N-D box between row-major blocks (one memcpy per contiguous run) and
// reducing several equally long buffers element-wise (f16/bf16 in f32).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_BLOCKOPS_H
#define SPMD_RUNTIME_BLOCKOPS_H

#include "core/Layout.h"
#include "runtime/DType.h"

namespace spmd {

/// Copies the box of shape `box` at `srcOffset` in the row-major block `src`
/// (shape `srcShape`) to `dstOffset` in `dst` (shape `dstShape`). Inner
/// dimensions the box spans fully in both blocks are merged into one memcpy.
void copyBox(void *dst, const Shape &dstShape, const Shape &dstOffset,
             const void *src, const Shape &srcShape, const Shape &srcOffset,
             const Shape &box, size_t elementSize);

/// out[k] = reduce(inputs[0][k], ..., inputs[n-1][k]) for k < count, in
/// member order, accumulating f16/bf16 in f32 (avg divides the sum by n;
/// integer avg truncates toward zero). `out` may be one of the inputs.
void reduceBuffers(DType dtype, ReduceKind kind, const void *const *inputs,
                   int64_t n, void *out, int64_t count);

/// Converts `count` elements between a 16-bit float type and f32 (for
/// transports that reduce only in f32, like MPI).
void widenToF32(DType dtype, const void *src, float *dst, int64_t count);
void narrowFromF32(DType dtype, const float *src, void *dst, int64_t count);

} // namespace spmd

#endif // SPMD_RUNTIME_BLOCKOPS_H
