//===- PlanMemory.cpp - static memory plan of plan schedules --------------===//

#include "passes/plan/Passes.h"

#include "core/Checked.h"

#include "dialects/spmd/SPMDPlanOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/MathExtras.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDPLANMEMORY
#include "passes/plan/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {
/// Arena offsets and ends stay within 2^62 bytes, so that aligning them up
/// (the alignment is a power of two in int64, at most 2^62) cannot overflow.
constexpr int64_t kMaxArenaBytes = int64_t(1) << 62;

struct Interval {
  memref::AllocOp alloc;
  int64_t bytes = 0;
  int64_t first = 0, last = 0; // step indices, inclusive
  int64_t offset = 0;
};

/// The buffers placed so far, to find those whose live ranges overlap a
/// step range in time proportional to their number (checking every placed
/// buffer for every buffer was O(buffers^2)): a max-tree of `last` over all
/// buffers sorted by `first`, -1 where a buffer is not placed yet.
class PlacedSet {
public:
  explicit PlacedSet(ArrayRef<Interval *> all) : byFirst(all) {
    llvm::stable_sort(byFirst, [](const Interval *x, const Interval *y) {
      return x->first < y->first;
    });
    while (leaves < byFirst.size())
      leaves *= 2;
    maxLast.assign(2 * leaves, -1);
    for (auto [i, b] : llvm::enumerate(byFirst))
      index[b] = i;
  }

  void insert(Interval *b) {
    size_t node = leaves + index.lookup(b);
    maxLast[node] = b->last;
    for (node /= 2; node; node /= 2)
      maxLast[node] = std::max(maxLast[2 * node], maxLast[2 * node + 1]);
  }

  /// Calls `fn` on each placed buffer live at some step of [first, last].
  void forEachOverlapping(int64_t first, int64_t last,
                          function_ref<void(Interval *)> fn) const {
    size_t end = llvm::upper_bound(byFirst, last,
                                   [](int64_t v, const Interval *b) {
                                     return v < b->first;
                                   }) -
                 byFirst.begin();
    visit(1, 0, leaves, end, first, fn);
  }

private:
  void visit(size_t node, size_t lo, size_t hi, size_t end, int64_t first,
             function_ref<void(Interval *)> fn) const {
    if (lo >= end || maxLast[node] < first)
      return;
    if (hi - lo == 1)
      return fn(byFirst[lo]);
    size_t mid = (lo + hi) / 2;
    visit(2 * node, lo, mid, end, first, fn);
    visit(2 * node + 1, mid, hi, end, first, fn);
  }

  SmallVector<Interval *> byFirst;
  size_t leaves = 1;
  SmallVector<int64_t> maxLast;
  DenseMap<Interval *, size_t> index;
};

