//===- LaunchConfig.h - Grid and block sizes from shapes -------*- C++ -*-===//
//
// How the backend launches the library's kernel kinds (pure arithmetic, used
// by the device launcher and by the emulation tests alike).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_LAUNCHCONFIG_H
#define SPMD_RUNTIME_CUDA_LAUNCHCONFIG_H

#include <algorithm>
#include <cstdint>

namespace spmd {
namespace cuda {

struct LaunchDims {
  unsigned grid = 0; // 0: nothing to launch (empty tensor)
  unsigned block = 0;
  unsigned gridY = 1; // row chunks of the two-stage column reductions
};

/// Grid-stride elementwise kernels over `n` items: 256 threads, enough
/// blocks to fill `smCount` SMs a few times over but never more than the
/// work needs.
inline LaunchDims elementwiseLaunch(int64_t n, int smCount = 132) {
  LaunchDims d;
  if (n <= 0)
    return d;
  d.block = 256;
  int64_t blocks = (n + d.block - 1) / d.block;
  int64_t cap = int64_t(std::max(smCount, 1)) * 8;
  d.grid = static_cast<unsigned>(std::min(blocks, cap));
  return d;
}

/// Block-per-row kernels: a multiple of 32 threads, about one thread per 4
/// elements of a row (loads stay coalesced, short rows do not idle 1024
/// threads), 32..1024; one block per row up to 65535 blocks (grid-stride
/// over the rest).
inline LaunchDims rowLaunch(int64_t rows, int64_t cols) {
  LaunchDims d;
  if (rows <= 0)
    return d;
  int64_t want = (cols + 3) / 4;
  int64_t block = std::min<int64_t>(1024, std::max<int64_t>(32, want));
  d.block = static_cast<unsigned>((block + 31) / 32 * 32);
  d.grid = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
  return d;
}

/// Stage 1 of a column reduction over a rows x cols block (e.g. dgamma):
/// 256-thread blocks across the columns, and gridY chunks of rows (at
/// least 32 rows each) so the grid fills the GPU about 4 times over.
inline LaunchDims columnPartialLaunch(int64_t rows, int64_t cols,
                                      int smCount = 132) {
  LaunchDims d;
  if (rows <= 0 || cols <= 0)
    return d;
  d.block = 256;
  int64_t xBlocks = std::min<int64_t>((cols + 255) / 256, 65535);
  int64_t want =
      std::max<int64_t>(1, int64_t(std::max(smCount, 1)) * 4 / xBlocks);
  int64_t chunks = std::min<int64_t>({want, (rows + 31) / 32, 65535});
  d.grid = static_cast<unsigned>(xBlocks);
  d.gridY = static_cast<unsigned>(std::max<int64_t>(chunks, 1));
  return d;
}

/// The f32 elementwise kernels have a float4 variant: usable when the row
/// length is a multiple of 4 and every pointer is 16-byte aligned.
inline bool vectorizable4(int64_t cols,
                          std::initializer_list<const void *> ptrs) {
  if (cols % 4)
    return false;
  for (const void *p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16)
      return false;
  return true;
}

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_LAUNCHCONFIG_H
