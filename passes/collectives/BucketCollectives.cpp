//===- BucketCollectives.cpp - fuse small collectives under a size cap ----===//
//
// Many small collectives (one per gradient or parameter) pay the collective
// latency, and on a GPU a launch, many times; one collective of their
// concatenation pays it once. Buckets are formed per block in program order
// from the program alone, so every rank forms the same buckets and runs the
// same collective sequence.
//
//===----------------------------------------------------------------------===//

#include "dialects/spmd/SPMDDialect.h"
#include "dialects/spmd/SPMDOps.h"
#include "passes/collectives/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <tuple>

namespace spmd {
#define GEN_PASS_DEF_SPMDBUCKETCOLLECTIVES
#include "passes/collectives/Passes.h.inc"
} // namespace spmd

using namespace mlir;
using namespace spmd;

namespace {

/// Collectives that may share a bucket: same op, mesh, axes (in order),
/// reduction kind (null for all_gather) and element type. The dims do not
/// matter: every member is brought to the same flat form first.
using BucketKey =
    std::tuple<OperationName, Attribute, Attribute, Attribute, Type>;

Attribute reductionOf(Operation *op) {
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    return reduce.getKindAttr();
  if (auto scatter = dyn_cast<ReduceScatterOp>(op))
    return scatter.getKindAttr();
  return {};
}

BucketKey keyOf(CollectiveOpInterface op) {
  return {op->getName(), op.getMeshAttr(), op.getMeshAxes(), reductionOf(op),
          cast<RankedTensorType>(op.getInput().getType()).getElementType()};
}

struct Bucket {
  SmallVector<CollectiveOpInterface> members;
  int64_t bytes = 0;
  /// The fused op must go after `lastDef` (the last definition of a
  /// member's operand in the block; null: none) and before `firstUse` (the
  /// first use of a member's result; null: none). Ops, not positions: the
  /// block is renumbered whenever ops move.
  Operation *lastDef = nullptr;
  Operation *firstUse = nullptr;
};

/// The product of the sizes of `shape[0, dim)`.
int64_t leadingElements(ArrayRef<int64_t> shape, int64_t dim) {
  int64_t n = 1;
  for (int64_t d = 0; d < dim; ++d)
    n *= shape[d];
  return n;
}

/// Members this small join a bucket past its cap: they add no time.
constexpr int64_t kTinyBytes = 16;

class BlockBucketer {
public:
  BlockBucketer(Block &block, int64_t cap, int64_t firstCap,
                int64_t gatherReduceBytes, SymbolTableCollection &tables)
      : block(block), cap(cap), firstCap(firstCap),
        gatherReduceBytes(gatherReduceBytes), tables(tables) {
    renumber();
  }

