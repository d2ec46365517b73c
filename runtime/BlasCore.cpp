//===- BlasCore.cpp - OpenBLAS kernels that match the CPU -----------------===//

#include "runtime/BlasCore.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <unistd.h>

// Set in the environment of the re-executed program: never re-exec twice.
static const char *const kReexecMark = "SPMD_BLAS_CORE_CHOSEN";

std::string spmd::blasCoreName() {
  const char *name = openblas_get_corename();
  return name ? name : "unknown";
}

std::string spmd::betterBlasCore() {
  if (std::getenv("OPENBLAS_CORETYPE"))
    return "";
#if defined(__x86_64__) && defined(__GNUC__)
  // The cores OpenBLAS falls back to for a model it does not know; a
  // recognised recent core is left alone.
  static const char *const fallbacks[] = {"Prescott",   "Core2",   "Penryn",
                                          "Dunnington", "Nehalem", "Atom"};
  std::string core = blasCoreName();
  bool fallback = false;
  for (const char *name : fallbacks)
    fallback |= core == name;
  if (!fallback)
    return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
#endif
  return "";
}

void spmd::reexecForBlasCore(char **argv) {
  if (std::getenv(kReexecMark))
    return;
  std::string core = betterBlasCore();
  if (core.empty())
    return;
  ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  ::setenv(kReexecMark, blasCoreName().c_str(), 1);
  ::execv("/proc/self/exe", argv);
  // The exec failed: go on with OpenBLAS's own choice.
  ::unsetenv("OPENBLAS_CORETYPE");
  ::unsetenv(kReexecMark);
}

std::string spmd::describeBlas() {
  std::string text = "OpenBLAS " + blasCoreName();
  if (const char *detected = std::getenv(kReexecMark))
    text += std::string(" (OpenBLAS detected ") + detected +
            "; spmd chose the core from the CPU's features)";
  else if (std::getenv("OPENBLAS_CORETYPE"))
    text += " (OPENBLAS_CORETYPE)";
  return text;
}
