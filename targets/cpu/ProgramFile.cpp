//===- ProgramFile.cpp - A program file ready for the CPU executor --------===//

#include "targets/cpu/ProgramFile.h"

#include "targets/cpu/CpuProgram.h"

#include "dialects/spmd/SPMDDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

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
  std::vector<plan::KernelFn> kernels() const override {
    return program.kernels.functions;
  }

  std::unique_ptr<MLIRContext> ctx;
  CpuProgram program; // destroyed before the context it lives in
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
