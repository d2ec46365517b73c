//===- CudaBackend.cpp - spmd-run --backend cuda / cuda-emu ---------------===//

#include "targets/cuda/CudaBackend.h"

#include "runtime/cuda/EmuBackend.h"
#include "targets/cuda/CudaEmitter.h"

#ifdef SPMD_HAVE_CUDA_GPU
#include "runtime/cuda/GpuBackend.h"
#include "runtime/cuda/NcclComm.h"
#include "targets/cuda/Nvrtc.h"
#ifdef SPMD_HAVE_NCCL_MPI
#include "runtime/cuda/NcclMpi.h"
#endif
#endif

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringRef.h"

#include <mutex>

using namespace mlir;
using namespace spmd;

CudaProgram::~CudaProgram() = default;

namespace {

/// The executor's view of a printed kernel.
cuda::KernelSpec specOf(const cudagen::CudaKernel &k, size_t buffers) {
  cuda::KernelSpec spec;
  spec.name = k.name;
  spec.warpPerRow = k.launch == cudagen::CudaLaunchKind::WarpPerRow;
  spec.workConstant = k.workConstant;
  for (auto [arg, dim] : k.workFactors)
    spec.workFactors.push_back({arg, dim});
  spec.readOnly.assign(buffers, true);
  spec.dynamicDims.resize(buffers);
  for (const cudagen::CudaParam &p : k.params) {
    if (p.kind == cudagen::CudaParam::Buffer && p.arg < buffers)
      spec.readOnly[p.arg] = llvm::StringRef(p.cType).starts_with("const ");
    if (p.kind == cudagen::CudaParam::Dim && p.arg < buffers)
      spec.dynamicDims[p.arg].push_back(p.dim);
  }
  return spec;
}

class ProgramBase : public CudaProgram {
public:
  const std::vector<cuda::KernelSpec> &specs() const override {
    return kernelSpecs;
  }
  std::string createNcclRanks(const Mesh &, double) override {
    return "NCCL needs --backend cuda";
  }
  void abortNccl(const std::string &) override {}

  std::vector<cuda::KernelSpec> kernelSpecs;
  std::string unit;
  std::vector<cudagen::CudaKernel> kernels;
};

class EmulatedProgram final : public ProgramBase {
public:
  std::string summary() const override {
    return std::to_string(entries.size()) +
           " kernel(s) compiled for the host emulation";
  }
  std::string openRank(int64_t, plan::Collectives *hostComm,
                       std::unique_ptr<cuda::DeviceBackend> &out) override {
    out = std::make_unique<cuda::EmuBackend>(entries, hostComm);
    return "";
  }

  std::unique_ptr<cuda::EmuModule> module;
  std::vector<cuda::EmuEntry> entries;
};

#ifdef SPMD_HAVE_CUDA_GPU
class GpuProgram final : public ProgramBase {
public:
  std::string summary() const override { return how; }

  std::string createNcclRanks(const Mesh &mesh, double timeout) override {
    int count = 0;
    if (Status s = cuda::deviceCount(count); !s.ok())
      return s.message();
    if (count < mesh.numDevices())
      return "--comm nccl: a mesh of " + std::to_string(mesh.numDevices()) +
             " devices needs as many GPUs, this machine has " +
             std::to_string(count) +
             " (--comm inproc shares GPUs between ranks)";
    std::vector<int> gpus;
    for (int64_t d = 0; d < mesh.numDevices(); ++d)
      gpus.push_back(static_cast<int>(d));
    Status s =
        cuda::NcclComm::createSingleProcess(mesh, gpus, timeout, ncclRanks);
    if (!s.ok())
      return s.message();
    for (auto &c : ncclRanks)
      c->setRecompiler(cuda::nvrtcRecompiler(options));
    return "";
  }

  void abortNccl(const std::string &reason) override {
    for (auto &c : ncclRanks)
      if (c)
        c->abort(reason);
  }

  std::string openRank(int64_t device, plan::Collectives *hostComm,
                       std::unique_ptr<cuda::DeviceBackend> &out) override {
    cuda::NcclComm *nccl = nullptr;
    const cuda::Device *gpu = nullptr;
    if (!ncclRanks.empty()) {
      nccl = ncclRanks[device].get();
      gpu = &nccl->gpu();
    } else if (comm == "mpi") {
#ifdef SPMD_HAVE_NCCL_MPI
      if (Status s = cuda::createNcclCommWithMpi(mesh, -1, timeout, mpiRank);
          !s.ok())
        return s.message();
      nccl = mpiRank.get();
      nccl->setRecompiler(cuda::nvrtcRecompiler(options));
      gpu = &nccl->gpu();
#else
      return "--comm mpi: this spmd-run was built without MPI";
#endif
    } else {
      // Ranks share the GPUs, device d on GPU d % count.
      std::lock_guard<std::mutex> lock(mutex);
      int count = 0;
      if (Status s = cuda::deviceCount(count); !s.ok())
        return s.message();
      int ordinal = static_cast<int>(device % count);
      if (!devices[ordinal])
        if (Status s = cuda::Device::open(ordinal, devices[ordinal]); !s.ok())
          return s.message();
      gpu = devices[ordinal].get();
    }
    std::vector<std::string> names;
    for (const cuda::KernelSpec &k : kernelSpecs)
      names.push_back(k.name);
    // A GPU the module has no cubin for gets one compiled here (NVRTC).
    std::unique_ptr<cuda::GpuBackend> backend;
    if (Status s = cuda::GpuBackend::create(
            *gpu, compiled, cuda::nvrtcRecompiler(options), names, backend);
        !s.ok())
      return s.message();
    backend->setCollectives(nccl, nccl ? nullptr : hostComm);
    out = std::move(backend);
    return "";
  }

