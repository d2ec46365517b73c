//===- EmitCuda.cpp - spmd-emit-cuda: plan kernels as CUDA C++ ------------===//
//
// Prints the kernels of a plan with targets/cuda/CudaEmitter, records each
// kernel's launch rule on it, writes the translation unit and, with
// embed=true, compiles it with NVRTC (targets/cuda/Nvrtc.h) and embeds the
// cubins, PTX and source in the plan.
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/Passes.h"

#include "dialects/spmd/SPMDPlanOps.h"
#include "targets/cuda/CudaEmitter.h"

#include "mlir/IR/Builders.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#ifdef SPMD_HAVE_NVRTC
#include "targets/cuda/Nvrtc.h"
#endif

namespace spmd {
#define GEN_PASS_DEF_SPMDEMITCUDA
#include "targets/cuda/Passes.h.inc"
} // namespace spmd

using namespace mlir;
using namespace spmd::cudagen;

namespace {
struct EmitCudaPass : spmd::impl::SPMDEmitCudaBase<EmitCudaPass> {
  using SPMDEmitCudaBase::SPMDEmitCudaBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string unit;
    std::vector<CudaKernel> kernels;
    if (failed(emitCudaModule(module, unit, kernels, rowReductions)))
      return signalPassFailure();
    Builder b(module.getContext());
    for (const CudaKernel &kernel : kernels) {
      Operation *func = module.lookupSymbol(kernel.name);
      func->setAttr(kCudaLaunchAttrName,
                    b.getStringAttr(kernel.launch == CudaLaunchKind::WarpPerRow
                                        ? "warp_per_row"
                                        : "grid_stride"));
      SmallVector<int64_t> work = {kernel.workConstant};
      for (auto [arg, dim] : kernel.workFactors) {
        work.push_back(arg);
        work.push_back(dim);
      }
      func->setAttr(kCudaWorkAttrName, b.getDenseI64ArrayAttr(work));
    }
    if (!output.empty()) {
      std::string error;
      auto file = openOutputFile(output, &error);
      if (!file) {
        module.emitError() << "spmd-emit-cuda: " << error;
        return signalPassFailure();
      }
      file->os() << unit;
      file->keep();
    }
    if (!embed)
      return;
#ifdef SPMD_HAVE_NVRTC
    spmd::cuda::CompileOptions options;
    if (!archs.empty())
      options.archs.assign(archs.begin(), archs.end());
    spmd::cuda::CompiledModule compiled;
    std::string name = "plan.cu";
    if (std::optional<StringRef> n = module.getSymName())
      name = (*n + ".cu").str();
    spmd::Status status =
        spmd::cuda::compileModule(name, unit, options, compiled);
    if (!status.ok()) {
      module.emitError() << "spmd-emit-cuda: NVRTC failed: "
                         << status.message();
      return signalPassFailure();
    }
    module->setAttr(kCudaModuleAttrName,
                    b.getStringAttr(spmd::cuda::serializeModule(compiled)));
#else
    module.emitError() << "spmd-emit-cuda: embed=true needs NVRTC (this "
                          "build has no CUDA toolkit)";
    signalPassFailure();
#endif
  }
};
} // namespace
