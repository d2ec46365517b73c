//===- Driver.h - The CUDA driver API, loaded at run time ------*- C++ -*-===//
//
// libcuda.so.1 comes with the NVIDIA driver, not with the toolkit: the
// toolkit has only a link stub, and a binary linked against it does not even
// start where no driver is installed (all CI machines here). So the runtime
// opens the driver with dlopen on first use and resolves the entry points it
// uses by the versioned names cuda.h maps them to (cuMemAlloc ->
// cuMemAlloc_v2, ...), with the prototypes of cuda.h. No driver, an old
// driver, or no device all become a Status with a clear message.
//
// $SPMD_LIBCUDA overrides the library path (tests point it at a fake driver).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_DRIVER_H
#define SPMD_RUNTIME_CUDA_DRIVER_H

#include "runtime/Status.h"

#include <cuda.h>

#include <string>

namespace spmd {
namespace cuda {

// X(name, required): required entry points must exist for the driver to load.
#define SPMD_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuInit, 1)                                                                 \
  X(cuGetErrorName, 1)                                                         \
  X(cuGetErrorString, 1)                                                       \
  X(cuDriverGetVersion, 1)                                                     \
  X(cuDeviceGetCount, 0)                                                       \
  X(cuDeviceGet, 0)                                                            \
  X(cuDeviceGetAttribute, 0)                                                   \
  X(cuDeviceGetName, 0)                                                        \
  X(cuDeviceTotalMem, 0)                                                       \
  X(cuDevicePrimaryCtxRetain, 0)                                               \
  X(cuDevicePrimaryCtxRelease, 0)                                              \
  X(cuCtxSetCurrent, 0)                                                        \
  X(cuCtxSynchronize, 0)                                                       \
  X(cuModuleLoadData, 0)                                                       \
  X(cuModuleLoadDataEx, 0)                                                     \
  X(cuModuleUnload, 0)                                                         \
  X(cuModuleGetFunction, 0)                                                    \
  X(cuFuncSetAttribute, 0)                                                     \
  X(cuLaunchKernel, 0)                                                         \
  X(cuMemAlloc, 0)                                                             \
  X(cuMemFree, 0)                                                              \
  X(cuMemGetInfo, 0)                                                           \
  X(cuMemcpyHtoD, 0)                                                           \
  X(cuMemcpyDtoH, 0)                                                           \
  X(cuMemcpyHtoDAsync, 0)                                                      \
  X(cuMemcpyDtoHAsync, 0)                                                      \
  X(cuMemcpyDtoDAsync, 0)                                                      \
  X(cuMemcpy2DAsync, 0)                                                        \
  X(cuMemsetD8Async, 0)                                                        \
  X(cuStreamCreate, 0)                                                         \
  X(cuStreamDestroy, 0)                                                        \
  X(cuStreamSynchronize, 0)                                                    \
  X(cuStreamQuery, 0)                                                          \
  X(cuStreamWaitEvent, 0)                                                      \
  X(cuStreamBeginCapture, 0)                                                   \
  X(cuStreamEndCapture, 0)                                                     \
  X(cuGraphInstantiate, 0)                                                     \
  X(cuGraphLaunch, 0)                                                          \
  X(cuGraphExecDestroy, 0)                                                     \
  X(cuGraphDestroy, 0)                                                         \
  X(cuEventCreate, 0)                                                          \
  X(cuEventDestroy, 0)                                                         \
  X(cuEventRecord, 0)                                                          \
  X(cuEventSynchronize, 0)                                                     \
  X(cuEventQuery, 0)                                                           \
  X(cuEventElapsedTime, 0)

struct DriverApi {
#define SPMD_DECLARE(name, required) decltype(&::name) name = nullptr;
  SPMD_CUDA_DRIVER_FUNCTIONS(SPMD_DECLARE)
#undef SPMD_DECLARE
  std::string path;
  int version = 0; // cuDriverGetVersion, e.g. 12040
};

/// Opens the driver and calls cuInit(0) (once per process; later calls
/// return the first outcome). Fails with a message on no driver library,
/// missing entry points or a failing cuInit (no device, driver/kernel module
/// mismatch, ...).
Status loadDriver(const DriverApi *&api);

/// What loadDriver does, uncached, for the library at `path`.
Status loadDriverFrom(const std::string &path, DriverApi &api);

/// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
std::string errorText(const DriverApi &api, CUresult rc);

/// Status for a driver call: ok, or "<what>: <errorText>".
Status check(const DriverApi &api, CUresult rc, const std::string &what);

/// Entry points beyond the required ones may be absent on old drivers.
Status requireFunction(const DriverApi &api, const void *fn, const char *name);

} // namespace cuda
} // namespace spmd

#endif // SPMD_RUNTIME_CUDA_DRIVER_H
