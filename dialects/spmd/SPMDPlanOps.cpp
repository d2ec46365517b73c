//===- SPMDPlanOps.cpp - spmd plan steps ----------------------------------===//

#include "dialects/spmd/SPMDPlanOps.h"

#include "core/Checked.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace spmd;

#define GET_OP_CLASSES
#include "dialects/spmd/SPMDPlanOps.cpp.inc"

LogicalResult spmd::verifyPlanAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kPlanVersionAttrName) {
    if (!isa<ModuleOp>(op) || !isa<IntegerAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be an integer on a builtin.module";
    return success();
  }
  if (name == kPlanKernelAttrName) {
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func || !isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be a unit attribute on a func.func";
    bool scalars = false;
    for (Type type : func.getArgumentTypes()) {
      if (isa<IndexType>(type)) {
        scalars = true;
        continue;
      }
      if (!isa<MemRefType>(type))
        return op->emitError() << "kernel takes an argument of type " << type
                               << " (memrefs, then index scalars)";
      if (scalars)
        return op->emitError()
               << "kernel takes a memref after an index scalar (memrefs, "
                  "then index scalars)";
    }
    if (func.getNumResults() != 0)
      return op->emitError() << "kernel must not return values";
    return success();
  }
  if (name == kPlanArenaAttrName) {
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !bytes)
      return op->emitError()
             << "'" << name << "' must be an integer on a func.func";
    if (bytes.getInt() < 0)
      return op->emitError() << "'" << name << "' must not be negative";
    return success();
  }
  return op->emitError() << "unknown spmd attribute '" << name << "'";
}

/// Bytes of a memref with static shape; nullopt when dynamic, when the
/// size overflows int64 or when its elements have no byte size.
static std::optional<int64_t> staticBytes(MemRefType type) {
  std::optional<int64_t> element = elementBytes(type.getElementType());
  if (!type.hasStaticShape() || !element)
    return std::nullopt;
  return checkedProduct(type.getShape(), *element);
}

LogicalResult PlanBufferOp::verify() {
  MemRefType type = getType();
  if (getDynamicSizes().size() != static_cast<size_t>(type.getNumDynamicDims()))
    return emitOpError() << "has " << getDynamicSizes().size()
                         << " dynamic sizes for " << type.getNumDynamicDims()
                         << " dynamic dims";
  if (!type.getLayout().isIdentity())
    return emitOpError() << "must have the identity layout";
  // I64Attr getters are unsigned: read the signed values.
  int64_t offset = getOffsetAttr().getInt(), bytes = getBytesAttr().getInt();
  if (offset < 0 || bytes < 0)
    return emitOpError() << "offset and bytes must not be negative";
  if (!elementBytes(type.getElementType()))
    return emitOpError() << "holds " << type.getElementType()
                         << " elements: a plan holds integer, float, index "
                            "and complex elements only";
  std::optional<int64_t> need = staticBytes(type);
  if (type.hasStaticShape() && !need)
    return emitOpError() << "has a byte size that overflows int64";
  if (need && *need > bytes)
    return emitOpError() << "reserves " << bytes << " bytes for a " << type
                         << " of " << *need << " bytes";
  if (auto func = (*this)->getParentOfType<func::FuncOp>()) {
    if (auto arena = func->getAttrOfType<IntegerAttr>(kPlanArenaAttrName)) {
      std::optional<int64_t> end = checkedAdd(offset, bytes);
      if (!end)
        return emitOpError()
               << "ends beyond the arena of " << arena.getInt()
               << " bytes (offset " << offset << ", " << bytes << " bytes)";
      if (*end > arena.getInt())
        return emitOpError()
               << "ends at byte " << *end << " beyond the arena of "
               << arena.getInt() << " bytes";
    }
  }
  return success();
}