  /// Buckets the block's collectives; returns whether the block changed.
  bool run() {
    llvm::MapVector<BucketKey, Bucket> open;
    // Keys that have closed a bucket already: later buckets get `cap`.
    DenseSet<BucketKey> pastFirst;
    SmallVector<Bucket> closed;
    SmallVector<CollectiveOpInterface> collectives;
    // Tensor collectives only: a plan's collectives (spmd.plan_*, on
    // memrefs, no results) are not bucketed (they stay barriers below).
    for (Operation &op : block)
      if (auto collective = dyn_cast<CollectiveOpInterface>(op))
        if (op.getNumResults() == 1 &&
            isa<RankedTensorType>(collective.getInput().getType()) &&
            isa<RankedTensorType>(op.getResult(0).getType()))
          collectives.push_back(collective);
    for (CollectiveOpInterface collective : collectives) {
      std::optional<int64_t> bytes = bytesOf(collective);
      // Skipped ones do not close the open bucket: they are not moved.
      if (!bytes || (cap > 0 && *bytes > cap))
        continue;
      Operation *def = definitionInBlock(collective.getInput());
      Operation *firstUse = firstUseInBlock(collective);
      BucketKey key = keyOf(collective);
      Bucket &bucket = open[key];
      // The operand is computed after a member's result is first used (an
      // optimizer step between the gradients' reductions): its producers
      // move up when they do not depend on the bucket, or else the ops using
      // the members' results before it move down below it when it does not
      // depend on them (a gradient's transpose for the optimizer, emitted
      // right after the gradient).
      if (!bucket.members.empty() && !before(def, bucket.firstUse) &&
          before(bucket.firstUse, firstUse)) {
        if (hoistAbove(collective.getInput(), bucket))
          def = definitionInBlock(collective.getInput());
        else
          sinkUsesBelow(def, bucket);
      }
      // The first bucket is small so that reducing the first gradients
      // overlaps the rest of the backward (DDP); gathers are grouped under
      // the cap alone (FSDP2 groups them per module, not first-small).
      int64_t limit = pastFirst.contains(key) || isa<AllGatherOp>(collective)
                          ? cap
                          : firstCap;
      // An operand computed by a member would need the fused op's own result.
      bool feedsOnMember =
          llvm::any_of(bucket.members, [&](CollectiveOpInterface m) {
            return m->getResult(0) == collective.getInput();
          });
      Operation *lastDef = later(bucket.lastDef, def);
      Operation *use = earlier(bucket.firstUse, firstUse);
      // As DDP: a bucket takes members while it is below its cap (the last
      // one may cross it); a scalar (a loss, a count) joins regardless.
      bool fits = !feedsOnMember && before(lastDef, use) &&
                  (limit == 0 || bucket.members.empty() ||
                   bucket.bytes < limit || *bytes <= kTinyBytes);
      if (!fits) {
        closed.push_back(std::move(bucket));
        bucket = Bucket();
        pastFirst.insert(key);
        lastDef = def;
        use = firstUse;
      }
      bucket.members.push_back(collective);
      bucketed.insert(collective);
      bucket.bytes += *bytes;
      bucket.lastDef = lastDef;
      bucket.firstUse = use;
    }
    for (auto &entry : open)
      closed.push_back(std::move(entry.second));
    // Fuse in program order of the buckets' first members.
    llvm::stable_sort(closed, [&](const Bucket &a, const Bucket &b) {
      return position.lookup(a.members.front()) <
             position.lookup(b.members.front());
    });
    Operation *previous = nullptr;
    for (Bucket &bucket : closed)
      if (bucket.members.size() > 1) {
        changed = true;
        if (Operation *last = fuse(bucket, previous))
          previous = last;
      }
    if (gatherReduceBytes > 0)
      gatherSmallReduces();
    return changed;
  }

private:
  /// A small sum all_reduce that can take the position of an all_gather on
  /// the same mesh, axes and element type rides in it, as a [1, n] row:
  /// every rank then sums the k gathered rows itself. It saves a collective
  /// (a latency, a launch) for (k-1)(k-2)/k * n more bytes per rank than a
  /// ring all_reduce of n bytes; at most `gatherReduceBytes` more. Typical:
  /// a loss and a few bias gradients beside the activations a step gathers.
  void gatherSmallReduces() {
    renumber();
    SmallVector<AllReduceOp> reduces;
    SmallVector<AllGatherOp> gathers;
    for (Operation &op : block) {
      if (auto reduce = dyn_cast<AllReduceOp>(op)) {
        std::optional<int64_t> bytes = bytesOf(reduce);
        int64_t k = groupSize(reduce);
        if (bytes && k > 0 && reduce.getKind() == ReductionKind::sum &&
            (k - 1) * (k - 2) * *bytes / k <= gatherReduceBytes)
          reduces.push_back(reduce);
      } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
        if (isa<RankedTensorType>(gather.getInput().getType()) &&
            bytesOf(gather))
          gathers.push_back(gather);
      }
    }
    for (AllReduceOp reduce : reduces) {
      for (AllGatherOp &gather : gathers) {
        if (!gather || gather.getMeshAttr() != reduce.getMeshAttr() ||
            gather.getMeshAxes() != reduce.getMeshAxes() ||
            gather.getInput().getType().getElementType() !=
                reduce.getInput().getType().getElementType())
          continue;
        Bucket pair;
        pair.members.push_back(gather);
        pair.members.push_back(reduce);
        if (reduce->isBeforeInBlock(gather))
          std::swap(pair.members[0], pair.members[1]);
        Operation *last = fuse(pair, /*previous=*/nullptr, /*split=*/false);
        renumber();
        if (!last)
          continue;
        changed = true;
        // The fused gather may take further small reductions.
        gather = nullptr;
        for (Operation *op = last; op; op = op->getPrevNode())
          if (auto fused = dyn_cast<AllGatherOp>(op)) {
            gather = fused;
            break;
          }
        break;
      }
    }
  }

