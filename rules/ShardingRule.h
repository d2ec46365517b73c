//===- ShardingRule.h - How an op can be sharded (factor model) -*- C++ -*-===//
//
// The one description of an op's sharding that both propagation and
// partitioning read. Like an einsum, a rule maps every dim of every ranked
// tensor operand and result to a factor or to none; on one mesh axis an op
// either splits one factor, or computes partial terms of a reduction, or
// computes replicated:
//
//  * splitting factor f: a value with f at dim d is S(d); a value without f
//    is R, except that for a reduction factor every result and its `outs`
//    init are P(combiner of that result);
//  * partial alternative (operands, kinds): the op is linear (for sum/avg) or
//    monotone (for max/min) in `operands`; with those P(k), k one of `kinds`,
//    and every other tensor operand R, every result is P(k).
//
// Factor kinds: parallel, reduction (split only when every result's
// combiner is known) and need-replication (never split: a loop in a
// compound index expression, a reduction with an unknown combiner, a
// reshape group with dynamic sizes). A reshape factor carries the sizes of
// both sides of its group: splitting it over some mesh axes is legal only
// when the torch.chunk boundaries of the collapsed dim and of the outermost
// expanded dim (scaled by the inner dims) coincide (reshapeSplitOk()).
//
// Slots number operands first, then results. A slot that is not a ranked
// tensor has no dims.
//
// print() writes the rule in an einsum-like form (`-spmd-print-op-rules`):
//
//   ([i, j], [j, k], [i, k]) -> ([i, k]) {i=13, j=16, k=32}
//       reduction={j: sum} partial={(0, 2): sum|avg; (1, 2): sum|avg}
//
// (on one line): per slot its dims' factors, `-` for a dim without a factor
// and `_` for a slot that is not a ranked tensor; then every factor's size
// (`?` if dynamic); then, when present, `reduction={f: combiner per
// result}` (`?` for an unknown combiner), `need_replication={f, ...}`,
// `reshape={f: size=outer*inner}`, `init={operand->result}` and
// `partial={(operands): kinds; ...}` (`()` is the alternative with no
// partial operand: results may be partial with every operand R).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RULES_SHARDINGRULE_H
#define SPMD_RULES_SHARDINGRULE_H

#include "core/Layout.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace spmd {

/// One factor (a loop of the op's iteration space).
struct Factor {
  enum class Kind { Parallel, Reduction, NeedReplication };
  Kind kind = Kind::Parallel;
  /// Global size; negative if dynamic.
  int64_t size = -1;
  /// A reshape factor: `size` is the collapsed dim, `outerSize` the
  /// outermost expanded dim of the group and `innerSize` the product of the
  /// other expanded dims.
  bool reshape = false;
  int64_t outerSize = 0, innerSize = 1;
};

/// A set of operands the op is linear (or monotone) in, and the partial
/// kinds for which it is.
struct PartialAlt {
  llvm::SmallVector<unsigned> operands;
  llvm::SmallVector<ReduceKind> kinds;
};

/// The sharding rule of one op instance.
struct ShardingRule {
  llvm::SmallVector<Factor> factors;
  /// Per slot: per dim the factor or -1; none for a non-tensor slot.
  llvm::SmallVector<std::optional<llvm::SmallVector<int>>> slotDims;
  /// Per result: the partial kind a split reduction factor gives it (none:
  /// the combiner is unknown).
  llvm::SmallVector<std::optional<ReduceKind>> resultCombiner;
  /// Per operand: the result it is the `outs` init of, or -1.
  llvm::SmallVector<int> initOf;
  llvm::SmallVector<PartialAlt> alts;
  unsigned numOperands = 0;

  /// A rule for an op with these operand / result ranks (none: not a ranked
  /// tensor), no factors, no alternatives.
  static ShardingRule empty(llvm::ArrayRef<std::optional<int64_t>> operandRanks,
                            llvm::ArrayRef<std::optional<int64_t>> resultRanks);

  unsigned numSlots() const { return slotDims.size(); }
  bool isResult(unsigned slot) const { return slot >= numOperands; }
  /// The result `slot` is or is the init of, or -1.
  int resultOf(unsigned slot) const {
    return isResult(slot) ? int(slot - numOperands) : initOf[slot];
  }
  /// The factor of dim `dim` of `slot`, or -1.
  int factorOf(unsigned slot, int64_t dim) const;
  /// The dim of `slot` that has `factor`, or -1.
  int64_t dimOf(unsigned slot, int factor) const;
  /// Adds a fresh factor; returns its index.
  int addFactor(Factor f) {
    factors.push_back(f);
    return factors.size() - 1;
  }

  /// The placement that splitting `factor` on one mesh axis gives `slot`.
  Placement shardPlacement(unsigned slot, int factor) const;
  /// Does splitting `factor` over the mesh axes `axes` (mesh order) keep
  /// the rule's chunk boundaries (always true but for reshape factors)?
  bool splitOk(int factor, const Mesh &mesh,
               llvm::ArrayRef<int64_t> axes) const;

  void print(llvm::raw_ostream &os) const;
  /// The name print() gives factor `f` ("i", "j", ...).
  static std::string factorName(int f);
};

} // namespace spmd

#endif // SPMD_RULES_SHARDINGRULE_H
