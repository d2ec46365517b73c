//===- Memory.h - Allocations checked against this machine ------*- C++ -*-===//
//
// Sizes from plans and .npy files are untrusted: allocating one larger than
// the machine's memory aborts (LLVM's new-handler: "out of memory") or, for
// malloc, returns null. Checking first turns that into an error message.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_MEMORY_H
#define SPMD_RUNTIME_MEMORY_H

#include <cstdint>
#include <string>

namespace spmd {

/// Physical memory of this machine in bytes (INT64_MAX if unknown).
int64_t physicalMemoryBytes();

/// What this process may allocate: physical memory, or less under an
/// address-space or data limit (`ulimit -v`, RLIMIT_AS / RLIMIT_DATA),
/// where an allocation past it fails as if memory had run out.
int64_t availableMemoryBytes();

/// "" when `bytes` (negative: overflowed) fits in `available` bytes, else
/// "needs N GiB for WHAT, M GiB available".
std::string checkMemory(int64_t bytes, const std::string &what,
                        int64_t available = availableMemoryBytes());

} // namespace spmd

#endif // SPMD_RUNTIME_MEMORY_H
