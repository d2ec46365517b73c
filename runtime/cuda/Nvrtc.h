//===- Nvrtc.h - CUDA C++ to cubin through NVRTC ---------------*- C++ -*-===//
//
// Compiles one CUDA C++ translation unit (the kernels of a plan, which
// include "spmd_kernels.cuh") to a cubin per target architecture and to PTX
// for the lowest one, without a GPU. The result keeps the source, so a plan
// loaded on an architecture it has no cubin for recompiles it there (see
// selectImage); PTX is the last resort (the driver JIT-compiles it).
//
// Results are cached in memory (and in a directory when one is set) under a
// hash of everything that determines them: NVRTC version, source, headers,
// options and architecture.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_NVRTC_H
#define SPMD_RUNTIME_CUDA_NVRTC_H

#include "runtime/Status.h"

#include <cstdint>
#include <map>
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

/// The compiled form of one translation unit, as a plan embeds it.
struct CompiledModule {
  std::string name;                  // for messages, e.g. "mlp_step.cu"
  std::string source;                // kept for recompilation at load time
  std::map<int, std::string> cubins; // SM version -> cubin bytes
  int ptxArch = 0;                   // 0: no PTX
  std::string ptx;
};

/// The bytes a plan embeds for a module ("SPMDCUMOD1" format: name, source,
/// cubins by arch, PTX), and back; a malformed blob is an error saying what
/// is wrong, never a crash.
std::string serializeModule(const CompiledModule &module);
Status deserializeModule(const std::string &bytes, CompiledModule &module);

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

/// The image to load on a device of SM version `deviceArch`: its own cubin,
/// else a cubin of the same major version and a lower minor (binary
/// compatible), else a fresh NVRTC compilation of the kept source for
/// `deviceArch` (cached), else the PTX when its arch is not above the
/// device's. `how` says which ("cubin sm_90", "recompiled for sm_89", "ptx
/// compute_80").
Status selectImage(const CompiledModule &module, int deviceArch,
                   const CompileOptions &options, std::string &image,
                   std::string &how);

/// Checks `cubin` is a CUDA ELF object and returns its SM version.
Status cubinArch(const std::string &cubin, int &arch);

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

#endif // SPMD_RUNTIME_CUDA_NVRTC_H