LogicalResult PlanKernelOp::verify() {
  // The runtime's calling convention: buffers first, then scalars.
  bool scalars = false;
  for (Type t : getOperands().getTypes()) {
    if (isa<IndexType>(t))
      scalars = true;
    else if (scalars)
      return emitOpError() << "takes its buffers before its index scalars";
  }
  return success();
}

LogicalResult PlanKernelOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto callee =
      tables.lookupNearestSymbolFrom<func::FuncOp>(*this, getCalleeAttr());
  if (!callee)
    return emitOpError() << "names unknown kernel " << getCalleeAttr();
  if (!callee->hasAttr(kPlanKernelAttrName))
    return emitOpError() << "callee " << getCalleeAttr() << " is not marked '"
                         << kPlanKernelAttrName << "'";
  if (!llvm::equal(callee.getArgumentTypes(), getOperands().getTypes()))
    return emitOpError() << "operand types do not match kernel "
                         << getCalleeAttr() << " of type "
                         << callee.getFunctionType();
  return success();
}

LogicalResult PlanGemmOp::verify() {
  auto a = cast<MemRefType>(getA().getType());
  auto b = cast<MemRefType>(getB().getType());
  auto c = cast<MemRefType>(getC().getType());
  int64_t rank = c.getRank();
  if ((rank != 2 && rank != 3) || a.getRank() != rank || b.getRank() != rank)
    return emitOpError() << "needs three 2-D or three 3-D (batched) operands";
  if (a.getElementType() != b.getElementType() ||
      a.getElementType() != c.getElementType())
    return emitOpError() << "needs one element type for A, B and C";
  if (!a.getElementType().isF32() && !a.getElementType().isF64() &&
      !a.getElementType().isF16() && !a.getElementType().isBF16())
    return emitOpError() << "supports f32, f64, f16 and bf16, not "
                         << a.getElementType();
  for (MemRefType t : {a, b, c})
    if (!t.getLayout().isIdentity())
      return emitOpError() << "needs contiguous row-major operands, got " << t;
  if (getBeta() != 0 && getBeta() != 1)
    return emitOpError() << "beta must be 0 or 1";
  int64_t o = rank - 2;
  auto dim = [](MemRefType t, int64_t d, bool trans, int64_t o) {
    return t.getDimSize(o + (trans ? 1 - d : d));
  };
  auto mismatch = [](int64_t x, int64_t y) {
    return !ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y;
  };
  int64_t m = dim(a, 0, getTransposeA(), o), ka = dim(a, 1, getTransposeA(), o);
  int64_t kb = dim(b, 0, getTransposeB(), o), n = dim(b, 1, getTransposeB(), o);
  if (mismatch(ka, kb) || mismatch(m, c.getDimSize(o)) ||
      mismatch(n, c.getDimSize(o + 1)))
    return emitOpError() << "has mismatched shapes: op(A) is " << m << "x" << ka
                         << ", op(B) is " << kb << "x" << n << ", C is "
                         << c.getDimSize(o) << "x" << c.getDimSize(o + 1);
  if (rank == 3 && (mismatch(a.getDimSize(0), c.getDimSize(0)) ||
                    mismatch(b.getDimSize(0), c.getDimSize(0))))
    return emitOpError() << "has mismatched batch sizes";
  return success();
}

LogicalResult PlanCopyOp::verify() {
  auto s = cast<MemRefType>(getSource().getType());
  auto t = cast<MemRefType>(getTarget().getType());
  if (s.getElementType() != t.getElementType() || s.getRank() != t.getRank())
    return emitOpError() << "copies " << s << " into " << t;
  for (auto [x, y] : llvm::zip(s.getShape(), t.getShape()))
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return emitOpError() << "copies " << s << " into " << t;
  return success();
}

