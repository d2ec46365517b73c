//===- OutlinePlan.cpp - bufferized entries to plan schedules -------------===//

#include "passes/plan/GemmMatch.h"
#include "passes/plan/Passes.h"

#include "dialects/spmd/SPMDOps.h"
#include "dialects/spmd/SPMDPlanOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDOUTLINEPLAN
#include "passes/plan/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {
struct GemmForm {
  bool transposeA = false, transposeB = false;
  /// How A, B and C collapse into the (batch,) rows, cols view BLAS takes;
  /// empty where the buffer already has that shape.
  SmallVector<ReassociationIndices> views[3];
};

/// Recognizes (batch) matmuls on contiguous buffers of one float element
/// type: named matmuls, and contractions written as linalg.generic whose
/// loops group into a GEMM the buffers' row-major layouts can express
/// without copies (spmd-fold-reshapes turns `linear` on a [b, t, d]
/// activation into a contraction with m = (b, t); attention's grouped heads
/// give several batch loops); see matchGemmLoops.
/// With `stridedInputs`, A and B may be strided views (which the caller
/// copies into buffers of their own first).
std::optional<GemmForm> matchGemm(linalg::LinalgOp op,
                                  bool stridedInputs = false) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  Type elem;
  for (OpOperand &operand : op->getOpOperands()) {
    auto t = dyn_cast<MemRefType>(operand.get().getType());
    if (!t || (!t.getLayout().isIdentity() &&
               !(stridedInputs && operand.getOperandNumber() < 2)))
      return std::nullopt;
    if (elem && t.getElementType() != elem)
      return std::nullopt;
    elem = t.getElementType();
  }
  if (!elem.isF32() && !elem.isF64() && !elem.isF16() && !elem.isBF16())
    return std::nullopt;
  std::optional<spmd::GemmLoops> loops =
      spmd::matchGemmLoops(op.getIndexingMapsArray());
  if (!loops)
    return std::nullopt;
  GemmForm form;
  form.transposeA = loops->transposeA;
  form.transposeB = loops->transposeB;
  // The views: one dim per non-empty run.
  auto viewOf = [&](ArrayRef<SmallVector<unsigned>> runs, Value v,
                    SmallVector<ReassociationIndices> &view) {
    int64_t dim = 0;
    bool trivial = true;
    for (const SmallVector<unsigned> &run : runs) {
      if (run.empty())
        continue;
      ReassociationIndices group;
      for (size_t i = 0; i < run.size(); ++i)
        group.push_back(dim++);
      trivial &= group.size() == 1;
      view.push_back(group);
    }
    if (trivial) {
      view.clear();
      return true;
    }
    // A reshape of rank-dependent dims is not a view the runtime takes.
    return cast<MemRefType>(v.getType()).hasStaticShape();
  };
  if (!viewOf(loops->runs[0], op->getOperand(0), form.views[0]) ||
      !viewOf(loops->runs[1], op->getOperand(1), form.views[1]) ||
      !viewOf(loops->runs[2], op->getOperand(2), form.views[2]))
    return std::nullopt;
  return form;
}

/// Whether `v` is a slice or transpose of a buffer, possibly reshaped or
/// cast afterwards: a part of another buffer, even when its layout is the
/// identity (the leading piece of a bucketed collective's result).
bool isPartOfBuffer(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<memref::SubViewOp, memref::TransposeOp>(def))
      return true;
    if (!isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp>(
            def))
      return false;
    v = def->getOperand(0);
  }
  return false;
}

/// A memref.expand_shape/collapse_shape with identity layouts and a static
/// result, of a whole buffer: the same bytes under another shape.
bool isContiguousReshape(Operation *op) {
  if (!isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(op))
    return false;
  auto source = cast<MemRefType>(op->getOperand(0).getType());
  auto result = cast<MemRefType>(op->getResult(0).getType());
  return source.getLayout().isIdentity() && result.getLayout().isIdentity() &&
         result.hasStaticShape() && !isPartOfBuffer(op->getOperand(0));
}

/// A memref.cast between identity layouts (static <-> dynamic dims): the
/// same buffer, so a view.
bool isPlainCast(Operation *op) {
  auto cast = dyn_cast<memref::CastOp>(op);
  if (!cast)
    return false;
  auto source = dyn_cast<MemRefType>(cast.getSource().getType());
  auto result = dyn_cast<MemRefType>(cast.getType());
  return source && result && source.getLayout().isIdentity() &&
         result.getLayout().isIdentity() && !isPartOfBuffer(cast.getSource());
}

