//===- SPMDInterfaces.td - spmd op interfaces --------------*- tablegen -*-===//

#ifndef SPMD_INTERFACES_TD
#define SPMD_INTERFACES_TD

include "mlir/IR/OpBase.td"

def SPMD_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::spmd";
  let description = [{
    A collective over a device group: every device that shares all mesh
    coordinates except those on `mesh_axes` of `mesh`. The collectives of
    local programs (all_gather, all_reduce, reduce_scatter, all_to_all and
    shard, its local inverse) and their plan steps. Passes that treat collectives alike (dedup,
    bucketing, scheduling, the comm report, the memory plan) ask for this
    interface instead of listing op kinds.
  }];
  let methods = [
    InterfaceMethod<"The mesh the group is on.", "::mlir::FlatSymbolRefAttr",
      "getMeshAttr">,
    InterfaceMethod<"The mesh axes of the group, in group order.",
      "::mlir::ArrayAttr", "getMeshAxes">,
    InterfaceMethod<"The tensor or buffer the op reads.", "::mlir::Value",
      "getInput">,
    InterfaceMethod<[{
        Whether the op moves data between devices (false for shard, which
        selects this member's chunk locally).
      }], "bool", "communicates", (ins), [{}], [{ return true; }]>,
  ];
}

#endif // SPMD_INTERFACES_TD
