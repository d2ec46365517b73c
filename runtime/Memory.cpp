//===- Memory.cpp - Allocations checked against this machine --------------===//

#include "runtime/Memory.h"

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

int64_t availableMemoryBytes() {
  int64_t bytes = physicalMemoryBytes();
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit limit;
    if (getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        limit.rlim_cur < static_cast<rlim_t>(bytes))
      bytes = static_cast<int64_t>(limit.rlim_cur);
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
