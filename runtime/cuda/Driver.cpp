//===- Driver.cpp - The CUDA driver API, loaded at run time ---------------===//

#include "runtime/cuda/Driver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace spmd {
namespace cuda {

#define SPMD_STR2(x) #x
#define SPMD_STR(x) SPMD_STR2(x) // after macro expansion: cuMemAlloc_v2

namespace {

struct Loaded {
  DriverApi api;
  Status status;
};

Loaded loadFrom(const std::string &path) {
  Loaded l;
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    l.status = Status::error(
        "no CUDA driver: cannot load " + path + " (" + (why ? why : "?") +
        "); the CUDA backend needs an NVIDIA GPU and its driver");
    return l;
  }
  DriverApi &api = l.api;
  api.path = path;
  std::string missing;
#define SPMD_RESOLVE(name, required)                                           \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(h, SPMD_STR(name)));   \
  if (!api.name && required)                                                   \
    missing += std::string(missing.empty() ? "" : ", ") + SPMD_STR(name);
  SPMD_CUDA_DRIVER_FUNCTIONS(SPMD_RESOLVE)
#undef SPMD_RESOLVE
  if (!missing.empty()) {
    l.status = Status::error("the CUDA driver " + path +
                             " lacks entry points: " + missing);
    return l;
  }
  api.cuDriverGetVersion(&api.version);
  CUresult rc = api.cuInit(0);
  if (rc != CUDA_SUCCESS) {
    l.status = Status::error(
        "CUDA driver " + path + " (version " +
        std::to_string(api.version / 1000) + "." +
        std::to_string(api.version % 1000 / 10) +
        ") failed to initialize: " + errorText(api, rc) +
        (rc == CUDA_ERROR_NO_DEVICE ? "; the CUDA backend needs a GPU" : ""));
    return l;
  }
  return l;
}

Loaded load() {
  const char *env = std::getenv("SPMD_LIBCUDA");
  return loadFrom(env && *env ? env : "libcuda.so.1");
}

} // namespace

Status loadDriverFrom(const std::string &path, DriverApi &api) {
  Loaded l = loadFrom(path);
  api = l.api;
  return l.status;
}

Status loadDriver(const DriverApi *&api) {
  static Loaded loaded = load();
  api = loaded.status.ok() ? &loaded.api : nullptr;
  return loaded.status;
}

std::string errorText(const DriverApi &api, CUresult rc) {
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(rc, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(rc, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(int(rc));
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

Status check(const DriverApi &api, CUresult rc, const std::string &what) {
  if (rc == CUDA_SUCCESS)
    return Status::success();
  return Status::error(what + ": " + errorText(api, rc));
}

Status requireFunction(const DriverApi &api, const void *fn, const char *name) {
  if (fn)
    return Status::success();
  return Status::error("the CUDA driver " + api.path + " (version " +
                       std::to_string(api.version) + ") has no " + name);
}

} // namespace cuda
} // namespace spmd
