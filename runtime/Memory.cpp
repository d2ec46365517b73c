//===- Memory.cpp - Allocations checked against this machine --------------===//

#include "runtime/Memory.h"

#include <algorithm>
#include <cstdio>
#include <sys/resource.h>
#include <unistd.h>

namespace spmd {

int64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0 || pages > INT64_MAX / page)
    return INT64_MAX;
  return static_cast<int64_t>(pages) * page;
}

/// This process's address space in bytes (VmSize), 0 if unknown.
static int64_t addressSpaceBytes() {
  long long pages = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lld", &pages) != 1)
      pages = 0;
    std::fclose(f);
  }
  long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

int64_t availableMemoryBytes() {
  int64_t bytes = physicalMemoryBytes();
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit limit;
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
        limit.rlim_cur >= static_cast<rlim_t>(INT64_MAX))
      continue;
    // What the limit leaves beside what is mapped already (the binary,
    // its libraries, the JIT's code).
    int64_t left = static_cast<int64_t>(limit.rlim_cur) - addressSpaceBytes();
    bytes = std::min(bytes, std::max<int64_t>(left, 0));
  }
  return bytes;
}

static std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f",
                static_cast<double>(bytes) / (1 << 30));
  return buf;
}

std::string checkMemory(int64_t bytes, const std::string &what,
                        int64_t available) {
  if (bytes >= 0 && bytes <= available)
    return "";
  return "needs " +
         (bytes < 0 ? std::string("more than 2^63 bytes")
                    : gib(bytes) + " GiB") +
         " for " + what + ", " + gib(available) + " GiB available";
}

} // namespace spmd
