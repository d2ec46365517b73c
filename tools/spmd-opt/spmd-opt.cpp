//===- spmd-opt.cpp - the spmd pass driver --------------------------------===//
//
// mlir-opt with the spmd dialect and passes: every upstream dialect, pass and
// option (--pass-pipeline, --split-input-file, --verify-diagnostics, ...)
// works as users know it. The input is first checked for the lists that
// upstream's linalg parsers crash on (core/ParseHazards.h); it is parsed
// unverified, and spmd-check-input, before the passes the command line
// names, verifies it after checking for the ops upstream verifiers crash on
// and then for those upstream passes crash on (passes/InputCheck.h).
//
//===----------------------------------------------------------------------===//

#include "core/ParseHazards.h"
#include "dialects/spmd/SPMDOps.h"
#include "passes/InputCheck.h"
#include "passes/Passes.h"
#include "rules/Passes.h"
#include "rules/ShardingRuleOpInterface.h"
#include "targets/cpu/Passes.h"
#include "targets/cuda/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

/// MlirOptMain on the input, unless it holds a list that upstream's parser
/// would crash on: that is an error at its position, like a parse error.
static mlir::LogicalResult run(int argc, char **argv,
                               mlir::DialectRegistry &registry) {
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "spmd optimizer driver: SPMD layouts and partitioning\n",
      registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // The command line's pipeline, after the input check: an upstream pattern
  // must not see an op it crashes on. Nor an upstream verifier: the input
  // (text or bytecode) is parsed unverified and the check verifies it,
  // unless the command line disables verification on parsing.
  bool verifyInput = config.shouldVerifyOnParsing();
  config.verifyOnParsing(false);
  config.setPassPipelineSetupFn(
      [commandLine = config, verifyInput](mlir::PassManager &pm) {
        pm.addPass(spmd::createSPMDCheckInputPass(verifyInput));
        return commandLine.setupPassPipeline(pm);
      });
  // --show-dialects and --list-passes read no input; MlirOptMain also says
  // why an input or output file cannot be opened.
  std::string error = spmd::unreadableSourceFile(inputFile);
  if (!error.empty()) {
    llvm::errs() << inputFile << ": " << error << "\n";
    return mlir::failure();
  }
  std::unique_ptr<llvm::MemoryBuffer> input;
  if (!config.shouldShowDialects() && !config.shouldListPasses())
    input = mlir::openInputFile(inputFile, &error);
  if (!input)
    return mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry);
  llvm::InitLLVM init(argc, argv);
  if (std::optional<spmd::ParseHazard> hazard =
          spmd::findParseHazard(input->getBuffer())) {
    llvm::SourceMgr sourceMgr;
    llvm::SMLoc loc =
        llvm::SMLoc::getFromPointer(input->getBufferStart() + hazard->offset);
    sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
    sourceMgr.PrintMessage(loc, llvm::SourceMgr::DK_Error, hazard->message);
    return mlir::failure();
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return mlir::failure();
  }
  if (failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return mlir::failure();
  output->keep();
  return mlir::success();
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<spmd::SPMDDialect>();
  spmd::registerShardingRuleExternalModels(registry);
  mlir::registerAllPasses();
  spmd::registerAllSPMDPasses();
  spmd::registerRulesPasses();
  spmd::registerCudaPasses();
  spmd::registerCpuPasses();
  return mlir::asMainReturnCode(run(argc, argv, registry));
}
