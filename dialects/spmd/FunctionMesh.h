//===- FunctionMesh.h - The one mesh a function runs on ---------*- C++ -*-===//

#ifndef SPMD_DIALECTS_SPMD_FUNCTIONMESH_H
#define SPMD_DIALECTS_SPMD_FUNCTIONMESH_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace spmd {

/// The one mesh that `fn`'s annotations name (null when they name none):
/// its argument and result layouts, its ops' `spmd.layout`, spmd.constrain
/// and collectives. Propagation, partitioning and a plan's schedule all
/// run a function on one mesh, so a second one is an error at `fn` that
/// names the function, the first annotation on each mesh and both meshes.
mlir::FailureOr<mlir::FlatSymbolRefAttr>
functionMesh(mlir::FunctionOpInterface fn);

} // namespace spmd

#endif // SPMD_DIALECTS_SPMD_FUNCTIONMESH_H
