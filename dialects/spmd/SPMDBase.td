//===- SPMDBase.td - spmd dialect and enums ----------------*- tablegen -*-===//

#ifndef SPMD_BASE_TD
#define SPMD_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def SPMD_Dialect : Dialect {
  let name = "spmd";
  let cppNamespace = "::spmd";
  let summary = "SPMD layouts on device meshes and explicit collectives";
  let description = [{
    Carries DTensor-style layouts (`S(d)`, `R`, `P(kind)` per mesh axis) of
    global tensors, and the explicit collectives of partitioned (local)
    programs. Layouts on function arguments and results are the `spmd.layout`
    argument/result attribute.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The name of the layout argument/result/op attribute.
    static constexpr ::llvm::StringLiteral kLayoutAttrName = "spmd.layout";
    /// Argument/result attribute of a partitioned (local) function: the
    /// global tensor type whose shard of layout `spmd.layout` the local
    /// argument/result is (set by spmd-partition).
    static constexpr ::llvm::StringLiteral kGlobalTypeAttrName =
        "spmd.global_type";
    /// Op attributes of a collective with rank-dependent result sizes (set
    /// by spmd-partition): the global tensor type and the layout whose
    /// local shard the result is, from which bufferization sizes it.
    static constexpr ::llvm::StringLiteral kResultGlobalTypeAttrName =
        "spmd.result_global_type";
    /// On a function result: the index of the argument whose next value it
    /// is (a parameter or optimizer state a training step updates).
    static constexpr ::llvm::StringLiteral kUpdatesAttrName = "spmd.updates";
    static constexpr ::llvm::StringLiteral kResultLayoutAttrName =
        "spmd.result_layout";

  private:
    // In SPMDAttrs.cpp, where the attribute storage classes are complete.
    void registerAttributes();

  public:
  }];
}

def SPMD_ReductionKind : I32EnumAttr<"ReductionKind",
    "element-wise reduction of a partial value or collective", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"avg", 1>,
      I32EnumAttrCase<"max", 2>,
      I32EnumAttrCase<"min", 3>
    ]> {
  let cppNamespace = "::spmd";
}

#endif // SPMD_BASE_TD