namespace {
/// Mesh and group checks shared by the plan collectives.
LogicalResult verifyPlanGroup(Operation *op, FlatSymbolRefAttr name,
                              ArrayAttr axisNames, Value input, Value output,
                              ArrayRef<int64_t> dims,
                              SymbolTableCollection &tables) {
  if (failed(verifyMeshGroup(op, name, axisNames, tables)))
    return failure();
  auto in = cast<MemRefType>(input.getType());
  auto out = cast<MemRefType>(output.getType());
  if (in.getElementType() != out.getElementType() ||
      in.getRank() != out.getRank())
    return op->emitOpError() << "needs input and output of one element type "
                                "and rank, got "
                             << in << " and " << out;
  for (int64_t d : dims)
    if (d < 0 || d >= in.getRank())
      return op->emitOpError()
             << "dim " << d << " is out of range for rank " << in.getRank();
  return success();
}

SmallVector<int64_t> axisIndicesOf(Operation *op, FlatSymbolRefAttr name,
                                   ArrayAttr axisNames) {
  return meshAxisIndices(SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, name),
                         axisNames);
}
} // namespace

bool PlanShardOp::communicates() { return false; }

#define PLAN_COLLECTIVE_COMMON(Op)                                             \
  SmallVector<int64_t> Op::getMeshAxisIndices() {                              \
    return axisIndicesOf(*this, getMeshAttr(), getMeshAxes());                 \
  }

PLAN_COLLECTIVE_COMMON(PlanAllGatherOp)
PLAN_COLLECTIVE_COMMON(PlanAllReduceOp)
PLAN_COLLECTIVE_COMMON(PlanReduceScatterOp)
PLAN_COLLECTIVE_COMMON(PlanAllToAllOp)
PLAN_COLLECTIVE_COMMON(PlanShardOp)
PLAN_COLLECTIVE_COMMON(PlanPartialFromReplicatedOp)

LogicalResult PlanAllGatherOp::verifySymbolUses(SymbolTableCollection &t) {
  return verifyPlanGroup(*this, getMeshAttr(), getMeshAxes(), getInput(),
                         getOutput(), {getDimAttr().getInt()}, t);
}
LogicalResult PlanAllReduceOp::verifySymbolUses(SymbolTableCollection &t) {
  if (failed(verifyPlanGroup(*this, getMeshAttr(), getMeshAxes(), getInput(),
                             getOutput(), {}, t)))
    return failure();
  if (getInput().getType() != getOutput().getType())
    return emitOpError() << "needs input and output of one type";
  return success();
}
LogicalResult PlanReduceScatterOp::verifySymbolUses(SymbolTableCollection &t) {
  return verifyPlanGroup(*this, getMeshAttr(), getMeshAxes(), getInput(),
                         getOutput(), {getDimAttr().getInt()}, t);
}
LogicalResult PlanAllToAllOp::verifySymbolUses(SymbolTableCollection &t) {
  return verifyPlanGroup(
      *this, getMeshAttr(), getMeshAxes(), getInput(), getOutput(),
      {getSplitDimAttr().getInt(), getConcatDimAttr().getInt()}, t);
}
LogicalResult
PlanPartialFromReplicatedOp::verifySymbolUses(SymbolTableCollection &t) {
  if (failed(verifyPlanGroup(*this, getMeshAttr(), getMeshAxes(), getInput(),
                             getOutput(), {}, t)))
    return failure();
  if (getInput().getType() != getOutput().getType())
    return emitOpError() << "needs input and output of one type";
  return success();
}

LogicalResult PlanShardOp::verifySymbolUses(SymbolTableCollection &t) {
  return verifyPlanGroup(*this, getMeshAttr(), getMeshAxes(), getInput(),
                         getOutput(), {getDimAttr().getInt()}, t);
}

SmallVector<int64_t> PlanChunkSizeOp::getMeshAxisIndices() {
  return axisIndicesOf(*this, getMeshAttr(), getMeshAxes());
}

LogicalResult PlanChunkSizeOp::verifySymbolUses(SymbolTableCollection &t) {
  if (failed(verifyMeshGroup(*this, getMeshAttr(), getMeshAxes(), t)))
    return failure();
  if (getSizeAttr().getInt() < 0)
    return emitOpError() << "size must not be negative";
  return success();
}
