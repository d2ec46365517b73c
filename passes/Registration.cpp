//===- Registration.cpp - register spmd passes and pipelines --------------===//

#include "passes/Passes.h"

void spmd::registerAllSPMDPasses() {
  registerPropagationPasses();
  registerPartitionPasses();
  registerCollectivesPasses();
  registerPlanPasses();
  registerSPMDPipelines();
  registerCompilePipeline();
}