/// A view a step cannot take as a plain buffer (a slice, a transpose, a
/// reshape of a strided view): it moves into the kernels that use it, which
/// then take the viewed buffer.
bool isKernelView(Operation *op) {
  return isa<memref::SubViewOp, memref::TransposeOp>(op) ||
         (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(op) &&
          !isContiguousReshape(op));
}

/// The op before `op` in its block that uses `buffer`, if any. The walk
/// stops at `buffer`'s definition: walking on to the top of the block for
/// every GEMM whose output has no earlier user was O(n^2).
Operation *previousUser(Operation *op, Value buffer) {
  Operation *def = buffer.getDefiningOp();
  for (Operation *prev = op->getPrevNode(); prev && prev != def;
       prev = prev->getPrevNode())
    if (llvm::is_contained(prev->getOperands(), buffer))
      return prev;
  return nullptr;
}

/// An index the runtime computes per rank before a run (from the mesh
/// coordinates or the arguments' shapes), so a kernel can take it as a
/// scalar argument.
bool isRuntimeScalar(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def || !v.getType().isIndex())
    return false;
  if (isa<spmd::LocalOffsetOp, spmd::LocalSizeOp, spmd::PlanChunkSizeOp>(def))
    return true;
  auto dim = dyn_cast<memref::DimOp>(def);
  return dim && dim.getConstantIndex() && isa<BlockArgument>(dim.getSource());
}

bool isZeroFill(Operation *op, Value buffer) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op);
  if (!fill || fill.getOutputs()[0] != buffer)
    return false;
  Value value = fill.getInputs()[0];
  return matchPattern(value, m_AnyZeroFloat()) || matchPattern(value, m_Zero());
}

/// The size of dim `d` of buffer `v` as a value the plan can evaluate, by
/// looking through the views and allocations that define it: a dim of a
/// reshaped, sliced or cast buffer becomes the dim of the buffer beneath or
/// the size the allocation was given (a rank-dependent size). Null when it
/// cannot be resolved without arithmetic.
Value resolveDimOp(OpBuilder &b, memref::DimOp dim);

Value resolveDim(OpBuilder &b, Location loc, Value v, int64_t d) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || d < 0 || d >= type.getRank())
    return {};
  if (!type.isDynamicDim(d))
    return arith::ConstantIndexOp::create(b, loc, type.getDimSize(d));
  Operation *def = v.getDefiningOp();
  if (!def)
    return memref::DimOp::create(b, loc, v, d);
  if (auto alloc = dyn_cast<memref::AllocOp>(def))
    return alloc.getDynamicSizes()[type.getDynamicDimIndex(d)];
  if (auto buffer = dyn_cast<spmd::PlanBufferOp>(def))
    return buffer.getDynamicSizes()[type.getDynamicDimIndex(d)];
  if (auto cast = dyn_cast<memref::CastOp>(def))
    return resolveDim(b, loc, cast.getSource(), d);
  if (auto sub = dyn_cast<memref::SubViewOp>(def)) {
    // The result dim of a (possibly rank-reducing) subview: its size.
    llvm::SmallBitVector dropped = sub.getDroppedDims();
    int64_t r = 0;
    for (auto [i, size] : llvm::enumerate(sub.getMixedSizes())) {
      if (dropped.test(i))
        continue;
      if (r++ != d)
        continue;
      if (auto value = dyn_cast<Value>(size))
        return value.getDefiningOp<memref::DimOp>()
                   ? resolveDimOp(b, value.getDefiningOp<memref::DimOp>())
                   : value;
      return {};
    }
    return {};
  }
  // A reshape keeps a dynamic dim's size when the rest of its group is 1s.
  auto single = [&](ArrayRef<int64_t> shape,
                    ReassociationIndices group) -> std::optional<int64_t> {
    std::optional<int64_t> dynamic;
    for (int64_t i : group) {
      if (ShapedType::isDynamic(shape[i])) {
        if (dynamic)
          return std::nullopt;
        dynamic = i;
      } else if (shape[i] != 1) {
        return std::nullopt;
      }
    }
    return dynamic;
  };
  if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def)) {
    auto group = collapse.getReassociationIndices()[d];
    if (auto s = single(collapse.getSrcType().getShape(), group))
      return resolveDim(b, loc, collapse.getSrc(), *s);
    return {};
  }
  if (auto expand = dyn_cast<memref::ExpandShapeOp>(def)) {
    // The size the expansion was given (spmd-partition's local size of the
    // expanded dim), when the plan evaluates it: the source's dim may be a
    // product the plan cannot compute (a collapsed uneven shard).
    if (auto size = dyn_cast<Value>(expand.getMixedOutputShape()[d])) {
      if (isRuntimeScalar(size))
        return size;
      if (auto dim = size.getDefiningOp<memref::DimOp>())
        if (Value resolved = resolveDimOp(b, dim))
          return resolved;
    }
    for (auto [s, group] : llvm::enumerate(expand.getReassociationIndices()))
      if (llvm::is_contained(group, d)) {
        if (single(type.getShape(), group) == d)
          return resolveDim(b, loc, expand.getSrc(), s);
        return {};
      }
    return {};
  }
  return {};
}

