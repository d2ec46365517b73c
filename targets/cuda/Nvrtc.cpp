//===- Nvrtc.cpp - CUDA C++ to cubin through NVRTC ------------------------===//

#include "targets/cuda/Nvrtc.h"

#include "runtime/cuda/KernelSources.h"

#include <nvrtc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace spmd {
namespace cuda {

namespace {

struct Cache {
  std::mutex mu;
  std::map<uint64_t, std::string> images;
  std::string dir;
  bool dirFromEnv = false;
  CacheStats stats;
};

Cache &cache() {
  static Cache c;
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.dirFromEnv) {
    c.dirFromEnv = true;
    if (const char *d = std::getenv("SPMD_NVRTC_CACHE"))
      c.dir = d;
  }
  return c;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::vector<std::string> optionStrings(int arch, bool ptx,
                                       const CompileOptions &o) {
  std::vector<std::string> opts;
  opts.push_back(std::string("--gpu-architecture=") +
                 (ptx ? "compute_" : "sm_") + std::to_string(arch));
  opts.push_back("--std=c++17");
  opts.push_back("-default-device");
  if (o.lineInfo)
    opts.push_back("-lineinfo");
  if (o.fastMath)
    opts.push_back("--use_fast_math");
  for (const std::string &e : o.extra)
    opts.push_back(e);
  return opts;
}

} // namespace

uint64_t hash64(const std::string &text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

int nvrtcVersion() {
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return 0;
  return major * 1000 + minor * 10;
}

std::vector<int> supportedArchs() {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
    return {};
  std::vector<int> archs(n);
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    return {};
  return archs;
}

void setCacheDirectory(const std::string &dir) {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.dir = dir;
}

CacheStats cacheStats() {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

void clearMemoryCache() {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.images.clear();
  c.stats = {};
}

Status compileOne(
    const std::string &name, const std::string &source, int arch, bool ptx,
    const CompileOptions &options, std::string &image,
    const std::vector<std::pair<std::string, std::string>> &extraHeaders) {
  std::vector<std::pair<std::string, std::string>> headers = extraHeaders;
  headers.emplace_back(kernelLibraryName(), kernelLibrarySource());
  std::vector<std::string> opts = optionStrings(arch, ptx, options);
  std::string target = (ptx ? "compute_" : "sm_") + std::to_string(arch);

  // The cache key covers everything that determines the image.
  std::string key =
      std::to_string(nvrtcVersion()) + '\0' + name + '\0' + source + '\0';
  for (auto &h : headers)
    key += h.first + '\0' + h.second + '\0';
  for (auto &o : opts)
    key += o + '\0';
  uint64_t h = hash64(key);
  Cache &c = cache();
  std::string file;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.images.find(h);
    if (it != c.images.end()) {
      ++c.stats.hits;
      image = it->second;
      return Status::success();
    }
    if (!c.dir.empty())
      file = c.dir + "/" + hex(h) + (ptx ? ".ptx" : ".cubin");
  }
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (in) {
      std::ostringstream ss;
      ss << in.rdbuf();
      image = ss.str();
      int got = 0;
      if (ptx || (cubinArch(image, got).ok() && got == arch)) {
        std::lock_guard<std::mutex> lock(c.mu);
        ++c.stats.hits;
        c.images[h] = image;
        return Status::success();
      }
    }
  }

  std::vector<const char *> headerTexts, headerNames;
  for (auto &hd : headers) {
    headerNames.push_back(hd.first.c_str());
    headerTexts.push_back(hd.second.c_str());
  }
  nvrtcProgram prog;
  nvrtcResult rc = nvrtcCreateProgram(&prog, source.c_str(), name.c_str(),
                                      static_cast<int>(headers.size()),
                                      headerTexts.data(), headerNames.data());
  if (rc != NVRTC_SUCCESS)
    return Status::error("NVRTC cannot create a program for " + name + ": " +
                         nvrtcGetErrorString(rc));
  std::vector<const char *> optPtrs;
  for (auto &o : opts)
    optPtrs.push_back(o.c_str());
  rc = nvrtcCompileProgram(prog, static_cast<int>(optPtrs.size()),
                           optPtrs.data());
  std::string log;
  size_t logSize = 0;
  if (nvrtcGetProgramLogSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    log.resize(logSize);
    nvrtcGetProgramLog(prog, &log[0]);
    log.resize(std::strlen(log.c_str()));
  }
  if (rc != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    return Status::error("NVRTC failed to compile " + name + " for " + target +
                         " (" + nvrtcGetErrorString(rc) + "):\n" + log);
  }
  size_t size = 0;
  rc = ptx ? nvrtcGetPTXSize(prog, &size) : nvrtcGetCUBINSize(prog, &size);
  if (rc == NVRTC_SUCCESS) {
    image.assign(size, '\0');
    rc = ptx ? nvrtcGetPTX(prog, &image[0]) : nvrtcGetCUBIN(prog, &image[0]);
  }
  nvrtcDestroyProgram(&prog);
  if (rc != NVRTC_SUCCESS)
    return Status::error("NVRTC produced no " + target + " image for " + name +
                         ": " + nvrtcGetErrorString(rc));
  if (ptx && !image.empty() && image.back() == '\0')
    image.pop_back();

  std::lock_guard<std::mutex> lock(c.mu);
  ++c.stats.misses;
  c.images[h] = image;
  if (!file.empty()) {
    ::mkdir(c.dir.c_str(), 0755);
    std::string tmp = file + ".tmp" + std::to_string(::getpid());
    std::ofstream out(tmp, std::ios::binary);
    out.write(image.data(), static_cast<std::streamsize>(image.size()));
    out.close();
    if (out)
      std::rename(tmp.c_str(), file.c_str());
    else
      std::remove(tmp.c_str());
  }
  return Status::success();
}

Status compileModule(const std::string &name, const std::string &source,
                     const CompileOptions &options, CompiledModule &module) {
  module = CompiledModule();
  module.name = name;
  module.source = source;
  for (int arch : options.archs) {
    std::string cubin;
    Status s = compileOne(name, source, arch, /*ptx=*/false, options, cubin);
    if (!s.ok())
      return s;
    module.cubins[arch] = std::move(cubin);
  }
  if (options.ptx && !options.archs.empty()) {
    int lowest = *std::min_element(options.archs.begin(), options.archs.end());
    Status s =
        compileOne(name, source, lowest, /*ptx=*/true, options, module.ptx);
    if (!s.ok())
      return s;
    module.ptxArch = lowest;
  }
  return Status::success();
}

Recompiler nvrtcRecompiler(const CompileOptions &options) {
  return [options](const CompiledModule &module, int arch, std::string &cubin) {
    return compileOne(module.name, module.source, arch, /*ptx=*/false, options,
                      cubin);
  };
}

} // namespace cuda
} // namespace spmd
