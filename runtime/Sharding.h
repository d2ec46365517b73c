//===- Sharding.h - Global arrays to rank blocks and back ------*- C++ -*-===//
//
// spmd-run reads global inputs and writes global outputs; these helpers cut
// a global row-major array into the block each device holds under a Layout,
// and put the global array back together from every device's block.
//
// Scatter: S dims take localRanges; R copies; a partial axis P(sum) puts the
// value on group index 0 of that axis and zeros elsewhere, while P(avg|max|
// min) put the value on every member (each reduces back to the value).
//
// Assemble: S blocks go to their ranges; R takes the block at coordinate 0;
// partial axes are reduced over their members, the last partial mesh axis
// first (f16/bf16 in f32).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_SHARDING_H
#define SPMD_RUNTIME_SHARDING_H

#include "core/Layout.h"
#include "runtime/DType.h"
#include "runtime/Status.h"

#include <vector>

namespace spmd {

/// Device `device`'s block of the global array `global` (shape
/// `globalShape`) under `layout`.
Status scatterToLocal(const Mesh &mesh, const Layout &layout, DType dtype,
                      const void *global, const Shape &globalShape,
                      int64_t device, std::vector<char> &local,
                      Shape &localShape);

/// The global array from `blocks[d]`, device d's block (of shape
/// localShape(mesh, layout, globalShape, coords(d))), written to `global`
/// (numElements(globalShape) elements).
Status assembleGlobal(const Mesh &mesh, const Layout &layout, DType dtype,
                      const Shape &globalShape,
                      const std::vector<const void *> &blocks, void *global);

} // namespace spmd

#endif // SPMD_RUNTIME_SHARDING_H