Value resolveDimOp(OpBuilder &b, memref::DimOp dim) {
  std::optional<int64_t> index = dim.getConstantIndex();
  if (!index)
    return {};
  if (isa<BlockArgument>(dim.getSource()))
    return dim.getResult();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(dim);
  return resolveDim(b, dim.getLoc(), dim.getSource(), *index);
}

/// memref.dim of views and allocations, replaced by the sizes they stand
/// for, so that kernels take rank-dependent sizes as scalar arguments.
void resolveDims(Block &body) {
  OpBuilder b(body.getParentOp()->getContext());
  SmallVector<memref::DimOp> dims;
  for (Operation &op : body)
    if (auto dim = dyn_cast<memref::DimOp>(op))
      dims.push_back(dim);
  for (memref::DimOp dim : dims) {
    if (isa<BlockArgument>(dim.getSource()))
      continue;
    // resolveDim gives a value the plan evaluates (a rank-dependent size, a
    // constant, a dim of an argument) or null; it leaves nothing behind
    // when it fails.
    if (Value size = resolveDimOp(b, dim)) {
      dim.getResult().replaceAllUsesWith(size);
      dim.erase();
    }
  }
}

/// A buffer a communication or copy step cannot take as it is: a strided
/// view (x[..., ::2] of RoPE, a slice of a row) or one a kernel must
/// compute.
bool needsContiguousCopy(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type)
    return false;
  Operation *def = v.getDefiningOp();
  return !type.getLayout().isIdentity() || (def && isKernelView(def));
}

/// A buffer of its own for view `v`, allocated before `anchor`: `v`'s
/// shape, its dynamic dims the view's rank-dependent sizes (an uneven
/// shard's rows). Fails with an error at `anchor` when such a size is not
/// one the plan evaluates; `what` says what `anchor` does with the view.
FailureOr<Value> plainBufferFor(IRRewriter &rewriter, Operation *anchor,
                                Value v, StringRef what) {
  auto type = cast<MemRefType>(v.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d))
      continue;
    Value size = resolveDim(rewriter, anchor->getLoc(), v, d);
    // A collapsed uneven shard (rows x 3 elements): the plan has no
    // arithmetic for the product, but a buffer of the source's shape
    // collapsed the same way has it (the plan scales a reshaped view's
    // dims by their static factors).
    if (!size)
      if (auto collapse = v.getDefiningOp<memref::CollapseShapeOp>()) {
        FailureOr<Value> source =
            plainBufferFor(rewriter, anchor, collapse.getSrc(), what);
        if (failed(source))
          return failure();
        return Value(memref::CollapseShapeOp::create(
            rewriter, anchor->getLoc(), *source,
            collapse.getReassociationIndices()));
      }
    if (!size)
      return anchor->emitOpError()
             << what << " a view whose dim " << d
             << " has a size the plan cannot evaluate (" << type << ")";
    sizes.push_back(size);
  }
  return Value(memref::AllocOp::create(
      rewriter, anchor->getLoc(),
      MemRefType::get(type.getShape(), type.getElementType()), sizes));
}

