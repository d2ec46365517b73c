//===- BucketAllReduces.cpp - fuse small all_reduces under a size cap -----===//
//
// Many small all_reduces (one per gradient) pay the collective latency many
// times; one all_reduce of their concatenation pays it once. Buckets are
// formed per block in program order from the program alone, so every rank
// forms the same buckets and runs the same collective sequence.
//
//===----------------------------------------------------------------------===//

#include "dialects/spmd/SPMDOps.h"
#include "passes/collectives/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include <climits>
#include <tuple>

namespace spmd {
#define GEN_PASS_DEF_SPMDBUCKETALLREDUCES
#include "passes/collectives/Passes.h.inc"
} // namespace spmd

using namespace mlir;
using namespace spmd;

namespace {

std::optional<int64_t> elementBytes(Type type) {
  if (auto complex = dyn_cast<ComplexType>(type)) {
    std::optional<int64_t> part = elementBytes(complex.getElementType());
    return part ? std::optional<int64_t>(2 * *part) : std::nullopt;
  }
  if (type.isIntOrFloat())
    return (type.getIntOrFloatBitWidth() + 7) / 8;
  return std::nullopt;
}

/// All_reduces that may share a bucket: same mesh, axes, kind, element type.
using BucketKey = std::tuple<Attribute, Attribute, Attribute, Type>;

BucketKey keyOf(AllReduceOp op) {
  return {op.getMeshAttr(), op.getMeshAxes(), op.getKindAttr(),
          op.getType().getElementType()};
}

struct Bucket {
  SmallVector<AllReduceOp> members;
  int64_t bytes = 0;
  /// Positions in the block: the fused op must go after `lo` (the last
  /// operand definition, -1 for none) and before `hi` (the first use).
  int lo = -1, hi = INT_MAX;
};

class BlockBucketer {
public:
  BlockBucketer(Block &block, int64_t cap) : block(block), cap(cap) {
    int i = 0;
    for (Operation &op : block)
      position[&op] = i++;
  }