  cuda::CompiledModule compiled;
  cuda::CompileOptions options;
  std::string how, comm;
  Mesh mesh;
  double timeout = 60;
  std::mutex mutex;
  std::map<int, std::unique_ptr<cuda::Device>> devices;
  std::vector<std::unique_ptr<cuda::NcclComm>> ncclRanks;
  std::unique_ptr<cuda::NcclComm> mpiRank;
};
#endif

} // namespace

std::string spmd::prepareCuda(ModuleOp plan, const plan::Schedule &schedule,
                              const CudaRunOptions &options,
                              std::unique_ptr<CudaProgram> &program) {
  std::unique_ptr<EmulatedProgram> emulated;
#ifdef SPMD_HAVE_CUDA_GPU
  std::unique_ptr<GpuProgram> gpu;
#endif
  if (options.emulate) {
    emulated = std::make_unique<EmulatedProgram>();
  } else {
#ifdef SPMD_HAVE_CUDA_GPU
    gpu = std::make_unique<GpuProgram>();
    gpu->comm = options.comm;
    gpu->mesh = schedule.mesh;
#else
    return "this spmd-run was built without the CUDA toolkit and NCCL "
           "(--backend cuda-emu runs the CUDA kernels on the CPU)";
#endif
  }
  ProgramBase *base = emulated.get();
#ifdef SPMD_HAVE_CUDA_GPU
  if (!base)
    base = gpu.get();
#endif
  ProgramBase &p = *base;
  if (failed(cudagen::emitCudaModule(plan, p.unit, p.kernels)))
    return "the plan's kernels cannot be printed as CUDA (see above)";
  // The schedule names its kernels; the unit has them in module order.
  for (const std::string &name : schedule.kernels) {
    auto it = std::find_if(
        p.kernels.begin(), p.kernels.end(),
        [&](const cudagen::CudaKernel &k) { return k.name == name; });
    auto func = plan.lookupSymbol<func::FuncOp>(name);
    if (it == p.kernels.end() || !func)
      return "kernel " + name + " was not printed as CUDA";
    size_t buffers = 0;
    for (Type t : func.getArgumentTypes())
      buffers += isa<MemRefType>(t);
    p.kernelSpecs.push_back(specOf(*it, buffers));
  }

  if (options.emulate) {
    std::string source = p.unit;
    for (const cudagen::CudaKernel &k : p.kernels)
      source += cudagen::cudaEmulationEntry(k);
    if (Status s = cuda::EmuModule::build(source, options.cxx, SPMD_SOURCE_DIR,
                                          options.workDir, emulated->module);
        !s.ok())
      return s.message();
    for (const cuda::KernelSpec &k : p.kernelSpecs) {
      cuda::EmuEntry entry = nullptr;
      if (Status s = emulated->module->entry(k.name, entry); !s.ok())
        return s.message();
      emulated->entries.push_back(entry);
    }
    program = std::move(emulated);
    return "";
  }
#ifdef SPMD_HAVE_CUDA_GPU
  if (auto embedded =
          plan->getAttrOfType<StringAttr>(cudagen::kCudaModuleAttrName)) {
    if (Status s =
            cuda::deserializeModule(embedded.getValue().str(), gpu->compiled);
        !s.ok())
      return "the plan's embedded CUDA module: " + s.message();
    gpu->how = std::to_string(p.kernelSpecs.size()) +
               " kernel(s) from the plan's embedded module";
  } else {
    if (Status s = cuda::compileModule(schedule.name + ".cu", p.unit,
                                       gpu->options, gpu->compiled);
        !s.ok())
      return s.message();
    gpu->how =
        std::to_string(p.kernelSpecs.size()) + " kernel(s) NVRTC-compiled";
  }
  // No driver or no device is an error now, not on every rank later.
  int count = 0;
  if (Status s = cuda::deviceCount(count); !s.ok())
    return s.message();
  program = std::move(gpu);
#endif
  return "";
}
