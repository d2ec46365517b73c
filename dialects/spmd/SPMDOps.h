//===- SPMDOps.h - spmd operations ------------------------------*- C++ -*-===//

#ifndef SPMD_DIALECTS_SPMD_SPMDOPS_H
#define SPMD_DIALECTS_SPMD_SPMDOPS_H

#include "dialects/spmd/SPMDDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallVector.h"

#include "dialects/spmd/SPMDInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/spmd/SPMDOps.h.inc"

namespace spmd {
/// The group of a collective: its mesh, the indices of the named axes and
/// the number of devices in the group.
struct MeshGroup {
  MeshOp mesh;
  llvm::SmallVector<int64_t> axes;
  int64_t size = 1;
};

/// Resolves and checks the mesh and axes a collective (or a mesh-coordinate
/// op) names: a known spmd.mesh, at least one axis, each axis known and
/// listed once. Emits an op error otherwise.
mlir::FailureOr<MeshGroup> verifyMeshGroup(Operation *op,
                                           FlatSymbolRefAttr mesh,
                                           mlir::ArrayAttr axisNames,
                                           SymbolTableCollection &tables);

/// Indices in `mesh` of `axisNames`, for an op that verified.
llvm::SmallVector<int64_t> meshAxisIndices(MeshOp mesh,
                                           mlir::ArrayAttr axisNames);

/// The dim a collective splits into torch.chunks over its group (shard,
/// reduce_scatter, all_to_all's split dim), if any.
std::optional<int64_t> collectiveSplitDim(Operation *op);
/// The dim a collective concatenates over its group (all_gather,
/// all_to_all's concat dim), if any.
std::optional<int64_t> collectiveJoinDim(Operation *op);
} // namespace spmd

#endif // SPMD_DIALECTS_SPMD_SPMDOPS_H
