//===- CudaBackend.cpp - spmd-run --backend cuda --------------------------===//

#include "tools/spmd-run/CudaBackend.h"

#include "codegen/CudaEmitter.h"

#ifdef SPMD_HAVE_CUDA_RUNTIME
#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/Nvrtc.h"
#endif

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

std::string spmd::prepareCuda(ModuleOp plan, const plan::Schedule &schedule,
                              std::string &summary) {
#ifdef SPMD_HAVE_CUDA_RUNTIME
  cuda::CompiledModule compiled;
  cuda::CompileOptions options;
  if (auto embedded =
          plan->getAttrOfType<StringAttr>(codegen::kCudaModuleAttrName)) {
    Status status =
        cuda::deserializeModule(embedded.getValue().str(), compiled);
    if (!status.ok())
      return "the plan's embedded CUDA module: " + status.message();
  } else {
    std::string unit;
    std::vector<codegen::CudaKernel> kernels;
    if (failed(codegen::emitCudaModule(plan, unit, kernels)))
      return "the plan's kernels cannot be printed as CUDA (see above)";
    Status status =
        cuda::compileModule(schedule.name + ".cu", unit, options, compiled);
    if (!status.ok())
      return status.message();
  }
  std::unique_ptr<cuda::Device> device;
  if (Status status = cuda::Device::open(0, device); !status.ok())
    return status.message();
  std::unique_ptr<cuda::Module> module;
  if (Status status = cuda::Module::load(*device, compiled, options, module);
      !status.ok())
    return status.message();
  for (const std::string &name : schedule.kernels) {
    CUfunction fn;
    if (Status status = module->function(name, fn); !status.ok())
      return status.message();
  }
  summary = std::to_string(schedule.kernels.size()) + " kernel(s) loaded (" +
            module->imageSource() + ") on " + device->name();
  return "";
#else
  (void)plan;
  (void)schedule;
  (void)summary;
  return "this spmd-run was built without the CUDA toolkit";
#endif
}
