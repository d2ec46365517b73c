//===- FuseElementwise.cpp - fuse elementwise/broadcast chains ------------===//

#include "passes/plan/GemmMatch.h"
#include "passes/plan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
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
    // Not converging within the iteration limit leaves correct (just less
    // fused) IR, so it is not an error.
    (void)applyPatternsGreedily(module, std::move(patterns));
  }
};
} // namespace
