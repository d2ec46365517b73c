//===- Passes.td - spmd passes -----------------------------*- tablegen -*-===//
//
// Every pass of the project is declared here and registered with spmd-opt
// through registerSPMDPasses(). One pass per .cpp file in this folder.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_TD
#define SPMD_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // SPMD_PASSES_TD
