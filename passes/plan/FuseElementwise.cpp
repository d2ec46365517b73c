//===- FuseElementwise.cpp - fuse elementwise/broadcast chains ------------===//

#include "passes/plan/GemmMatch.h"
#include "passes/plan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDFUSEELEMENTWISE
#include "passes/plan/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {
/// A linalg op that only copies its one input through a permuted map
/// (a transpose).
bool isPermutedCopy(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return false;
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  return body.getOperations().size() == 1 &&
         yield.getValues()[0] == body.getArgument(0) &&
         llvm::all_of(generic.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isPermutation(); });
}

/// Whether `consumer`, a contraction, still matches a GEMM after the
/// transpose `producer` of its operand is fused (read through the
/// composed map).
bool stillGemm(linalg::LinalgOp consumer, OpOperand *operand,
               Operation *producer) {
  auto copy = cast<linalg::GenericOp>(producer);
  SmallVector<AffineMap> maps = consumer.getIndexingMapsArray();
  AffineMap in = copy.getIndexingMapsArray()[0];
  AffineMap out = copy.getIndexingMapsArray()[1];
  AffineMap &fused = maps[operand->getOperandNumber()];
  fused = in.compose(inversePermutation(out)).compose(fused);
  return spmd::matchGemmLoops(maps).has_value();
}

/// Ops in the body of linalg op `op`, counted up to `limit`.
int64_t bodyOps(Operation *op, int64_t limit) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || op->getNumRegions() == 0 || op->getRegion(0).empty())
    return 0;
  int64_t n = 0;
  for (Operation &inner : op->getRegion(0).front()) {
    (void)inner;
    if (++n >= limit)
      break;
  }
  return n;
}

/// The largest fused body: each fusion copies the producer's body into the
/// consumer's, so along a chain of N elementwise ops unbounded fusion does
/// O(N^2) work (10,000 ops took 33 s). Capped, fusion is linear and a
/// kernel still holds hundreds of ops (a Philox draw is ~220).
constexpr int64_t kMaxFusedBodyOps = 512;

/// Whether the producer of `operand` fuses into its owner, the size cap
/// aside. Only when it has no other use (unless `anyUses`) and the consumer
/// reads it without broadcasting, so no work is duplicated: a broadcast
/// producer (AdamW's 0-d bias corrections 1 - beta^t, say) fused into an
/// elementwise consumer would be recomputed per element.
bool fusesUncapped(OpOperand *operand, bool anyUses = false) {
  Operation *producer = operand->get().getDefiningOp();
  if (!producer || !(anyUses || producer->hasOneUse()))
    return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
  if (!consumer)
    return true;
  // Into a contraction only a transpose (a copy through a permuted map,
  // which costs nothing fused) fuses: it becomes the GEMM's transpose flag,
  // while fused arithmetic would turn the GEMM into a loop nest.
  if (linalg::isaContractionOpInterface(consumer))
    return isPermutedCopy(producer) && stillGemm(consumer, operand, producer);
  return consumer.getMatchingIndexingMap(operand).isPermutation();
}

bool withinCap(OpOperand *operand) {
  Operation *producer = operand->get().getDefiningOp();
  return bodyOps(producer, kMaxFusedBodyOps + 1) +
             bodyOps(operand->getOwner(), kMaxFusedBodyOps + 1) <=
         kMaxFusedBodyOps;
}

/// A generic that spmd-fuse-elementwise's greedy fusion would fuse as a link
/// of a chain with nothing else happening to it: elementwise, one static
/// result, no index ops, a body that is more than a yield (an identity
/// generic is erased instead), and no input that the fill and constant
/// folding patterns would fold into the body.
bool isChainCandidate(linalg::GenericOp op) {
  if (op.getNumResults() != 1 || !op.hasPureTensorSemantics() ||
      op.getNumParallelLoops() != op.getNumLoops() || op.hasIndexSemantics() ||
      op.getBody()->getOperations().size() < 2)
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape())
    return false;
  return llvm::all_of(op.getDpsInputs(), [](Value v) {
    Operation *def = v.getDefiningOp();
    return !def || !(def->hasTrait<OpTrait::ConstantLike>() ||
                     isa<linalg::FillOp, tensor::EmptyOp>(def));
  });
}

