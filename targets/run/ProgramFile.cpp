//===- ProgramFile.cpp - A program file ready to run ----------------------===//

#include "targets/run/ProgramFile.h"

#include "targets/cpu/CpuProgram.h"
#include "targets/cuda/CudaBackend.h"

#include "dialects/spmd/SPMDDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "runtime/cuda/DeviceSteps.h"

#include <map>
#include <mutex>

using namespace mlir;

namespace spmd {

namespace {
class LoadedProgram final : public ProgramFile {
public:
  LoadedProgram() {
    // Pass registration is process-wide; a process may load many programs.
    static std::once_flag passes;
    std::call_once(passes, [] { registerAllPasses(); });
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registry.insert<SPMDDialect>();
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
  }
  const plan::Schedule &schedule() const override { return program.schedule; }

  plan::RankMaker ranks(const std::string &backend, const std::string &comm,
                        std::string &error) override {
    if (backend == "cpu")
      return plan::Session::cpuRanks(program.schedule,
                                     program.kernels.functions);
    if (backend != "cuda" && backend != "cuda-emu") {
      error = "backend must be cpu, cuda or cuda-emu, not '" + backend + "'";
      return {};
    }
    std::unique_ptr<CudaProgram> &cuda = gpu[backend + "/" + comm];
    if (!cuda) {
      CudaRunOptions options;
      options.emulate = backend == "cuda-emu";
      options.comm = comm;
      if (std::string err =
              prepareCuda(*program.module, program.schedule, options, cuda);
          !err.empty()) {
        error = "backend " + backend + ": " + err;
        return {};
      }
    }
    CudaProgram *prepared = cuda.get();
    const plan::Schedule &schedule = program.schedule;
    return [prepared,
            &schedule](int64_t device, plan::Collectives *comm,
                       std::vector<std::vector<char>> &blocks,
                       const std::vector<std::vector<Shape>> &allShapes,
                       std::string &error) -> std::unique_ptr<plan::RankSteps> {
      std::unique_ptr<cuda::DeviceBackend> backend;
      if (std::string err = prepared->openRank(device, comm, backend);
          !err.empty()) {
        error = err;
        return nullptr;
      }
      cuda::DeviceExecutorOptions options;
      options.planShapes = true;
      return cuda::DeviceSteps::create(std::move(backend), schedule,
                                       prepared->specs(), device, options,
                                       blocks, allShapes, error);
    };
  }

  std::unique_ptr<MLIRContext> ctx;
  CpuProgram program; // destroyed before the context it lives in
  std::map<std::string, std::unique_ptr<CudaProgram>> gpu;
};
} // namespace

ProgramFile::~ProgramFile() = default;

std::unique_ptr<ProgramFile> ProgramFile::load(const std::string &file,
                                               const std::string &entry,
                                               const std::string &partition,
                                               std::string &error) {
  auto loaded = std::make_unique<LoadedProgram>();
  if (failed(loadCpuProgram(*loaded->ctx, file, entry, partition,
                            loaded->program, error)))
    return nullptr;
  return loaded;
}

} // namespace spmd
