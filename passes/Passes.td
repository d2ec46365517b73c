//===- Passes.td - spmd passes -----------------------------*- tablegen -*-===//
//
// Every pass of the project is declared here and registered with spmd-opt
// through registerSPMDPasses(). One pass per .cpp file in this folder.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_TD
#define SPMD_PASSES_TD

include "mlir/Pass/PassBase.td"

def SPMDPropagate : Pass<"spmd-propagate", "mlir::ModuleOp"> {
  let summary = "give every tensor value a layout (factor rules, cost model)";
  let description = [{
    For every `func.func` whose signature or body names a layout, gives every
    tensor value a layout: op results get the `spmd.layout` op attribute,
    unannotated function arguments and results the `spmd.layout` argument /
    result attribute. Layouts come from a factor model of each op (linalg ops
    from their indexing maps and iterator types, explicit rules for tensor,
    arith and math ops), propagated forward and backward to a fixpoint;
    conflicts are resolved by an alpha-beta communication cost model. Where a
    consumer needs another layout than its producer gives, an `spmd.constrain`
    is inserted, so that afterwards layouts change only at constrains. User
    annotations are never overridden. An op without a rule is computed
    replicated, with a remark. See passes/Propagate.cpp for the rules.
  }];
  let dependentDialects = ["::spmd::SPMDDialect"];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "emit a remark at every inserted spmd.constrain saying which op "
           "or annotation needs it, and record it in the constrain's "
           "`reason` attribute">,
  ];
}

#endif // SPMD_PASSES_TD
