//===- CudaModule.cpp - A plan's compiled CUDA module ---------------------===//

#include "runtime/cuda/CudaModule.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace spmd {
namespace cuda {

Status selectImage(const CompiledModule &module, int deviceArch,
                   const Recompiler &recompile, std::string &image,
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
  if (recompile && !module.source.empty()) {
    Status s = recompile(module, deviceArch, image);
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