/// Fuses linear chains of elementwise generics at once, before the greedy
/// fusion runs, into the kernels that fusion would make of them. Greedy
/// fusion works bottom-up, fusing each producer into the kernel grown so
/// far, which copies that kernel's whole body every time: O(cap) work per
/// op (a 100,000-op chain: 15 s). Here each chain is cut where greedy
/// fusion cuts it (from its last op up, at the cap) and each piece is fused
/// as a balanced tree: O(log cap) copies per op. Fusing a producer into its
/// consumer puts the producer's inputs and body ops in place of the fused
/// operand and before the consumer's body, which is associative, so the
/// kernel is the same op (its duplicate inputs are merged by the greedy
/// run, as they would have been).
void fuseChains(ModuleOp module, IRRewriter &rewriter) {
  SmallVector<linalg::GenericOp> candidates;
  module.walk([&](linalg::GenericOp op) {
    if (isChainCandidate(op))
      candidates.push_back(op);
  });
  llvm::SmallPtrSet<Operation *, 16> isCandidate;
  for (linalg::GenericOp op : candidates)
    isCandidate.insert(op);
  // Whether greedy fusion may fuse `operand`'s producer into its owner
  // (once the producer has no other use, which it may bring about: erasing
  // a dead user, merging duplicate operands, replacing an unread init).
  auto mayFuse = [](OpOperand &operand) {
    return linalg::areElementwiseOpsFusable(&operand) &&
           fusesUncapped(&operand, /*anyUses=*/true);
  };
  // Whether it will: the producer's other uses are unread inits of the
  // same consumer, which RemoveOutsDependency replaces (as below) when it
  // visits the consumer.
  auto fusable = [](OpOperand &operand) {
    auto consumer = cast<linalg::GenericOp>(operand.getOwner());
    return llvm::all_of(operand.get().getUses(), [&](OpOperand &use) {
      return &use == &operand ||
             (use.getOwner() == consumer && consumer.isDpsInit(&use) &&
              !consumer.payloadUsesValueFromOperand(&use));
    });
  };
  // The link above each candidate: its producer, when that is the only
  // producer greedy fusion would ever fuse into it and a candidate in its
  // block.
  DenseMap<Operation *, Operation *> above;
  DenseSet<Operation *> hasBelow, top;
  for (linalg::GenericOp op : candidates) {
    OpOperand *only = nullptr;
    int count = 0;
    for (OpOperand &operand : op->getOpOperands())
      if (mayFuse(operand)) {
        only = &operand;
        ++count;
      }
    if (count == 0)
      top.insert(op);
    if (count != 1 || !fusable(*only))
      continue;
    Operation *producer = only->get().getDefiningOp();
    if (!isCandidate.contains(producer) ||
        producer->getBlock() != op->getBlock())
      continue;
    above[op] = producer;
    hasBelow.insert(producer);
  }
  for (linalg::GenericOp tail : candidates) {
    if (hasBelow.contains(tail) || !above.count(tail))
      continue;
    // A tail that something else would fuse from below starts its kernel
    // there: left to greedy fusion.
    if (llvm::any_of(tail->getUses(),
                     [&](OpOperand &use) { return mayFuse(use); }))
      continue;
    // Only a chain that nothing else fuses into, up to a top op with no
    // fusable producer: what greedy fusion makes of it then depends on
    // neither the order it visits ops in nor what else it does (erasing
    // dead ops makes more producers fusable, in an order this would not
    // follow).
    Operation *head = tail;
    while (above.count(head))
      head = above.lookup(head);
    if (!top.contains(head))
      continue;
    // Cut the chain as greedy fusion would: from the tail up, a producer
    // joins the kernel below while both bodies together stay within the cap.
    SmallVector<SmallVector<Operation *>> pieces{{tail}};
    int64_t size = bodyOps(tail, INT64_MAX);
    for (Operation *op = above.lookup(tail); op; op = above.lookup(op)) {
      int64_t own = bodyOps(op, INT64_MAX);
      if (own + size <= kMaxFusedBodyOps) {
        size += own - 1;
        pieces.back().push_back(op);
      } else {
        size = own;
        pieces.push_back({op});
      }
    }
    for (SmallVector<Operation *> &piece : pieces) {
      if (piece.size() < 2)
        continue;
      // What RemoveOutsDependency does to each consumer before it fuses:
      // an init whose value the body never reads becomes a tensor.empty
      // (only the bottom op's survives, as it would).
      for (Operation *op : ArrayRef(piece).drop_back()) {
        auto generic = cast<linalg::GenericOp>(op);
        for (OpOperand &init : generic.getDpsInitsMutable()) {
          if (generic.payloadUsesValueFromOperand(&init) ||
              init.get().getDefiningOp<tensor::EmptyOp>())
            continue;
          auto type = cast<RankedTensorType>(init.get().getType());
          rewriter.setInsertionPoint(op);
          init.set(tensor::EmptyOp::create(
              rewriter, op->getLoc(), type.getShape(), type.getElementType()));
        }
      }
      // Bottom-up order in `piece`: fuse neighbours pairwise, each round
      // halving the piece.
      while (piece.size() > 1) {
        SmallVector<Operation *> next;
        for (size_t i = 0; i + 1 < piece.size(); i += 2) {
          Operation *consumer = piece[i], *producer = piece[i + 1];
          OpOperand *operand = nullptr;
          for (OpOperand &o : consumer->getOpOperands())
            if (o.get().getDefiningOp() == producer)
              operand = &o;
          rewriter.setInsertionPoint(consumer);
          FailureOr<linalg::ElementwiseOpFusionResult> fused =
              linalg::fuseElementwiseOps(rewriter, operand);
          if (failed(fused))
            return; // Left to greedy fusion.
          for (auto [from, to] : fused->replacements)
            rewriter.replaceAllUsesWith(from, to);
          rewriter.eraseOp(consumer);
          rewriter.eraseOp(producer);
          next.push_back(fused->fusedOp);
        }
        if (piece.size() % 2)
          next.push_back(piece.back());
        piece = std::move(next);
      }
    }
  }
}

