//===- KernelSources.h - CUDA kernel sources embedded in the binary -*- C++
//-*-===//
//
// The text of kernels/spmd_kernels.cuh (the library every generated kernel
// includes as "spmd_kernels.cuh") and of kernels/reference_kernels.cu (the
// concrete kernels the tests and benchmarks compile), embedded at build time
// so NVRTC can compile them on any machine, including at plan load time.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_KERNELSOURCES_H
#define SPMD_RUNTIME_CUDA_KERNELSOURCES_H

#include <string>

namespace spmd {
namespace cuda {

/// The include name generated sources use for the library.
inline const char *kernelLibraryName() { return "spmd_kernels.cuh"; }
const std::string &kernelLibrarySource();
const std::string &referenceKernelsSource();

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_KERNELSOURCES_H
