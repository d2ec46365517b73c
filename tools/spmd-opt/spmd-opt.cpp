//===- spmd-opt.cpp - the spmd pass driver --------------------------------===//
//
// mlir-opt with the spmd dialect and passes: every upstream dialect, pass and
// option (--pass-pipeline, --split-input-file, --verify-diagnostics, ...)
// works as users know it.
//
//===----------------------------------------------------------------------===//

#include "dialects/spmd/SPMDOps.h"
#include "passes/Passes.h"
#include "rules/Passes.h"
#include "rules/ShardingRuleOpInterface.h"
#include "targets/cpu/Passes.h"
#include "targets/cuda/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

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
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "spmd optimizer driver: SPMD layouts and partitioning\n",
      registry));
}