/// A contraction that is a GEMM but for a strided input (a member of a
/// bucketed all_gather's result: its rank-major chunks interleave the
/// members) reads a copy of that input into a buffer of its own: the copy
/// costs one pass over the operand where a kernel running the contraction's
/// loops runs 10-100x slower than BLAS (the cost model prices it a GEMM).
/// Views of rank-dependent size (an uneven shard) stay kernels.
void materializeGemmViews(Block &body, IRRewriter &rewriter) {
  for (Operation &op : llvm::make_early_inc_range(body)) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
    if (!linalgOp || matchGemm(linalgOp) ||
        !matchGemm(linalgOp, /*stridedInputs=*/true) ||
        !llvm::all_of(op.getOperands().take_front(2), [](Value v) {
          return cast<MemRefType>(v.getType()).hasStaticShape();
        }))
      continue;
    for (unsigned i = 0; i < 2; ++i) {
      Value v = op.getOperand(i);
      auto type = cast<MemRefType>(v.getType());
      if (type.getLayout().isIdentity())
        continue;
      rewriter.setInsertionPoint(&op);
      Value buffer = memref::AllocOp::create(
          rewriter, op.getLoc(),
          MemRefType::get(type.getShape(), type.getElementType()));
      linalg::CopyOp::create(rewriter, op.getLoc(), v, buffer);
      op.setOperand(i, buffer);
    }
  }
}

/// Steps read and write whole contiguous buffers: a view operand of a
/// collective (or of the local partial_from_replicated) is copied into a
/// buffer of its own before the step (its input) or copied back after it
/// (its output). The copies are linalg.copy ops, outlined as kernels below.
LogicalResult materializeStepViews(Block &body, IRRewriter &rewriter) {
  SmallVector<Operation *> steps;
  for (Operation &op : body)
    if (isa<spmd::CollectiveOpInterface, spmd::PlanPartialFromReplicatedOp>(op))
      steps.push_back(&op);
  // A result is a whole buffer of its own: a returned view (a member of a
  // bucketed collective) is copied out, as a step's input is.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (OpOperand &operand : ret->getOpOperands()) {
    Value v = operand.get();
    if (!isPartOfBuffer(v))
      continue;
    // Copy from the view itself: the cast bufferization put before the
    // return (strided -> identity layout) is left unused.
    while (auto castOp = v.getDefiningOp<memref::CastOp>())
      v = castOp.getSource();
    rewriter.setInsertionPoint(ret);
    FailureOr<Value> buffer = plainBufferFor(rewriter, ret, v, "returns");
    if (failed(buffer))
      return failure();
    linalg::CopyOp::create(rewriter, ret->getLoc(), v, *buffer);
    operand.set(*buffer);
  }
  for (Operation *op : steps) {
    // Every such step is (input, output); an in-place one names one buffer
    // twice and gets a copy in and a copy out.
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (!needsContiguousCopy(v))
        continue;
      rewriter.setInsertionPoint(op);
      FailureOr<Value> plain =
          plainBufferFor(rewriter, op, v, "reads or writes");
      if (failed(plain))
        return failure();
      Value buffer = *plain;
      if (operand.getOperandNumber() == 0) {
        linalg::CopyOp::create(rewriter, op->getLoc(), v, buffer);
      } else {
        rewriter.setInsertionPointAfter(op);
        linalg::CopyOp::create(rewriter, op->getLoc(), buffer, v);
      }
      operand.set(buffer);
    }
  }
  return success();
}