  int64_t groupSize(CollectiveOpInterface op) {
    auto mesh = dyn_cast_or_null<MeshOp>(
        tables.lookupNearestSymbolFrom(op, op.getMeshAttr()));
    if (!mesh)
      return 0;
    int64_t k = 1;
    for (Attribute axis : op.getMeshAxes()) {
      std::optional<int64_t> index =
          mesh.getAxisIndex(cast<StringAttr>(axis).getValue());
      if (!index)
        return 0;
      k *= mesh.getAxisSizes()[*index];
    }
    return k;
  }

  /// The byte size a member adds to its bucket (the larger of its input and
  /// result), or nullopt if it cannot be bucketed: a dynamic dim (its size
  /// differs between ranks, so every later member would sit at a
  /// rank-dependent offset), an element type of unknown size, and a
  /// reduce_scatter or all_gather whose chunks differ in size.
  std::optional<int64_t> bytesOf(CollectiveOpInterface op) {
    auto input = cast<RankedTensorType>(op.getInput().getType());
    auto result = cast<RankedTensorType>(op->getResult(0).getType());
    if (!input.hasStaticShape() || !result.hasStaticShape())
      return std::nullopt;
    std::optional<int64_t> element = elementBytes(input.getElementType());
    if (!element)
      return std::nullopt;
    if (isa<AllReduceOp>(op))
      return input.getNumElements() * *element;
    int64_t dim;
    if (auto scatter = dyn_cast<ReduceScatterOp>(op.getOperation()))
      dim = scatter.getDim();
    else if (auto gather = dyn_cast<AllGatherOp>(op.getOperation()))
      dim = gather.getDim();
    else
      return std::nullopt;
    int64_t k = groupSize(op);
    if (k <= 0)
      return std::nullopt;
    RankedTensorType whole = isa<AllGatherOp>(op) ? result : input;
    RankedTensorType part = isa<AllGatherOp>(op) ? input : result;
    if (whole.getDimSize(dim) != k * part.getDimSize(dim))
      return std::nullopt;
    return whole.getNumElements() * *element;
  }

  /// The op of this block that defines `value` or contains its definition,
  /// or null when `value` is defined before the block starts.
  Operation *definitionInBlock(Value value) {
    Operation *def = value.getDefiningOp();
    return def ? block.findAncestorOpInBlock(*def) : nullptr;
  }

  /// Block order where null is a definition before the block (`a`) or a
  /// use after it (`b`): is `a` strictly before `b`?
  bool before(Operation *a, Operation *b) {
    return !a || !b || position.lookup(a) < position.lookup(b);
  }
  /// The later of two definitions and the earlier of two uses (null: none).
  Operation *later(Operation *a, Operation *b) {
    return !a ? b : (!b ? a : (before(a, b) ? b : a));
  }
  Operation *earlier(Operation *a, Operation *b) {
    return !a ? b : (!b ? a : (before(a, b) ? a : b));
  }

  void renumber() {
    int64_t i = 0;
    for (Operation &op : block)
      position[&op] = i++;
  }

  /// Every collective assigned to a bucket so far.
  DenseSet<Operation *> bucketed;

