//===- BlasCore.h - OpenBLAS kernels that match the CPU --------*- C++ -*-===//
//
// OpenBLAS (Debian's is built for every x86 core, DYNAMIC_ARCH) picks its
// kernels from the CPU model number when the library loads. A virtual CPU
// whose model it does not know gets Prescott's SSE3 kernels even when it
// has AVX-512; OPENBLAS_CORETYPE overrides the choice, but only before the
// library loads.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_BLASCORE_H
#define SPMD_RUNTIME_BLASCORE_H

#include <string>

namespace spmd {

/// The core whose kernels OpenBLAS runs ("SkylakeX", "Prescott", ...).
std::string blasCoreName();

/// The core OpenBLAS should run on this CPU when it fell back to an old
/// one (AVX-512 -> SkylakeX, AVX2 + FMA -> Haswell); empty when its own
/// choice stands (OPENBLAS_CORETYPE set, a recent core, an old CPU).
std::string betterBlasCore();

/// If betterBlasCore() names a core, re-executes this program (argv as
/// given to main) with OPENBLAS_CORETYPE set to it; returns if it does not
/// (nothing better, or the exec failed). Call first thing in main.
void reexecForBlasCore(char **argv);

/// "OpenBLAS <core>", with why when spmd chose it.
std::string describeBlas();

} // namespace spmd

#endif // SPMD_RUNTIME_BLASCORE_H
