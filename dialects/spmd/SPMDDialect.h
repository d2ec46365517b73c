//===- SPMDDialect.h - spmd dialect and attributes --------------*- C++ -*-===//

#ifndef SPMD_DIALECTS_SPMD_SPMDDIALECT_H
#define SPMD_DIALECTS_SPMD_SPMDDIALECT_H

#include "core/Layout.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"

namespace spmd {
// Hashing for ArrayRefParameter<Placement> in LayoutAttr storage.
inline llvm::hash_code hash_value(const Placement &p) {
  return llvm::hash_combine(static_cast<int>(p.kind),
                            p.isShard() ? p.dim : int64_t(-1),
                            p.isPartial() ? static_cast<int>(p.reduce) : -1);
}
} // namespace spmd

#include "dialects/spmd/SPMDDialect.h.inc"
#include "dialects/spmd/SPMDEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/spmd/SPMDAttrs.h.inc"

namespace mlir {
class SymbolTableCollection;
} // namespace mlir

namespace spmd {
using mlir::FlatSymbolRefAttr;
using mlir::LogicalResult;
using mlir::Operation;
using mlir::SymbolTableCollection;
using mlir::Type;
class MeshOp;

/// Looks up the mesh a layout or collective names, from `from`'s nearest
/// symbol table. Emits an error at `from` and returns null if there is none.
MeshOp lookupMesh(Operation *from, FlatSymbolRefAttr name,
                  SymbolTableCollection *symbolTable = nullptr);

/// Checks `layout` against its mesh and, if given, the tensor type it
/// annotates. `what` names the annotated thing in messages ("argument 0").
LogicalResult verifyLayout(Operation *anchor, LayoutAttr layout, Type type,
                           const llvm::Twine &what,
                           SymbolTableCollection *symbolTable = nullptr);

namespace detail {
/// The `: type` the parser read right after the last #spmd.layout parsed on
/// this thread, if any (see LayoutAttr::parse); clears it.
Type takeTrailingLayoutType();
} // namespace detail

/// Bytes of one element of a tensor or buffer of element type `type`: an
/// integer or float (rounded up to whole bytes), an index (8) or a complex
/// number of either (twice its part); nullopt for any other type, which
/// plans cannot hold.
std::optional<int64_t> elementBytes(Type type);

ReductionKind toReductionKind(::spmd::ReduceKind kind);
::spmd::ReduceKind toReduceKind(ReductionKind kind);
} // namespace spmd

#endif // SPMD_DIALECTS_SPMD_SPMDDIALECT_H
