//===- Nvrtc.h - CUDA C++ to cubin through NVRTC ---------------*- C++ -*-===//
//
// Compiles one CUDA C++ translation unit (the kernels of a plan, which
// include "spmd_kernels.cuh") to a cubin per target architecture and to PTX
// for the lowest one, without a GPU: the CUDA target's side of the module
// format of runtime/cuda/CudaModule.h. The result keeps the source, so a
// plan loaded on an architecture it has no cubin for recompiles it there
// (nvrtcRecompiler, for selectImage); PTX is the last resort (the driver
// JIT-compiles it).
//
// Results are cached in memory (and in a directory when one is set) under a
// hash of everything that determines them: NVRTC version, source, headers,
// options and architecture.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CUDA_NVRTC_H
#define SPMD_TARGETS_CUDA_NVRTC_H

#include "runtime/Status.h"
#include "runtime/cuda/CudaModule.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace spmd {
namespace cuda {

struct CompileOptions {
  /// Target SM versions, e.g. {80, 90} for sm_80 and sm_90.
  std::vector<int> archs = {80, 90};
  /// Also emit PTX for compute_<min arch> (driver-JIT fallback).
  bool ptx = true;
  bool lineInfo = false;
  bool fastMath = false;
  /// Extra NVRTC options, passed through.
  std::vector<std::string> extra;
};

/// One compilation through NVRTC. `headers` are (include name, text) pairs;
/// the kernel library is always available as "spmd_kernels.cuh".
/// `ptx` selects PTX output (compute_<arch>) instead of a cubin (sm_<arch>).
/// On error the message names `name`, the architecture and has NVRTC's log.
Status compileOne(
    const std::string &name, const std::string &source, int arch, bool ptx,
    const CompileOptions &options, std::string &image,
    const std::vector<std::pair<std::string, std::string>> &headers = {});

/// Every architecture of `options` (and PTX), through the cache.
Status compileModule(const std::string &name, const std::string &source,
                     const CompileOptions &options, CompiledModule &module);

/// selectImage's recompilation for a device without a cubin: compileOne of
/// the kept source (cached) with `options`.
Recompiler nvrtcRecompiler(const CompileOptions &options);

/// SM versions this NVRTC can target, and its version as major*1000+minor*10.
std::vector<int> supportedArchs();
int nvrtcVersion();

/// Cache: memory always; also `dir` when non-empty (created on demand).
/// The default directory comes from $SPMD_NVRTC_CACHE.
void setCacheDirectory(const std::string &dir);
struct CacheStats {
  uint64_t hits = 0, misses = 0;
};
CacheStats cacheStats();
void clearMemoryCache();

/// FNV-1a 64, the cache key's hash.
uint64_t hash64(const std::string &text,
                uint64_t seed = 1469598103934665603ull);

} // namespace cuda
} // namespace spmd

#endif // SPMD_TARGETS_CUDA_NVRTC_H
