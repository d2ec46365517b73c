//===- CudaIndexExpr.cpp - CUDA emitter: index expressions ----------------===//
//
// Index arithmetic folded at print time, and memref views (subview,
// transpose, expand/collapse_shape, cast) folded into offsets and strides on
// the kernel's base pointers.
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/CudaEmitterInternal.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;

namespace spmd {
namespace cudagen {
namespace detail {

IExpr add(const IExpr &a, const IExpr &b) {
  if (a.isConst && b.isConst)
    return IExpr::constant(a.value + b.value);
  if (a.isConst && a.value == 0)
    return b;
  if (b.isConst && b.value == 0)
    return a;
  return IExpr::symbol(a.str() + " + " + b.str());
}
IExpr mul(const IExpr &a, const IExpr &b) {
  if (a.isConst && b.isConst)
    return IExpr::constant(a.value * b.value);
  if ((a.isConst && a.value == 0) || (b.isConst && b.value == 0))
    return IExpr::constant(0);
  if (a.isConst && a.value == 1)
    return b;
  if (b.isConst && b.value == 1)
    return a;
  return IExpr::symbol(a.operand() + " * " + b.operand());
}

Product mulProduct(const Product &a, const Product &b) {
  Product p;
  p.valid = a.valid && b.valid;
  p.constant = a.constant * b.constant;
  p.factors = a.factors;
  p.factors.insert(p.factors.end(), b.factors.begin(), b.factors.end());
  return p;
}

FailureOr<IExpr> KernelEmitter::indexValue(Operation *user, Value v) {
  APInt cst;
  if (matchPattern(v, m_ConstantInt(&cst)))
    return IExpr::constant(cst.getSExtValue());
  if (auto arg = dyn_cast<BlockArgument>(v);
      arg && arg.getOwner()->getParentOp() == func && v.getType().isIndex())
    return IExpr::symbol(names.lookup(v));
  fail(user, "an index operand is neither a constant nor an index argument "
             "of the kernel");
  return failure();
}

FailureOr<Size> KernelEmitter::sizeValue(Operation *user, OpFoldResult ofr) {
  Size s;
  if (auto attr = dyn_cast<Attribute>(ofr)) {
    int64_t c = cast<IntegerAttr>(attr).getInt();
    s.expr = IExpr::constant(c);
    s.product.constant = c;
    return s;
  }
  Value v = cast<Value>(ofr);
  FailureOr<IExpr> e = indexValue(user, v);
  if (failed(e))
    return failure();
  s.expr = *e;
  if (e->isConst)
    s.product.constant = e->value;
  else
    s.product.factors.push_back({cast<BlockArgument>(v).getArgNumber(), -1});
  return s;
}

LogicalResult KernelEmitter::buildView(Operation *op) {
  auto sourceView = [&](Value v) -> const View * {
    auto it = views.find(v);
    if (it == views.end()) {
      fail(op, "its source is not a kernel argument or a view of one");
      return nullptr;
    }
    return &it->second;
  };
  if (auto sub = dyn_cast<memref::SubViewOp>(op)) {
    const View *src = sourceView(sub.getSource());
    if (!src)
      return failure();
    View v;
    v.arg = src->arg;
    v.offset = src->offset;
    SmallVector<OpFoldResult> offsets = sub.getMixedOffsets(),
                              sizes = sub.getMixedSizes(),
                              strides = sub.getMixedStrides();
    llvm::SmallBitVector dropped = sub.getDroppedDims();
    for (unsigned d = 0; d < offsets.size(); ++d) {
      FailureOr<Size> o = sizeValue(op, offsets[d]);
      FailureOr<Size> z = sizeValue(op, sizes[d]);
      FailureOr<Size> s = sizeValue(op, strides[d]);
      if (failed(o) || failed(z) || failed(s))
        return failure();
      v.offset = add(v.offset, mul(o->expr, src->strides[d]));
      if (dropped.test(d))
        continue;
      v.sizes.push_back(*z);
      v.strides.push_back(mul(s->expr, src->strides[d]));
    }
    views[sub.getResult()] = v;
    return success();
  }
  if (auto tr = dyn_cast<memref::TransposeOp>(op)) {
    const View *src = sourceView(tr.getIn());
    if (!src)
      return failure();
    View v;
    v.arg = src->arg;
    v.offset = src->offset;
    AffineMap perm = tr.getPermutation();
    for (unsigned k = 0; k < perm.getNumResults(); ++k) {
      unsigned d = perm.getDimPosition(k);
      v.sizes.push_back(src->sizes[d]);
      v.strides.push_back(src->strides[d]);
    }
    views[tr.getResult()] = v;
    return success();
  }
  if (auto ex = dyn_cast<memref::ExpandShapeOp>(op)) {
    const View *src = sourceView(ex.getSrc());
    if (!src)
      return failure();
    SmallVector<OpFoldResult> shape = ex.getMixedOutputShape();
    View v;
    v.arg = src->arg;
    v.offset = src->offset;
    v.sizes.resize(shape.size());
    v.strides.resize(shape.size());
    for (auto [srcDim, group] : llvm::enumerate(ex.getReassociationIndices())) {
      IExpr stride = src->strides[srcDim];
      for (int64_t d : llvm::reverse(group)) {
        FailureOr<Size> s = sizeValue(op, shape[d]);
        if (failed(s))
          return failure();
        // A single-dim group keeps the source's size (it may be dynamic).
        v.sizes[d] = group.size() == 1 ? src->sizes[srcDim] : *s;
        v.strides[d] = stride;
        stride = mul(stride, v.sizes[d].expr);
      }
    }
    views[ex.getResult()] = v;
    return success();
  }
  if (auto co = dyn_cast<memref::CollapseShapeOp>(op)) {
    const View *src = sourceView(co.getSrc());
    if (!src)
      return failure();
    View v;
    v.arg = src->arg;
    v.offset = src->offset;
    // The verifier guarantees each group is contiguous: its stride is the
    // innermost member's (or 1 for an empty group of unit dims).
    for (ReassociationIndices group : co.getReassociationIndices()) {
      Size size;
      size.expr = IExpr::constant(1);
      for (int64_t d : group) {
        size.expr = mul(size.expr, src->sizes[d].expr);
        size.product = mulProduct(size.product, src->sizes[d].product);
      }
      v.sizes.push_back(size);
      v.strides.push_back(group.empty() ? IExpr::constant(1)
                                        : src->strides[group.back()]);
    }
    views[co.getResult()] = v;
    return success();
  }
  if (auto c = dyn_cast<memref::CastOp>(op)) {
    const View *src = sourceView(c.getSource());
    if (!src)
      return failure();
    View v = *src;
    auto type = cast<MemRefType>(c.getType());
    for (unsigned d = 0; d < type.getRank(); ++d)
      if (!type.isDynamicDim(d)) {
        v.sizes[d].expr = IExpr::constant(type.getDimSize(d));
        v.sizes[d].product = Product();
        v.sizes[d].product.constant = type.getDimSize(d);
      }
    views[c.getResult()] = v;
    return success();
  }
  return fail(op, "not a view the code generator folds (subview, transpose, "
                  "expand_shape, collapse_shape, cast)");
}

FailureOr<std::string> KernelEmitter::affine(Operation *op, AffineExpr e,
                                             ArrayRef<std::string> loopVars) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return loopVars[d.getPosition()];
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return IExpr::constant(c.getValue()).str();
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin) {
    fail(op, "an indexing map uses a symbol");
    return failure();
  }
  FailureOr<std::string> l = affine(op, bin.getLHS(), loopVars);
  FailureOr<std::string> r = affine(op, bin.getRHS(), loopVars);
  if (failed(l) || failed(r))
    return failure();
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return "(" + *l + " + " + *r + ")";
  case AffineExprKind::Mul:
    return "(" + *l + " * " + *r + ")";
  case AffineExprKind::FloorDiv:
    return "spmdgFloorDiv(" + *l + ", " + *r + ")";
  case AffineExprKind::CeilDiv:
    return "spmdgCeilDiv(" + *l + ", " + *r + ")";
  case AffineExprKind::Mod:
    return "spmdgMod(" + *l + ", " + *r + ")";
  default:
    fail(op, "unknown affine expression kind");
    return failure();
  }
}

FailureOr<IExpr> KernelEmitter::access(linalg::LinalgOp op, OpOperand &operand,
                                       ArrayRef<std::string> loopVars) {
  const View &v = views.find(operand.get())->second;
  AffineMap map = op.getMatchingIndexingMap(&operand);
  IExpr off = v.offset;
  for (unsigned k = 0; k < map.getNumResults(); ++k) {
    FailureOr<std::string> e = affine(op, map.getResult(k), loopVars);
    if (failed(e))
      return failure();
    off = add(off, mul(IExpr::symbol(*e), v.strides[k]));
  }
  return off;
}

} // namespace detail
} // namespace cudagen
} // namespace spmd
