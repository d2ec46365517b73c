//===- EnsurePlan.cpp - Compile a program to a plan when needed -----------===//

#include "targets/plan/EnsurePlan.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;
using namespace spmd;

LogicalResult spmd::ensurePlan(ModuleOp module, StringRef file,
                               std::string &error, StringRef partition) {
  if (isPlan(module))
    return checkPlanVersion(module, file, error);
  PassManager pm(module.getContext());
  buildCompilePipeline(pm, partition);
  return captureDiagnostics(module.getContext(), error, [&] {
    if (succeeded(pm.run(module)))
      return success();
    error = (file + ": compiling to a plan failed\n").str() + error;
    return failure();
  });
}
