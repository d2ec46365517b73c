//===- CudaModule.h - A plan's compiled CUDA module ------------*- C++ -*-===//
//
// The CUDA module a plan embeds: its source, a cubin per SM version and PTX
// for the lowest one, as bytes ("SPMDCUMOD1"), and the choice of the image
// to load on a device. Compiling belongs to the CUDA target
// (targets/cuda/Nvrtc.h); a plan loaded on an architecture it has no cubin
// for is recompiled there through a Recompiler the target passes in.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_CUDAMODULE_H
#define SPMD_RUNTIME_CUDA_CUDAMODULE_H

#include "runtime/Status.h"

#include <functional>
#include <map>
#include <string>

namespace spmd {
namespace cuda {

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

/// Compiles `module`'s kept source to a cubin for SM version `arch`.
using Recompiler = std::function<Status(const CompiledModule &module, int arch,
                                        std::string &cubin)>;

/// The image to load on a device of SM version `deviceArch`: its own cubin,
/// else a cubin of the same major version and a lower minor (binary
/// compatible), else `recompile` of the kept source for `deviceArch` (when
/// given), else the PTX when its arch is not above the device's. `how` says
/// which ("cubin sm_90", "recompiled for sm_89", "ptx compute_80").
Status selectImage(const CompiledModule &module, int deviceArch,
                   const Recompiler &recompile, std::string &image,
                   std::string &how);

/// Checks `cubin` is a CUDA ELF object and returns its SM version.
Status cubinArch(const std::string &cubin, int &arch);

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_CUDAMODULE_H
