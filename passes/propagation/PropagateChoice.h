//===- PropagateChoice.h - spmd-propagate's choices and costs ---*- C++ -*-===//
//
// Internal to spmd-propagate (see Propagate.cpp): what an op does on one
// mesh axis given its sharding rule, and which choice is cheapest given
// what is known of its operands' and results' layouts.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_PROPAGATION_PROPAGATECHOICE_H
#define SPMD_PASSES_PROPAGATION_PROPAGATECHOICE_H

#include "core/CostModel.h"
#include "rules/ShardingRule.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"

namespace spmd::propagation {

/// One placement per mesh axis, unknown until set.
using PartialLayout = llvm::SmallVector<std::optional<Placement>, 4>;

/// What an op does on one mesh axis: nothing split (every slot R), split one
/// factor, or compute partial terms through one of the rule's alternatives.
struct AxisChoice {
  enum class Kind { None, Shard, Partial } kind = Kind::None;
  int factor = -1;
  int alt = -1;
  ReduceKind reduce = ReduceKind::Sum;

  bool operator==(const AxisChoice &o) const {
    return kind == o.kind && factor == o.factor && alt == o.alt &&
           (kind != Kind::Partial || reduce == o.reduce);
  }
};

/// The placement `choice` gives slot `slot` of an op with `rule`.
Placement required(const ShardingRule &rule, unsigned slot,
                   const AxisChoice &choice);

/// The fill that makes `v` from a tensor.empty, if any: such a value is
/// made again in the layout a consumer needs rather than resharded.
mlir::linalg::FillOp refillable(mlir::Value v);

/// Bytes a reshard of operand / result `v` would move; 0 (free, and left out
/// of the cost) for an operand made by tensor.empty, which has no contents,
/// or filled from one (refillable()).
double movedBytes(mlir::Value v, bool isResult);

/// The inputs of a decision, one entry per slot of the op.
struct SlotInfo {
  /// Known placements (null for slots that are not ranked tensors).
  llvm::ArrayRef<const PartialLayout *> known;
  /// movedBytes() of each slot.
  llvm::ArrayRef<double> bytes;
  /// Results whose layout the user wrote on the op.
  llvm::ArrayRef<bool> pinned;
  /// Number of users sharing the reduction of a partial operand.
  llvm::ArrayRef<unsigned> users;
  llvm::ArrayRef<mlir::Type> types;
  /// Per result slot: how many partial terms are summed into the value
  /// before it is reduced (resultShare()); its reduction is charged in part.
  llvm::ArrayRef<double> share;
  /// Seconds the whole op takes on one device (opWork()); a choice that
  /// splits a factor on an axis of k devices saves (k-1)/k of it on every
  /// rank.
  double work = 0;
  /// Per operand slot (may be empty): the other layouts the value already
  /// has a copy in, made for an earlier user and shared by later ones; a
  /// read in one of them moves nothing more.
  llvm::ArrayRef<llvm::ArrayRef<Layout>> copies;
  /// Charge the lookahead (see decide()) also to a choice that makes a
  /// result partial by splitting a reduction factor when the result is
  /// already known partial: set when the choice is made again with the
  /// copies above, which may make computing it unreduced the cheaper way.
  bool reduceKnownPartials = false;
};

/// What an op computes, unpartitioned: flops (iterations times payload ops)
/// on elements `bits` wide and the bytes of its operands and results.
struct OpCounts {
  double flops = 0, bytes = 0;
  unsigned bits = 32;
};
/// A linalg op's counts; nullopt for other ops (views, reshapes).
std::optional<OpCounts> opCounts(mlir::Operation *op);

/// Seconds `op` takes, unpartitioned, on one device of `profile`: the
/// roofline of opCounts(); 0 for other ops.
double opWork(mlir::Operation *op, const DeviceProfile &profile);

/// For a value an op may make partial: the number of contractions whose
/// partial results are summed (by ops linear in them) into the value that is
/// eventually reduced, `v` among them (at least 1). Backward's input
/// gradient of attention, dq·Wq + dk·Wk + dv·Wv, is reduced once for the
/// three products, so each product pays a third of that reduction.
/// `linearSum(op)` says whether op is a linear sum (isLinearSum()),
/// `contraction(op)` whether it is a linalg op with a reduction loop
/// (isContraction()); callers may memoize both.
double resultShare(mlir::Value v,
                   llvm::function_ref<bool(mlir::Operation *)> linearSum,
                   llvm::function_ref<bool(mlir::Operation *)> contraction);

/// Is `op` an elementwise op whose result is a sum of its tensor inputs (or
/// of terms linear in them), so that partial inputs give a partial result?
bool isLinearSum(mlir::Operation *op);

/// Is `op` a linalg op with a reduction loop (its result may be partial)?
bool isContraction(mlir::Operation *op);

/// The cheapest choice per mesh axis for an op with `rule`: candidates are
/// the choices implied by known placements (Shard of the factor of each
/// S(d), Partial alternatives for each P) plus None, costed with
/// CostModel.h (ties: the first, None last). `totalCost`, if given, gets
/// the sum of the chosen costs' communication (compute is not counted
/// there: an op whose choice moves nothing is free to propagate).
llvm::SmallVector<AxisChoice> decide(const ShardingRule &rule, const Mesh &mesh,
                                     const CommCostParams &params,
                                     const SlotInfo &slots,
                                     double *totalCost = nullptr);

} // namespace spmd::propagation

#endif // SPMD_PASSES_PROPAGATION_PROPAGATECHOICE_H
