//===- Linearity.h - How a result depends on partial operands ---*- C++ -*-===//
//
// The one answer to "may this op consume partial operands and produce a
// partial result?": propagation builds a rule's partial alternatives with
// it, and partitioning checks ops with a payload (linalg bodies,
// elementwise ops) with it.
//
// Within one op and for one mesh axis, a value is `Const` when it does not
// depend on the operands that are partial on the axis, `Term` when it is a
// valid partial term of the result (linear in them for sum/avg: sums of
// terms, terms scaled by or divided by something the same on every rank,
// negated, converted, masked: select(c, term, 0) with c the same on every
// rank; monotone for max/min: max/min of terms, a term plus or minus
// something the same on every rank, converted, masked), and `Bad` when it
// mixes them in any other way.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RULES_LINEARITY_H
#define SPMD_RULES_LINEARITY_H

#include "core/Layout.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace spmd {

enum class Dep { Const, Term, Bad };

/// The dependence of the result of the scalar or elementwise op `op` given
/// the dependences `deps` of its operands, for partials of `kind`.
Dep combineDep(mlir::Operation *op, llvm::ArrayRef<Dep> deps, ReduceKind kind);

/// The dependence of `v` (inside `body`) on the values in `terms`. Block
/// arguments that are not terms and values from outside `body` are Const.
Dep dependence(mlir::Value v, const llvm::DenseSet<mlir::Value> &terms,
               mlir::Block *body, ReduceKind kind,
               llvm::DenseMap<mlir::Value, Dep> &memo);

/// Per result of `op`: its dependence on the operands numbered `partial`
/// when those are P(kind). Known for linalg ops on tensors (through the
/// payload; a partial init makes its block argument a term) and for
/// elementwise-mappable ops; none for any other op.
std::optional<llvm::SmallVector<Dep>>
resultDependence(mlir::Operation *op, llvm::ArrayRef<unsigned> partial,
                 ReduceKind kind);

} // namespace spmd

#endif // SPMD_RULES_LINEARITY_H
