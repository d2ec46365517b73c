//===- CompilePipeline.cpp - spmd-compile: local program to plan ----------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void spmd::buildCompilePipeline(OpPassManager &pm) {
  // Hook: spmd-propagate and spmd-partition go first once they exist, so a
  // global annotated program becomes the local program compiled below.
  // Helper functions are inlined into the entries: a schedule is one
  // straight-line sequence of steps.
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());
  // Elementwise arith/math on tensors become linalg.generic, then fuse.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createSPMDFuseElementwise());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createSPMDBufferize());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createSPMDOutlinePlan());
  pm.addPass(createSPMDPlanMemory());
}

void spmd::registerCompilePipeline() {
  PassPipelineRegistration<>(
      "spmd-compile",
      "Compile a local program to a plan: fuse, bufferize, outline kernels, "
      "GEMMs and collectives, plan memory",
      buildCompilePipeline);
}