/// The most payload ops of an elementwise producer that is computed again
/// in each of its consumers rather than written once (DuplicateForFusion).
constexpr int64_t kMaxRecomputedOps = 32;
/// The most consumers it is computed again in.
constexpr unsigned kMaxRecomputes = 4;

/// Gives each consumer of a cheap elementwise producer a copy of its own,
/// which fusion then fuses, so that the producer's result is never written
/// and read back: the attention's softmax (scale and mask, then exp of the
/// difference to the row max, each read by a row reduction and by the next
/// elementwise op) went through memory five times, the bf16 GPT's
/// [8, 16, 1024, 1024] scores 256 MB each time. Only when every use fuses
/// (else the result is written anyway) and the producer reads at most one
/// operand at its own size (the others broadcast): each consumer then reads
/// no more bytes than the producer's result, and the result's write and
/// reads disappear.
struct DuplicateForFusion : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (op->getNumResults() != 1 || op->hasOneUse() || op->use_empty() ||
        !op.hasPureTensorSemantics() ||
        op.getNumParallelLoops() != op.getNumLoops() ||
        op.hasIndexSemantics() ||
        bodyOps(op, kMaxRecomputedOps + 2) > kMaxRecomputedOps + 1)
      return failure();
    // At most one operand read at the result's size, in elements no wider
    // than the result's (a truncation's readers would read more).
    auto bits = [](Value v) -> unsigned {
      Type t = getElementTypeOrSelf(v.getType());
      return t.isIntOrFloat() ? t.getIntOrFloatBitWidth() : 0;
    };
    unsigned resultBits = bits(op->getResult(0));
    int fullSize = 0;
    for (OpOperand *in : op.getDpsInputOperands())
      if (op.getMatchingIndexingMap(in).isPermutation() &&
          (++fullSize > 1 || !resultBits || !bits(in->get()) ||
           bits(in->get()) > resultBits))
        return failure();
    for (OpOperand &init : op.getDpsInitsMutable())
      if (op.payloadUsesValueFromOperand(&init))
        return failure();
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : op->getResult(0).getUses()) {
      auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
      if (!consumer || !consumer.isDpsInput(&use) ||
          !linalg::areElementwiseOpsFusable(&use) ||
          !fusesUncapped(&use, /*anyUses=*/true) || !withinCap(&use))
        return failure();
      // A reader of two of its operands shares the one result (merged as
      // a duplicate operand) rather than computing it twice.
      if (llvm::any_of(uses, [&](OpOperand *other) {
            return other->getOwner() == consumer;
          }))
        return failure();
      uses.push_back(&use);
    }
    if (uses.size() > kMaxRecomputes)
      return failure();
    rewriter.setInsertionPoint(op);
    for (OpOperand *use : ArrayRef(uses).drop_front()) {
      Operation *copy = rewriter.clone(*op);
      rewriter.modifyOpInPlace(use->getOwner(),
                               [&] { use->set(copy->getResult(0)); });
    }
    return success();
  }
};