struct PlanMemoryPass : spmd::impl::SPMDPlanMemoryBase<PlanMemoryPass> {
  using SPMDPlanMemoryBase::SPMDPlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      module.emitError() << "spmd-plan-memory: alignment must be a power of "
                            "two, got "
                         << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || func->hasAttr(spmd::kPlanKernelAttrName) ||
          !func.isPublic())
        continue;
      if (failed(plan(func)))
        return signalPassFailure();
    }
    module->setAttr(spmd::kPlanVersionAttrName,
                    IntegerAttr::get(IntegerType::get(module.getContext(), 64),
                                     spmd::kPlanVersion));
  }

  /// On a GPU a collective runs on its own stream until the first later
  /// step that touches its buffers waits for it; sequential liveness would
  /// hand its input to the next step's output and make that step wait
  /// (spmd-schedule-collectives' overlap lost). The input stays live until
  /// then.
  static void
  extendForAsyncCollectives(Block &body,
                            DenseMap<Operation *, int64_t> &position,
                            int64_t end, SmallVector<Interval> &buffers) {
    DenseMap<Operation *, Interval *> byAlloc;
    for (Interval &b : buffers)
      byAlloc[b.alloc] = &b;
    auto root = [](Value v) -> Operation * {
      while (Operation *def = v.getDefiningOp()) {
        if (!isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp,
                 memref::SubViewOp>(def))
          return def;
        v = def->getOperand(0);
      }
      return nullptr;
    };
    // The positions of the ops that use each buffer (through views), in
    // order: the first use after a collective is a binary search rather
    // than a walk down the block, which was O(n) per collective.
    DenseMap<Operation *, SmallVector<int64_t>> usesOf;
    for (Operation &op : body) {
      auto it = position.find(&op);
      if (it == position.end())
        continue;
      for (Value operand : op.getOperands())
        if (Operation *r = root(operand)) {
          SmallVector<int64_t> &uses = usesOf[r];
          if (uses.empty() || uses.back() != it->second)
            uses.push_back(it->second);
        }
    }
    for (Operation &op : body) {
      auto collective = dyn_cast<spmd::CollectiveOpInterface>(op);
      if (!collective || !collective.communicates())
        continue;
      Operation *in = root(op.getOperand(0)), *out = root(op.getOperand(1));
      int64_t at = position.lookup(&op), done = end;
      for (Operation *buffer : {in, out}) {
        if (!buffer)
          continue;
        const SmallVector<int64_t> &uses = usesOf[buffer];
        auto next = llvm::upper_bound(uses, at);
        if (next != uses.end())
          done = std::min(done, *next);
      }
      for (Operation *buffer : {in, out})
        if (Interval *interval = byAlloc.lookup(buffer))
          interval->last = std::max(interval->last, done);
    }
  }

  LogicalResult plan(func::FuncOp func) {
    if (!func.getBody().hasOneBlock())
      return func.emitError() << "schedule must have a single block";
    Block &body = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    int64_t end = 0;
    for (Operation &op : body)
      position[&op] = end++;

    SmallVector<Interval> buffers;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      auto alloc = dyn_cast<memref::AllocOp>(op);
      if (!alloc)
        continue;
      MemRefType type = alloc.getType();
      if (alloc.use_empty()) {
        alloc.erase();
        continue;
      }
      if (!type.hasStaticShape()) {
        // Rank-dependent sizes: the runtime allocates this buffer at its
        // rank's size, outside the arena (`bytes 0`).
        OpBuilder builder(alloc);
        auto buffer = spmd::PlanBufferOp::create(builder, alloc.getLoc(), type,
                                                 alloc.getDynamicSizes(), 0, 0);
        alloc.replaceAllUsesWith(buffer.getResult());
        alloc.erase();
        continue;
      }
      Interval interval;
      interval.alloc = alloc;
      std::optional<int64_t> element =
          spmd::elementBytes(type.getElementType());
      if (!element)
        return alloc.emitOpError()
               << "allocates a " << type << ": a plan holds integer, float, "
               << "index and complex elements only";
      // A wrapped size would be a small buffer overlapping others.
      std::optional<int64_t> bytes =
          spmd::checkedProduct(type.getShape(), *element);
      if (!bytes)
        return alloc.emitOpError()
               << "allocates a " << type << " whose byte size overflows int64";
      interval.bytes = *bytes;
      interval.first = interval.last = position[alloc];
      // Uses of the buffer and of its views (reshapes) keep it live.
      SmallVector<Value> values{alloc.getResult()};
      while (!values.empty()) {
        Value value = values.pop_back_val();
        for (Operation *user : value.getUsers()) {
          if (user->getBlock() != &body)
            return user->emitOpError()
                   << "uses a plan buffer in a nested region";
          // Views (a slice of a bucketed collective's buffer a GEMM reads
          // included) keep the buffer live for their users.
          if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp,
                  memref::CastOp, memref::SubViewOp>(user))
            values.push_back(user->getResult(0));
          // Results stay live to the end: the runtime reads them afterwards.
          interval.last = std::max(
              interval.last, isa<func::ReturnOp>(user) ? end : position[user]);
        }
      }
      buffers.push_back(interval);
    }

    extendForAsyncCollectives(body, position, end, buffers);

    // First fit, largest first: a buffer takes the lowest aligned offset
    // that does not overlap a placed buffer whose live range overlaps.
    SmallVector<Interval *> order;
    for (Interval &b : buffers)
      order.push_back(&b);
    llvm::stable_sort(order, [](const Interval *x, const Interval *y) {
      return x->bytes > y->bytes;
    });
    PlacedSet placed(order);
    int64_t arena = 0;
    for (Interval *b : order) {
      SmallVector<std::pair<int64_t, int64_t>> taken;
      placed.forEachOverlapping(b->first, b->last, [&](Interval *p) {
        taken.push_back({p->offset, p->offset + p->bytes});
      });
      llvm::sort(taken);
      int64_t offset = 0;
      for (auto [lo, hi] : taken) {
        if (b->bytes <= lo - offset)
          break;
        offset = std::max<int64_t>(offset, llvm::alignTo(hi, alignment));
      }
      if (offset > kMaxArenaBytes - b->bytes)
        return b->alloc.emitOpError()
               << "needs " << b->bytes << " bytes at arena offset " << offset
               << ", beyond the largest arena of " << kMaxArenaBytes
               << " bytes";
      b->offset = offset;
      arena = std::max(arena, offset + b->bytes);
      placed.insert(b);
    }
    arena = static_cast<int64_t>(llvm::alignTo(arena, alignment));
    func->setAttr(
        spmd::kPlanArenaAttrName,
        IntegerAttr::get(IntegerType::get(func.getContext(), 64), arena));
    for (Interval &b : buffers) {
      OpBuilder builder(b.alloc);
      auto buffer = spmd::PlanBufferOp::create(builder, b.alloc.getLoc(),
                                               b.alloc.getType(), ValueRange{},
                                               b.offset, b.bytes);
      b.alloc.replaceAllUsesWith(buffer.getResult());
      b.alloc.erase();
    }
    return success();
  }
};
} // namespace