  void run() {
    llvm::MapVector<BucketKey, Bucket> open;
    SmallVector<Bucket> closed;
    for (Operation &op : block) {
      auto reduce = dyn_cast<AllReduceOp>(op);
      if (!reduce)
        continue;
      std::optional<int64_t> bytes = bytesOf(reduce);
      // Skipped ones do not close the open bucket: they are not moved.
      if (!bytes || (cap > 0 && *bytes > cap))
        continue;
      int lo = definitionPosition(reduce.getInput());
      int hi = firstUsePosition(reduce);
      Bucket &bucket = open[keyOf(reduce)];
      // An operand computed by a member would need the fused op's own result.
      bool feedsOnMember = llvm::any_of(bucket.members, [&](AllReduceOp m) {
        return m.getResult() == reduce.getInput();
      });
      bool fits = !feedsOnMember &&
                  std::max(bucket.lo, lo) < std::min(bucket.hi, hi) &&
                  (cap == 0 || bucket.bytes + *bytes <= cap);
      if (!fits) {
        closed.push_back(std::move(bucket));
        bucket = Bucket();
      }
      bucket.members.push_back(reduce);
      bucket.bytes += *bytes;
      bucket.lo = std::max(bucket.lo, lo);
      bucket.hi = std::min(bucket.hi, hi);
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
      if (bucket.members.size() > 1)
        if (Operation *last = fuse(bucket, previous))
          previous = last;
  }

private:
  /// Byte size of a static all_reduce. Dynamic ones are never bucketed: a
  /// dim that differs between ranks would put every later member at a
  /// rank-dependent offset of the concatenation.
  static std::optional<int64_t> bytesOf(AllReduceOp op) {
    RankedTensorType type = op.getType();
    if (!type.hasStaticShape())
      return std::nullopt;
    std::optional<int64_t> element = elementBytes(type.getElementType());
    if (!element)
      return std::nullopt;
    return type.getNumElements() * *element;
  }

  /// The op of this block that defines `value` or contains its definition,
  /// or null when `value` is defined before the block starts.
  Operation *definitionInBlock(Value value) {
    Operation *def = value.getDefiningOp();
    return def ? block.findAncestorOpInBlock(*def) : nullptr;
  }

  int definitionPosition(Value value) {
    Operation *def = definitionInBlock(value);
    return def ? position.lookup(def) : -1;
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

  int firstUsePosition(Operation *op) {
    Operation *first = firstUseInBlock(op);
    return first ? position.lookup(first) : INT_MAX;
  }

  /// Rewrites a bucket into one all_reduce; returns the last op it created,
  /// or null if the bucket no longer fits anywhere. `previous` is the end of
  /// the bucket fused before: when possible the new one follows it, so the
  /// fused collectives keep the program order of their buckets.
  Operation *fuse(Bucket &bucket, Operation *previous) {
    // Check again on the current IR: an earlier bucket may have replaced an
    // operand of this one by a slice at another position.
    Operation *after = nullptr, *before = nullptr;
    for (AllReduceOp member : bucket.members) {
      Operation *def = definitionInBlock(member.getInput());
      if (def && (!after || after->isBeforeInBlock(def)))
        after = def;
      Operation *use = firstUseInBlock(member);
      if (use && (!before || use->isBeforeInBlock(before)))
        before = use;
    }
    if (after && before && !after->isBeforeInBlock(before))
      return nullptr;
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
    for (AllReduceOp member : bucket.members)
      locs.push_back(member.getLoc());
    Location loc = builder.getFusedLoc(locs);

    SmallVector<Value> flat;
    for (AllReduceOp member : bucket.members)
      flat.push_back(flatten(builder, loc, member.getInput()));
    Value concat = tensor::ConcatOp::create(builder, loc, /*dim=*/0, flat);
    AllReduceOp first = bucket.members.front();
    auto fused = AllReduceOp::create(builder, loc, concat, first.getMeshAttr(),
                                     first.getMeshAxes(), first.getKindAttr());

    SmallVector<Value> results;
    int64_t offset = 0;
    for (AllReduceOp member : bucket.members) {
      RankedTensorType type = member.getType();
      int64_t size = type.getNumElements();
      Value slice = tensor::ExtractSliceOp::create(
          builder, member.getLoc(),
          RankedTensorType::get({size}, type.getElementType()), fused,
          ArrayRef<OpFoldResult>{builder.getIndexAttr(offset)},
          ArrayRef<OpFoldResult>{builder.getIndexAttr(size)},
          ArrayRef<OpFoldResult>{builder.getIndexAttr(1)});
      offset += size;
      Value result = unflatten(builder, member.getLoc(), slice, type);
      // Discardable attributes (e.g. a layout) describe the member's result.
      for (NamedAttribute attr : member->getDiscardableAttrs())
        result.getDefiningOp()->setAttr(attr.getName(), attr.getValue());
      results.push_back(result);
    }
    Operation *last = results.back().getDefiningOp();
    // Only now: the insertion point may sit right before a member.
    for (auto [member, result] : llvm::zip(bucket.members, results)) {
      member.getResult().replaceAllUsesWith(result);
      member.erase();
    }
    return last;
  }

  static SmallVector<ReassociationIndices> allDims(int64_t rank) {
    if (rank == 0)
      return {};
    ReassociationIndices dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
    return {dims};
  }

  /// The 1-D view of a static tensor.
  static Value flatten(OpBuilder &builder, Location loc, Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() == 1)
      return value;
    auto flatType =
        RankedTensorType::get({type.getNumElements()}, type.getElementType());
    if (type.getRank() == 0)
      return tensor::ExpandShapeOp::create(builder, loc, flatType, value,
                                           allDims(0));
    return tensor::CollapseShapeOp::create(builder, loc, flatType, value,
                                           allDims(type.getRank()));
  }

  static Value unflatten(OpBuilder &builder, Location loc, Value flat,
                         RankedTensorType type) {
    if (type.getRank() == 1)
      return flat;
    if (type.getRank() == 0)
      return tensor::CollapseShapeOp::create(builder, loc, type, flat,
                                             allDims(0));
    return tensor::ExpandShapeOp::create(builder, loc, type, flat,
                                         allDims(type.getRank()));
  }

  Block &block;
  int64_t cap;
  DenseMap<Operation *, int> position;
};

struct BucketAllReducesPass
    : spmd::impl::SPMDBucketAllReducesBase<BucketAllReducesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (capBytes < 0) {
      emitError(getOperation()->getLoc())
          << "spmd-bucket-all-reduces: cap-bytes must be >= 0, got "
          << static_cast<int64_t>(capBytes);
      return signalPassFailure();
    }
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      BlockBucketer(*block, capBytes).run();
  }
};

} // namespace
