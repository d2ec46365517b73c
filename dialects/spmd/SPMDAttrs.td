//===- SPMDAttrs.td - spmd attributes ----------------------*- tablegen -*-===//

#ifndef SPMD_ATTRS_TD
#define SPMD_ATTRS_TD

include "dialects/spmd/SPMDBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def SPMD_LayoutAttr : AttrDef<SPMD_Dialect, "Layout"> {
  let mnemonic = "layout";
  let summary = "placements of a global tensor on a device mesh";
  let description = [{
    One placement per axis of the mesh named by `@mesh`: `S(d)` shards tensor
    dim `d` (torch.chunk sizes; several axes on one dim nest left to right),
    `R` replicates, `P(sum|avg|max|min)` holds a term of a pending reduction.

    ```mlir
    #spmd.layout<@mesh, [S(0), R]>
    ```
    The placement count and dims are checked against the mesh and tensor
    wherever the attribute is used (see `verifyLayout`).
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    ArrayRefParameter<"::spmd::Placement", "one placement per mesh axis">
      :$placements
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The plain C++ layout the runtime and layout arithmetic use.
    ::spmd::Layout toLayout() const;
    static LayoutAttr get(::mlir::FlatSymbolRefAttr mesh,
                          const ::spmd::Layout &layout);
  }];
}

#endif // SPMD_ATTRS_TD