struct OutlinePlanPass : spmd::impl::SPMDOutlinePlanBase<OutlinePlanPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> entries;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal() &&
          !func->hasAttr(spmd::kPlanKernelAttrName))
        entries.push_back(func);
    for (func::FuncOp func : entries)
      if (failed(outline(module, func)))
        return signalPassFailure();
  }

  LogicalResult outline(ModuleOp module, func::FuncOp func) {
    if (!func.getBody().hasOneBlock())
      return func.emitError() << "entry '" << func.getSymName()
                              << "' must have a single block to become a plan";
    for (Type t : llvm::concat<const Type>(func.getArgumentTypes(),
                                           func.getResultTypes()))
      if (!isa<MemRefType>(t) || !cast<MemRefType>(t).getLayout().isIdentity())
        return func.emitError()
               << "entry '" << func.getSymName()
               << "' must take and return identity-layout memrefs "
                  "(run spmd-bufferize first), got "
               << t;
    Block &body = func.getBody().front();
    IRRewriter rewriter(func.getContext());
    int kernelCount = 0;
    materializeGemmViews(body, rewriter);
    // A zero fill of C right before a GEMM becomes beta = 0 (overwrite C).
    DenseMap<Operation *, int64_t> betas;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
      if (!linalgOp || !matchGemm(linalgOp))
        continue;
      Value a = op.getOperand(0), b = op.getOperand(1), c = op.getOperand(2);
      Operation *prev = previousUser(&op, c);
      betas[&op] = 1;
      if (a != c && b != c && isZeroFill(prev, c)) {
        betas[&op] = 0;
        rewriter.eraseOp(prev);
      }
    }
    resolveDims(body);
    if (failed(materializeStepViews(body, rewriter)))
      return failure();
    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (isa<memref::AllocOp, arith::ConstantOp, memref::DimOp, func::ReturnOp,
              spmd::PlanBufferOp, spmd::PlanKernelOp, spmd::PlanGemmOp,
              spmd::PlanCopyOp, spmd::CollectiveOpInterface,
              spmd::PlanPartialFromReplicatedOp, spmd::PlanChunkSizeOp,
              // Rank-dependent sizes and offsets from spmd-partition
              // (evaluated by the runtime from mesh coordinates).
              spmd::LocalSizeOp, spmd::LocalOffsetOp>(op) ||
          // Reshapes of contiguous buffers are views (no step).
          isContiguousReshape(op) || isKernelView(op) || isPlainCast(op))
        continue;
      rewriter.setInsertionPoint(op);
      // A view cast to a plain buffer (e.g. a returned slice): materialize
      // it with a copy kernel into a buffer of its own.
      if (auto castOp = dyn_cast<memref::CastOp>(op)) {
        // A returned view's cast, now that the result is copied out.
        if (castOp.use_empty()) {
          rewriter.eraseOp(castOp);
          continue;
        }
        auto type = dyn_cast<MemRefType>(castOp.getType());
        if (!type || !type.getLayout().isIdentity() || !type.hasStaticShape())
          return op->emitOpError() << "cannot be placed in a plan schedule";
        Value buffer = memref::AllocOp::create(rewriter, op->getLoc(), type);
        Operation *copy = linalg::CopyOp::create(rewriter, op->getLoc(),
                                                 castOp.getSource(), buffer);
        rewriter.replaceOp(castOp, buffer);
        if (failed(outlineKernel(module, func, cast<linalg::LinalgOp>(copy),
                                 kernelCount)))
          return failure();
        continue;
      }
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        auto isPlain = [](Value v) {
          return cast<MemRefType>(v.getType()).getLayout().isIdentity() &&
                 !(v.getDefiningOp() && isKernelView(v.getDefiningOp()));
        };
        if (isPlain(copy.getSource()) && isPlain(copy.getTarget())) {
          rewriter.replaceOpWithNewOp<spmd::PlanCopyOp>(op, copy.getSource(),
                                                        copy.getTarget());
          continue;
        }
        // A copy from or into a slice is a kernel.
        op = linalg::CopyOp::create(rewriter, op->getLoc(), copy.getSource(),
                                    copy.getTarget());
        rewriter.eraseOp(copy);
      }
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (!linalgOp || !linalgOp.hasPureBufferSemantics())
        return op->emitOpError()
               << "cannot be placed in a plan schedule (expected linalg ops "
                  "on buffers, memref.copy, spmd collectives)";
      if (std::optional<GemmForm> gemm = matchGemm(linalgOp)) {
        // Grouped loops: the GEMM reads contiguous reshaped views.
        auto view = [&](unsigned i) -> Value {
          Value v = op->getOperand(i);
          if (gemm->views[i].empty())
            return v;
          return memref::CollapseShapeOp::create(rewriter, op->getLoc(), v,
                                                 gemm->views[i]);
        };
        Value a = view(0), b = view(1), c = view(2);
        int64_t beta = betas.lookup(op);
        spmd::PlanGemmOp::create(rewriter, op->getLoc(), a, b, c,
                                 gemm->transposeA, gemm->transposeB, beta);
        rewriter.eraseOp(op);
        continue;
      }
      if (failed(outlineKernel(module, func, linalgOp, kernelCount)))
        return failure();
    }
    // Constants only fed kernels, which now hold their own copies.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if ((isa<arith::ConstantOp, memref::DimOp, spmd::PlanChunkSizeOp,
               spmd::LocalSizeOp, spmd::LocalOffsetOp>(op) ||
           isKernelView(&op)) &&
          op.use_empty())
        op.erase();
    return success();
  }

  llvm::StringMap<func::FuncOp> kernelsByKey;

  LogicalResult outlineKernel(ModuleOp module, func::FuncOp func,
                              linalg::LinalgOp op, int &index) {
    // Arguments: the op's buffers, then the rank-dependent index scalars it
    // reads; other scalars must be constants (cloned in).
    llvm::SetVector<Value> buffers, scalars;
    SmallVector<Operation *> constants;
    llvm::SetVector<Value> used;
    for (Value v : op->getOperands())
      used.insert(v);
    getUsedValuesDefinedAbove(op->getRegions(), used);
    // Views that only kernels can take are cloned into the kernel, which
    // takes the viewed buffer.
    llvm::SetVector<Operation *> views;
    for (Value v : used) {
      if (isa<MemRefType>(v.getType())) {
        Value base = v;
        SmallVector<Operation *> chain;
        while (Operation *def = base.getDefiningOp()) {
          if (!isKernelView(def))
            break;
          chain.push_back(def);
          for (Value operand : def->getOperands().drop_front()) {
            if (isRuntimeScalar(operand)) {
              scalars.insert(operand);
              continue;
            }
            Operation *c = operand.getDefiningOp();
            if (!c || !c->hasTrait<OpTrait::ConstantLike>())
              return def->emitOpError()
                     << "has an offset or size that is neither a constant "
                        "nor a rank-dependent size or offset; plan schedules "
                        "hold no scalar compute";
            constants.push_back(c);
          }
          base = def->getOperand(0);
        }
        for (Operation *view : llvm::reverse(chain))
          views.insert(view);
        buffers.insert(base);
        continue;
      }
      if (isRuntimeScalar(v)) {
        scalars.insert(v);
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (!def || !def->hasTrait<OpTrait::ConstantLike>())
        return op->emitOpError()
               << "uses a scalar computed outside it that is neither a "
                  "constant nor a rank-dependent size or offset; plan "
                  "schedules hold no scalar compute";
      constants.push_back(def);
    }
    OpBuilder builder(module.getContext());
    builder.setInsertionPointToEnd(module.getBody());
    std::string name =
        (func.getSymName() + "_kernel_" + std::to_string(index)).str();
    SmallVector<Value> operands(buffers.begin(), buffers.end());
    llvm::append_range(operands, scalars);
    SmallVector<Type> types;
    for (Value v : operands)
      types.push_back(v.getType());
    auto kernel = func::FuncOp::create(builder, op->getLoc(), name,
                                       builder.getFunctionType(types, {}));
    kernel->setAttr(spmd::kPlanKernelAttrName, builder.getUnitAttr());
    Block *entry = kernel.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    IRMapping mapping;
    for (auto [v, arg] : llvm::zip(operands, entry->getArguments()))
      mapping.map(v, arg);
    for (Operation *c : constants)
      if (!mapping.contains(c->getResult(0)))
        builder.clone(*c, mapping);
    for (Operation *view : views)
      if (!mapping.contains(view->getResult(0)))
        builder.clone(*view, mapping);
    builder.clone(*op, mapping);
    func::ReturnOp::create(builder, op->getLoc());

    // Identical kernels (repeated layers) are compiled once: the key is the
    // kernel printed under a placeholder name.
    std::string key;
    {
      llvm::raw_string_ostream os(key);
      kernel.setSymName("k");
      kernel->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
    }
    if (func::FuncOp existing = kernelsByKey.lookup(key)) {
      kernel.erase();
      kernel = existing;
    } else {
      kernel.setSymName(name);
      kernelsByKey[key] = kernel;
      ++index;
    }

    OpBuilder at(op);
    spmd::PlanKernelOp::create(at, op->getLoc(),
                               FlatSymbolRefAttr::get(kernel.getSymNameAttr()),
                               operands);
    op->erase();
    return success();
  }
};
} // namespace
