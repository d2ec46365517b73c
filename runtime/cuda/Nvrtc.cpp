//===- Nvrtc.cpp - CUDA C++ to cubin through NVRTC ------------------------===//

#include "runtime/cuda/Nvrtc.h"

#include "runtime/cuda/KernelSources.h"

#include <nvrtc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
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

Status selectImage(const CompiledModule &module, int deviceArch,
                   const CompileOptions &options, std::string &image,
                   std::string &how) {
  auto it = module.cubins.find(deviceArch);
  if (it != module.cubins.end()) {
    image = it->second;
    how = "cubin sm_" + std::to_string(deviceArch);
    return Status::success();
  }
  // sm_X.y code runs on sm_X.z for z >= y; take the highest such y.
  int best = -1;
  for (auto &kv : module.cubins)
    if (kv.first / 10 == deviceArch / 10 && kv.first < deviceArch)
      best = std::max(best, kv.first);
  if (best >= 0) {
    image = module.cubins.at(best);
    how = "cubin sm_" + std::to_string(best);
    return Status::success();
  }
  std::string recompileError;
  if (!module.source.empty()) {
    Status s = compileOne(module.name, module.source, deviceArch, false,
                          options, image);
    if (s.ok()) {
      how = "recompiled for sm_" + std::to_string(deviceArch);
      return Status::success();
    }
    recompileError = s.message();
  }
  if (module.ptxArch && module.ptxArch <= deviceArch && !module.ptx.empty()) {
    image = module.ptx;
    how = "ptx compute_" + std::to_string(module.ptxArch);
    return Status::success();
  }
  std::string have;
  for (auto &kv : module.cubins)
    have += (have.empty() ? "" : ", ") + ("sm_" + std::to_string(kv.first));
  return Status::error(
      module.name + " has no image for sm_" + std::to_string(deviceArch) +
      " (cubins: " + (have.empty() ? "none" : have) + "; ptx: " +
      (module.ptxArch ? "compute_" + std::to_string(module.ptxArch) : "none") +
      ")" + (recompileError.empty() ? "" : "; recompiling: " + recompileError));
}

namespace {
const char kModuleMagic[] = "SPMDCUMOD1\n";

void putU64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void putBytes(std::string &out, const std::string &b) {
  putU64(out, b.size());
  out += b;
}

struct Reader {
  const std::string &in;
  size_t pos = 0;
  std::string error;
  bool u64(uint64_t &v, const char *what) {
    if (in.size() - pos < 8) {
      error =
          std::string("truncated ") + what + " at byte " + std::to_string(pos);
      return false;
    }
    v = 0;
    for (int i = 0; i < 8; ++i)
      v |= uint64_t(static_cast<unsigned char>(in[pos + i])) << (8 * i);
    pos += 8;
    return true;
  }
  bool bytes(std::string &b, const char *what) {
    uint64_t n;
    if (!u64(n, what))
      return false;
    if (in.size() - pos < n) {
      error = std::string("truncated ") + what + " (" + std::to_string(n) +
              " bytes announced at byte " + std::to_string(pos) + ")";
      return false;
    }
    b.assign(in, pos, n);
    pos += n;
    return true;
  }
};
} // namespace

std::string serializeModule(const CompiledModule &m) {
  std::string out = kModuleMagic;
  putBytes(out, m.name);
  putBytes(out, m.source);
  putU64(out, m.cubins.size());
  for (auto &kv : m.cubins) {
    putU64(out, static_cast<uint64_t>(kv.first));
    putBytes(out, kv.second);
  }
  putU64(out, static_cast<uint64_t>(m.ptxArch));
  putBytes(out, m.ptx);
  return out;
}

Status deserializeModule(const std::string &in, CompiledModule &m) {
  m = CompiledModule();
  size_t magic = sizeof kModuleMagic - 1;
  if (in.compare(0, magic, kModuleMagic) != 0)
    return Status::error("not a compiled CUDA module (no SPMDCUMOD1 header)");
  Reader r{in, magic, {}};
  uint64_t count = 0, arch = 0, ptxArch = 0;
  bool ok = r.bytes(m.name, "module name") &&
            r.bytes(m.source, "module source") && r.u64(count, "cubin count");
  for (uint64_t i = 0; ok && i < count; ++i) {
    std::string cubin;
    ok = r.u64(arch, "cubin arch") && r.bytes(cubin, "cubin");
    if (ok) {
      int got = 0;
      Status s = cubinArch(cubin, got);
      if (!s.ok() || got != static_cast<int>(arch))
        return Status::error(
            "module " + m.name + ": the sm_" + std::to_string(arch) +
            " cubin is not one (" +
            (s.ok() ? "it is sm_" + std::to_string(got) : s.message()) + ")");
      m.cubins[static_cast<int>(arch)] = std::move(cubin);
    }
  }
  ok = ok && r.u64(ptxArch, "ptx arch") && r.bytes(m.ptx, "ptx");
  if (!ok)
    return Status::error("compiled CUDA module: " + r.error);
  if (r.pos != in.size())
    return Status::error("compiled CUDA module: " +
                         std::to_string(in.size() - r.pos) + " trailing bytes");
  m.ptxArch = static_cast<int>(ptxArch);
  return Status::success();
}

Status cubinArch(const std::string &cubin, int &arch) {
  const unsigned char *p =
      reinterpret_cast<const unsigned char *>(cubin.data());
  if (cubin.size() < 64 || std::memcmp(p,
                                       "\x7f"
                                       "ELF",
                                       4) != 0)
    return Status::error("not an ELF object");
  if (p[4] != 2)
    return Status::error("not a 64-bit ELF object");
  uint16_t machine;
  std::memcpy(&machine, p + 18, 2);
  if (machine != 190) // EM_CUDA
    return Status::error("ELF machine " + std::to_string(machine) +
                         " is not EM_CUDA (190)");
  uint32_t flags;
  std::memcpy(&flags, p + 48, 4);
  // ELFOSABI_CUDA (0x41) with ABI version >= 8 (CUDA 12.8+) keeps the SM in
  // bits 8..15 of e_flags; older cubins keep it in bits 0..7.
  bool newAbi = p[7] == 0x41 && p[8] >= 8;
  arch = newAbi ? static_cast<int>((flags >> 8) & 0xff)
                : static_cast<int>(flags & 0xff);
  return Status::success();
}

} // namespace cuda
} // namespace spmd