/// A generic with no loops (0-d results) whose payload has no effects and
/// does not read its inits: a one-thread kernel launch of its own.
bool isScalarKernel(linalg::GenericOp op) {
  if (op.getNumLoops() != 0 || !op.hasPureTensorSemantics())
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (op.payloadUsesValueFromOperand(&init))
      return false;
  return llvm::all_of(op.getBody()->without_terminator(), [](Operation &inner) {
    return isMemoryEffectFree(&inner) && inner.getNumRegions() == 0;
  });
}

/// Values `op`'s regions use but do not define.
SmallVector<Value> capturedValues(Operation *op) {
  SetVector<Value> captured;
  for (Region &region : op->getRegions())
    region.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (!op->isAncestor(v.getParentRegion()->getParentOp()))
          captured.insert(v);
    });
  return captured.takeVector();
}

/// Merges the scalar kernels that depend on function arguments and
/// constants alone into one multi-result generic per dependency level, at
/// the top of the function. An optimizer keeps a step counter per
/// parameter (PyTorch's AdamW), and its increment and bias corrections are
/// a few 0-d ops per parameter, each a one-thread kernel: 164 launches per
/// step of a 4-layer GPT (about 0.6 ms on an H200), where a level's ops
/// are independent and fit in one. Moving them up is safe: they read only
/// values defined at the top, and a 0-d value living longer costs nothing.
void mergeScalarKernels(func::FuncOp fn, IRRewriter &rewriter) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return;
  Block &body = fn.getBody().front();
  // Hoistable scalar kernels, in program order, with their level: 0 when
  // they read only arguments and constants, else one more than the
  // deepest hoistable producer they read.
  DenseMap<Operation *, int> level;
  // Per hoistable kernel: the constants its payload captures.
  DenseMap<Operation *, SmallVector<Value>> captures;
  SmallVector<SmallVector<linalg::GenericOp>> levels;
  for (Operation &op : body) {
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic || !isScalarKernel(generic))
      continue;
    int depth = 0;
    bool hoistable = llvm::all_of(generic.getDpsInputs(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def)
        return cast<BlockArgument>(v).getOwner() == &body;
      if (def->hasTrait<OpTrait::ConstantLike>())
        return true;
      auto it = level.find(def);
      if (it == level.end())
        return false;
      depth = std::max(depth, it->second + 1);
      return true;
    });
    if (!hoistable)
      continue;
    // Values the payload captures from above: constants only.
    SmallVector<Value> captured = capturedValues(generic);
    if (!llvm::all_of(captured, [](Value v) {
          Operation *def = v.getDefiningOp();
          return def && def->hasTrait<OpTrait::ConstantLike>();
        }))
      continue;
    captures[&op] = std::move(captured);
    level[&op] = depth;
    if (int(levels.size()) <= depth)
      levels.resize(depth + 1);
    levels[depth].push_back(generic);
  }
  if (level.size() < 2)
    return;
  MLIRContext *ctx = fn.getContext();
  DenseMap<Value, Value> moved; // old result or constant -> its value on top
  rewriter.setInsertionPointToStart(&body);
  auto valueOnTop = [&](Value v) {
    if (Value m = moved.lookup(v))
      return m;
    Operation *def = v.getDefiningOp();
    if (!def)
      return v;
    Value copy = rewriter.clone(*def)->getResult(0);
    moved[v] = copy;
    return copy;
  };
  for (ArrayRef<linalg::GenericOp> ops : levels) {
    // Kernels of at most kMaxFusedBodyOps payload ops, as fusion makes.
    while (!ops.empty()) {
      size_t n = 0;
      int64_t size = 0;
      while (n < ops.size() && (n == 0 || size + bodyOps(ops[n], INT64_MAX) <=
                                              kMaxFusedBodyOps)) {
        size += bodyOps(ops[n], INT64_MAX);
        ++n;
      }
      ArrayRef<linalg::GenericOp> group = ops.take_front(n);
      ops = ops.drop_front(n);
      SmallVector<Value> inputs, inits;
      DenseMap<Value, unsigned> inputIndex;
      SmallVector<Type> types;
      SmallVector<Location> locs;
      for (linalg::GenericOp op : group) {
        for (Value in : op.getDpsInputs()) {
          Value top = valueOnTop(in);
          if (inputIndex.try_emplace(top, inputs.size()).second)
            inputs.push_back(top);
        }
        for (Value r : op->getResults()) {
          auto type = cast<RankedTensorType>(r.getType());
          inits.push_back(tensor::EmptyOp::create(rewriter, op.getLoc(),
                                                  ArrayRef<int64_t>{},
                                                  type.getElementType()));
          types.push_back(type);
        }
        locs.push_back(op.getLoc());
        // Constants the payload captures, on top too.
        for (Value v : captures.lookup(op))
          valueOnTop(v);
      }
      SmallVector<AffineMap> maps(inputs.size() + inits.size(),
                                  AffineMap::get(0, 0, ctx));
      auto merged = linalg::GenericOp::create(
          rewriter, rewriter.getFusedLoc(locs), types, inputs, inits, maps,
          ArrayRef<utils::IteratorType>{},
          [&](OpBuilder &b, Location loc, ValueRange args) {
            SmallVector<Value> yields;
            for (linalg::GenericOp op : group) {
              IRMapping map;
              Block *own = op.getBody();
              for (auto [i, in] : llvm::enumerate(op.getDpsInputs()))
                map.map(own->getArgument(i),
                        args[inputIndex.lookup(
                            moved.lookup(in) ? moved.lookup(in) : in)]);
              for (Value v : captures.lookup(op))
                map.map(v, moved.lookup(v));
              for (Operation &inner : own->without_terminator())
                b.clone(inner, map);
              for (Value y : own->getTerminator()->getOperands())
                yields.push_back(map.lookupOrDefault(y));
            }
            linalg::YieldOp::create(b, loc, yields);
          });
      unsigned next = 0;
      for (linalg::GenericOp op : group)
        for (Value r : op->getResults())
          moved[r] = merged->getResult(next++);
    }
  }
  // Every old result now has its value on top: replace, then erase the
  // old kernels (last first: none then has a use).
  SmallVector<Operation *> old;
  for (Operation &op : body)
    if (level.count(&op))
      old.push_back(&op);
  for (Operation *op : old)
    for (Value r : op->getResults())
      rewriter.replaceAllUsesWith(r, moved.lookup(r));
  SetVector<Operation *> feeding; // their constants and inits
  for (Operation *op : old) {
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && !level.count(def))
        feeding.insert(def);
    for (Value v : captures.lookup(op))
      feeding.insert(v.getDefiningOp());
  }
  for (Operation *op : llvm::reverse(old))
    rewriter.eraseOp(op);
  for (Operation *def : feeding)
    if (def->use_empty() &&
        (isa<tensor::EmptyOp>(def) || def->hasTrait<OpTrait::ConstantLike>()))
      rewriter.eraseOp(def);
}

struct FuseElementwisePass
    : spmd::impl::SPMDFuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Named ops other than fills become generics, so that upstream fusion
    // (which works on linalg.generic) sees them; contractions stay
    // contractions (spmd-outline-plan makes GEMMs of generic ones too).
    IRRewriter rewriter(module.getContext());
    SmallVector<linalg::LinalgOp> toGeneralize;
    module.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::GenericOp, linalg::FillOp>(op) ||
          !op.hasPureTensorSemantics())
        return;
      toGeneralize.push_back(op);
    });
    for (linalg::LinalgOp op : toGeneralize) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return signalPassFailure();
    }

    fuseChains(module, rewriter);

    RewritePatternSet patterns(module.getContext());
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *operand) {
          return fusesUncapped(operand) && withinCap(operand);
        });
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    patterns.add<DuplicateForFusion>(module.getContext());
    // Not converging within the iteration limit leaves correct (just less
    // fused) IR, so it is not an error.
    (void)applyPatternsGreedily(module, std::move(patterns));

    for (auto fn : module.getOps<func::FuncOp>())
      mergeScalarKernels(fn, rewriter);
  }
};
} // namespace