  /// Moves the ops of this block that compute `value` and sit at or after
  /// the bucket's first use to just before it, in order, if none of them
  /// depends on a member, has memory effects or is a collective, and they
  /// are few (a gradient's last elementwise steps, not a whole backward).
  bool hoistAbove(Value value, Bucket &bucket) {
    constexpr size_t kMaxOps = 64;
    Operation *barrier = bucket.firstUse;
    if (!barrier)
      return false;
    int64_t limit = position.lookup(barrier);
    SmallVector<Operation *> chain, worklist;
    DenseSet<Operation *> seen;
    auto visit = [&](Value v) -> bool {
      Operation *def = definitionInBlock(v);
      // Ops before the first use of a member's result use none (but the
      // members' own results). Nor may a moved op read any other bucket's
      // member: it would become an earlier use than that bucket allows for.
      if (def && bucketed.contains(def))
        return false;
      if (!def || position.lookup(def) < limit || !seen.insert(def).second)
        return true;
      if (isa<CollectiveOpInterface>(def) || !isMemoryEffectFree(def) ||
          seen.size() > kMaxOps)
        return false;
      worklist.push_back(def);
      return true;
    };
    if (!visit(value))
      return false;
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      chain.push_back(op);
      for (Value operand : op->getOperands())
        if (!visit(operand))
          return false;
      bool ok = true;
      op->walk([&](Operation *nested) {
        if (nested == op)
          return;
        // Values the regions capture from outside count as operands.
        for (Value operand : nested->getOperands())
          if (!op->isAncestor(operand.getParentBlock()->getParentOp()))
            ok = ok && visit(operand);
      });
      if (!ok)
        return false;
    }
    if (chain.empty())
      return false;
    llvm::sort(chain, [&](Operation *a, Operation *b) {
      return position.lookup(a) < position.lookup(b);
    });
    for (Operation *op : chain)
      op->moveBefore(barrier);
    changed = true;
    renumber();
    return true;
  }

  /// Moves the ops of this block that use the bucket's results, directly
  /// or through each other, and sit before `def` to just after `def`, in
  /// order, if `def` is not among them and none has memory effects or is a
  /// collective; then the bucket's first use is recomputed.
  bool sinkUsesBelow(Operation *def, Bucket &bucket) {
    constexpr size_t kMaxOps = 256;
    if (!def)
      return false;
    int64_t limit = position.lookup(def);
    SetVector<Operation *> uses;
    SmallVector<Operation *> worklist;
    auto addUsers = [&](Operation *op) {
      for (Operation *user : op->getUsers()) {
        Operation *inBlock = block.findAncestorOpInBlock(*user);
        if (inBlock && position.lookup(inBlock) <= limit &&
            uses.insert(inBlock))
          worklist.push_back(inBlock);
      }
    };
    for (CollectiveOpInterface member : bucket.members)
      addUsers(member);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (op == def || uses.size() > kMaxOps ||
          isa<CollectiveOpInterface>(op) || !isMemoryEffectFree(op) ||
          op->hasTrait<OpTrait::IsTerminator>())
        return false;
      addUsers(op);
    }
    if (uses.empty())
      return false;
    SmallVector<Operation *> ordered(uses.begin(), uses.end());
    llvm::sort(ordered, [&](Operation *a, Operation *b) {
      return position.lookup(a) < position.lookup(b);
    });
    Operation *after = def;
    for (Operation *op : ordered) {
      op->moveAfter(after);
      changed = true;
      after = op;
    }
    renumber();
    bucket.firstUse = nullptr;
    for (CollectiveOpInterface member : bucket.members)
      bucket.firstUse = earlier(bucket.firstUse, firstUseInBlock(member));
    return true;
  }

  /// A bucket that no longer fits in one piece (another bucket's moves
  /// interleaved its operands and uses) is fused as the runs of its members,
  /// in program order, that still fit. Returns the last op created, or null.
  Operation *fuseSplit(Bucket &bucket, Operation *previous) {
    renumber();
    SmallVector<CollectiveOpInterface> members(bucket.members);
    llvm::sort(members, [&](CollectiveOpInterface a, CollectiveOpInterface b) {
      return position.lookup(a) < position.lookup(b);
    });
    SmallVector<Bucket> runs(1);
    for (CollectiveOpInterface member : members) {
      Operation *def = definitionInBlock(member.getInput());
      Operation *use = firstUseInBlock(member);
      Bucket &run = runs.back();
      Operation *lastDef = later(run.lastDef, def);
      Operation *firstUse = earlier(run.firstUse, use);
      if (!run.members.empty() && !before(lastDef, firstUse)) {
        runs.emplace_back();
        lastDef = def;
        firstUse = use;
      }
      runs.back().members.push_back(member);
      runs.back().lastDef = lastDef;
      runs.back().firstUse = firstUse;
    }
    Operation *last = nullptr;
    for (Bucket &run : runs)
      if (run.members.size() > 1)
        if (Operation *op = fuse(run, previous, /*split=*/false))
          previous = last = op;
    return last;
  }

  /// The first op of this block that uses `op`'s result (directly or in a
  /// nested region), or null. Uses in other blocks are dominated by every op
  /// of this block that dominates `op`, so they do not constrain the fused op.
  Operation *firstUseInBlock(Operation *op) {
    Operation *first = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *inBlock = block.findAncestorOpInBlock(*user);
      if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
        first = inBlock;
    }
    return first;
  }

  /// Rewrites a bucket into one collective; returns the last op it created,
  /// or null if the bucket no longer fits anywhere. `previous` is the end of
  /// the bucket fused before: when possible the new one follows it, so the
  /// fused collectives keep the program order of their buckets.
  Operation *fuse(Bucket &bucket, Operation *previous, bool split = true) {
    // Check again on the current IR: an earlier bucket may have replaced an
    // operand of this one by a slice at another position, or moved a
    // member's user up with the producers of its own operand; such users
    // move back down below the last operand when they can.
    Operation *after = nullptr, *before = nullptr;
    auto bounds = [&] {
      after = before = nullptr;
      for (CollectiveOpInterface member : bucket.members) {
        Operation *def = definitionInBlock(member.getInput());
        if (def && (!after || after->isBeforeInBlock(def)))
          after = def;
        Operation *use = firstUseInBlock(member);
        if (use && (!before || use->isBeforeInBlock(before)))
          before = use;
      }
      return !after || !before || after->isBeforeInBlock(before);
    };
    if (!bounds()) {
      renumber();
      if (!sinkUsesBelow(after, bucket) || !bounds())
        return split ? fuseSplit(bucket, previous) : nullptr;
    }
    // Keep the program order of collectives where the data allows: after
    // the bucket fused before, and after the collective that precedes the
    // first member (one that is not bucketed stays where it is).
    Operation *anchor = previous;
    for (Operation *op = bucket.members.front()->getPrevNode(); op;
         op = op->getPrevNode()) {
      if (!isa<CollectiveOpInterface>(op))
        continue;
      if (!anchor || anchor->isBeforeInBlock(op))
        anchor = op;
      break;
    }
    if (anchor && (!after || after->isBeforeInBlock(anchor)) &&
        (!before || anchor->isBeforeInBlock(before)))
      after = anchor;

    OpBuilder builder(block.getParent()->getContext());
    if (after)
      builder.setInsertionPointAfter(after);
    else
      builder.setInsertionPointToStart(&block);
    SmallVector<Location> locs;
    for (CollectiveOpInterface member : bucket.members)
      locs.push_back(member.getLoc());
    Location loc = builder.getFusedLoc(locs);

    Operation *first = bucket.members.front();
    SmallVector<Value> results;
    bool anyGather = llvm::any_of(bucket.members, [](CollectiveOpInterface m) {
      return isa<AllGatherOp>(m);
    });
    if (auto reduce = dyn_cast<AllReduceOp>(first); reduce && !anyGather)
      results = fuseAllReduces(builder, loc, bucket, reduce);
    else
      results = fuseRows(builder, loc, bucket);
    for (auto [member, result] : llvm::zip(bucket.members, results)) {
      // Discardable attributes (e.g. a layout) describe the member's result.
      for (NamedAttribute attr : member->getDiscardableAttrs())
        result.getDefiningOp()->setAttr(attr.getName(), attr.getValue());
    }
    Operation *last = results.back().getDefiningOp();
    // Only now: the insertion point may sit right before a member.
    for (auto [member, result] : llvm::zip(bucket.members, results)) {
      member->getResult(0).replaceAllUsesWith(result);
      member->erase();
    }
    return last;
  }

  /// all_reduce: concatenate the flat inputs, reduce, slice each back.
  SmallVector<Value> fuseAllReduces(OpBuilder &builder, Location loc,
                                    Bucket &bucket, AllReduceOp first) {
    SmallVector<Value> flat;
    for (CollectiveOpInterface member : bucket.members)
      flat.push_back(reshape(builder, loc, member.getInput(), {-1}));
    Value concat = tensor::ConcatOp::create(builder, loc, /*dim=*/0, flat);
    auto fused = AllReduceOp::create(builder, loc, concat, first.getMeshAttr(),
                                     first.getMeshAxes(), first.getKindAttr());
    return sliceMembers(builder, bucket, fused, /*rows=*/1);
  }

  /// reduce_scatter and all_gather over k ranks. A tensor whose split dim
  /// has only unit dims before it is, row-major, its k chunks one after the
  /// other; otherwise ([A, k*c, B] with A > 1, an FSDP shard of a weight's
  /// second dim) the chunks are made contiguous by a transpose to
  /// [k, A, c*B] (reduce_scatter: before, on the input; all_gather: after,
  /// back from [k, A, c*B]). reduce_scatter: each input viewed as
  /// [k, n/k], the views concatenated along dim 1 and reduce-scattered
  /// along dim 0: rank r's row holds every member's chunk r side by side.
  /// all_gather: each input viewed as [1, n], concatenated along dim 1 and
  /// gathered along dim 0 into [k, total]: member i's columns [k, n_i] are
  /// its chunks, rank by rank.
  SmallVector<Value> fuseRows(OpBuilder &builder, Location loc,
                              Bucket &bucket) {
    auto firstGather =
        llvm::find_if(bucket.members, [](CollectiveOpInterface m) {
          return isa<AllGatherOp>(m);
        });
    bool gather = firstGather != bucket.members.end();
    CollectiveOpInterface first =
        gather ? *firstGather : bucket.members.front();
    int64_t k = groupSize(first);
    SmallVector<Value> rows;
    for (CollectiveOpInterface member : bucket.members) {
      Value input = member.getInput();
      if (!gather && leadingOf(member) != 1)
        input =
            swapOuter(builder, loc,
                      reshape(builder, loc, input, {leadingOf(member), k, -1}));
      rows.push_back(reshape(builder, loc, input, {gather ? 1 : k, -1}));
    }
    Value concat = tensor::ConcatOp::create(builder, loc, /*dim=*/1, rows);
    auto concatType = cast<RankedTensorType>(concat.getType());
    auto resultType =
        RankedTensorType::get({gather ? k : 1, concatType.getDimSize(1)},
                              concatType.getElementType());
    Value fused;
    if (gather)
      fused = AllGatherOp::create(builder, loc, resultType, concat,
                                  first.getMeshAttr(), first.getMeshAxes(),
                                  builder.getI64IntegerAttr(0));
    else
      fused = ReduceScatterOp::create(
          builder, loc, resultType, concat, first.getMeshAttr(),
          first.getMeshAxes(), builder.getI64IntegerAttr(0),
          cast<ReduceScatterOp>(first.getOperation()).getKindAttr());
    SmallVector<Value> results =
        sliceMembers(builder, bucket, fused, /*rows=*/gather ? k : 1);
    if (gather)
      for (auto [member, result] : llvm::zip(bucket.members, results)) {
        if (isa<AllReduceOp>(member)) {
          result =
              sumRows(builder, member.getLoc(), result,
                      cast<RankedTensorType>(member->getResult(0).getType()));
          continue;
        }
        int64_t lead = leadingOf(member);
        if (lead == 1)
          continue;
        Location memberLoc = member.getLoc();
        Value chunks = reshape(builder, memberLoc, result, {k, lead, -1});
        result = reshape(
            builder, memberLoc, swapOuter(builder, memberLoc, chunks),
            cast<RankedTensorType>(member->getResult(0).getType()).getShape());
      }
    return results;
  }

  /// The sum over dim 0 of `rows` ([k, n], an all_reduce's inputs gathered
  /// from k ranks) reshaped to `type`.
  static Value sumRows(OpBuilder &builder, Location loc, Value rows,
                       RankedTensorType type) {
    auto rowsType = cast<RankedTensorType>(rows.getType());
    Type element = type.getElementType();
    Value init = tensor::EmptyOp::create(
        builder, loc, ArrayRef<int64_t>{rowsType.getDimSize(1)}, element);
    Value zero = arith::ConstantOp::create(builder, loc, element,
                                           builder.getZeroAttr(element));
    init = linalg::FillOp::create(builder, loc, zero, init).getResult(0);
    auto sum = linalg::ReduceOp::create(
        builder, loc, ValueRange{rows}, ValueRange{init}, ArrayRef<int64_t>{0},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value added =
              isa<FloatType>(element)
                  ? Value(arith::AddFOp::create(b, l, args[0], args[1]))
                  : Value(arith::AddIOp::create(b, l, args[0], args[1]));
          linalg::YieldOp::create(b, l, added);
        });
    return reshape(builder, loc, sum->getResult(0), type.getShape());
  }

  /// The product of the dims before a reduce_scatter's or all_gather's dim.
  static int64_t leadingOf(CollectiveOpInterface op) {
    auto input = cast<RankedTensorType>(op.getInput().getType());
    int64_t dim = isa<AllGatherOp>(op)
                      ? cast<AllGatherOp>(op.getOperation()).getDim()
                      : cast<ReduceScatterOp>(op.getOperation()).getDim();
    return leadingElements(input.getShape(), dim);
  }

  /// [a, b, c] -> [b, a, c] (a copy).
  static Value swapOuter(OpBuilder &builder, Location loc, Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    ArrayRef<int64_t> shape = type.getShape();
    Value init = tensor::EmptyOp::create(
        builder, loc, ArrayRef<int64_t>{shape[1], shape[0], shape[2]},
        type.getElementType());
    return linalg::TransposeOp::create(builder, loc, value, init,
                                       ArrayRef<int64_t>{1, 0, 2})
        ->getResult(0);
  }

  /// Member i's part of a fused result of shape [N] (rows = 1, all_reduce),
  /// [1, N] or [k, N]: its columns, in member order, reshaped to its result.
  SmallVector<Value> sliceMembers(OpBuilder &builder, Bucket &bucket,
                                  Value fused, int64_t rows) {
    auto fusedType = cast<RankedTensorType>(fused.getType());
    bool flat = fusedType.getRank() == 1;
    SmallVector<Value> results;
    int64_t offset = 0;
    for (CollectiveOpInterface member : bucket.members) {
      auto type = cast<RankedTensorType>(member->getResult(0).getType());
      // An all_reduce riding in a gather has a whole row per rank.
      bool riding = isa<AllReduceOp>(member) && !flat;
      int64_t columns = type.getNumElements() / (riding ? 1 : rows);
      if (riding)
        type = RankedTensorType::get({rows, columns}, type.getElementType());
      Location loc = member.getLoc();
      Value slice;
      if (flat) {
        slice = tensor::ExtractSliceOp::create(
            builder, loc,
            RankedTensorType::get({columns}, type.getElementType()), fused,
            ArrayRef<OpFoldResult>{builder.getIndexAttr(offset)},
            ArrayRef<OpFoldResult>{builder.getIndexAttr(columns)},
            ArrayRef<OpFoldResult>{builder.getIndexAttr(1)});
      } else {
        slice = tensor::ExtractSliceOp::create(
            builder, loc,
            RankedTensorType::get({rows, columns}, type.getElementType()),
            fused,
            ArrayRef<OpFoldResult>{builder.getIndexAttr(0),
                                   builder.getIndexAttr(offset)},
            ArrayRef<OpFoldResult>{builder.getIndexAttr(rows),
                                   builder.getIndexAttr(columns)},
            ArrayRef<OpFoldResult>{builder.getIndexAttr(1),
                                   builder.getIndexAttr(1)});
      }
      offset += columns;
      results.push_back(reshape(builder, loc, slice, type.getShape()));
    }
    return results;
  }

  /// `value` (static) reshaped to `shape` (one -1 allowed): through its flat
  /// 1-D form, as collapse/expand ops, so bufferization sees views.
  static Value reshape(OpBuilder &builder, Location loc, Value value,
                       ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(value.getType());
    int64_t n = type.getNumElements();
    SmallVector<int64_t> target(shape);
    int64_t known = 1;
    for (int64_t size : shape)
      known *= size < 0 ? 1 : size;
    for (int64_t &size : target)
      if (size < 0)
        size = n / known;
    if (llvm::equal(target, type.getShape()))
      return value;
    Type element = type.getElementType();
    Value flat = value;
    if (type.getRank() != 1) {
      auto flatType = RankedTensorType::get({n}, element);
      flat = type.getRank() == 0
                 ? Value(tensor::ExpandShapeOp::create(builder, loc, flatType,
                                                       value, allDims(0)))
                 : Value(tensor::CollapseShapeOp::create(
                       builder, loc, flatType, value, allDims(type.getRank())));
    }
    if (target.size() == 1)
      return flat;
    auto targetType = RankedTensorType::get(target, element);
    if (target.empty())
      return tensor::CollapseShapeOp::create(builder, loc, targetType, flat,
                                             allDims(0));
    return tensor::ExpandShapeOp::create(builder, loc, targetType, flat,
                                         allDims(target.size()));
  }

  static SmallVector<ReassociationIndices> allDims(int64_t rank) {
    if (rank == 0)
      return {};
    ReassociationIndices dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
    return {dims};
  }

  Block &block;
  int64_t cap, firstCap, gatherReduceBytes;
  SymbolTableCollection &tables;
  bool changed = false;
  DenseMap<Operation *, int64_t> position;
};

struct BucketCollectivesPass
    : spmd::impl::SPMDBucketCollectivesBase<BucketCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto [name, value] :
         {std::pair<StringRef, int64_t>{"cap-bytes", capBytes},
          {"first-cap-bytes", firstCapBytes},
          {"gather-reduce-bytes", gatherReduceBytes}}) {
      if (value >= 0)
        continue;
      emitError(getOperation()->getLoc()) << "spmd-bucket-collectives: " << name
                                          << " must be >= 0, got " << value;
      return signalPassFailure();
    }
    // The first bucket of a kind is at most the cap.
    int64_t firstCap =
        capBytes == 0
            ? firstCapBytes
            : (firstCapBytes == 0 ? capBytes
                                  : std::min<int64_t>(firstCapBytes, capBytes));
    SymbolTableCollection tables;
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) { blocks.push_back(block); });
    bool changed = false;
    for (Block *block : blocks)
      changed |=
          BlockBucketer(*block, capBytes, firstCap, gatherReduceBytes, tables)
              .run();
    // Unchanged IR needs no verification after the pass (a full walk).
    if (!changed)
      markAllAnalysesPreserved();
  }
};

} // namespace
