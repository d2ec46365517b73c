//===- CpuProgram.cpp - A program loaded for the CPU executor -------------===//

#include "targets/cpu/CpuProgram.h"

#include "targets/plan/EnsurePlan.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace spmd {

LogicalResult loadCpuProgram(MLIRContext &ctx, const std::string &file,
                             StringRef entry, StringRef partition,
                             CpuProgram &program, std::string &error) {
  {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::SourceMgr sourceMgr;
    SourceMgrDiagnosticHandler handler(sourceMgr, &ctx, os);
    program.module = parseProgramFile(file, sourceMgr, &ctx);
    if (!program.module) {
      error = file + ": cannot parse the program\n" + text;
      return failure();
    }
  }
  if (failed(ensurePlan(*program.module, file, error, partition)))
    return failure();
  if (failed(loadSchedule(*program.module, entry, program.schedule, error)) ||
      failed(compileKernels(*program.module, program.schedule, program.kernels,
                            error))) {
    error = file + ": " + error;
    return failure();
  }
  return success();
}

} // namespace spmd
