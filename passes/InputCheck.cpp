//===- InputCheck.cpp - Parsed IR that upstream MLIR's passes crash on ----===//

#include "passes/InputCheck.h"

#include "core/Checked.h"
#include "dialects/spmd/SPMDDialect.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ShapedOpInterfaces.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace {

/// The error for a dim op whose constant index is out of range, if it is.
LogicalResult checkDimOp(ShapedDimOpInterface dimOp) {
  auto type = dyn_cast<ShapedType>(dimOp.getShapedValue().getType());
  if (!type || !type.hasRank())
    return success();
  std::optional<int64_t> index = getConstantIntValue(dimOp.getDimension());
  if (!index || (*index >= 0 && *index < type.getRank()))
    return success();
  return dimOp->emitOpError()
         << "index " << *index << " is out of range for a rank-"
         << type.getRank() << " "
         << (isa<MemRefType>(type) ? "memref" : "tensor");
}

/// Whether `type` is a ranked tensor whose static dims alone (dynamic dims
/// count as 1) hold more bytes than int64 counts.
bool overflowsBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return false;
  SmallVector<int64_t> dims;
  for (int64_t d : tensor.getShape())
    if (!ShapedType::isDynamic(d))
      dims.push_back(d);
  // An element type without a byte size counts one byte: its count alone.
  return !spmd::checkedProduct(
      dims, spmd::elementBytes(tensor.getElementType()).value_or(1));
}

/// The error for an op with a result, region argument or (a function)
/// argument or result type that is a tensor too large to address: every
/// size, offset and byte count downstream (shard sizes, buffers, the memory
/// check, copies) is int64.
LogicalResult checkTensorSizes(Operation *op) {
  auto fail = [&](StringRef what, unsigned index, Type type) {
    return op->emitOpError() << what << " #" << index << " has type " << type
                             << ", whose byte size overflows int64";
  };
  for (OpResult result : op->getResults())
    if (overflowsBytes(result.getType()))
      return fail("result", result.getResultNumber(), result.getType());
  if (auto func = dyn_cast<FunctionOpInterface>(op)) {
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
      if (overflowsBytes(type))
        return fail("argument", i, type);
    for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
      if (overflowsBytes(type))
        return fail("function result", i, type);
  }
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (BlockArgument arg : block.getArguments())
        if (overflowsBytes(arg.getType()))
          return fail("region argument", arg.getArgNumber(), arg.getType());
  return success();
}

/// The error for a reshape whose reassociation holds an index past 32 bits:
/// its verifier reads them as 32-bit affine dims ([[4294967296, 1]] as
/// [[0, 1]]), and every reader of the 64-bit indices (the propagation rule,
/// canonicalization) then indexes the shape with it.
LogicalResult checkReassociation(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (name != "tensor.collapse_shape" && name != "tensor.expand_shape" &&
      name != "memref.collapse_shape" && name != "memref.expand_shape")
    return success();
  auto groups = dyn_cast_or_null<ArrayAttr>(op->getAttr("reassociation"));
  if (!groups)
    return success();
  for (Attribute group : groups)
    if (auto indices = dyn_cast<ArrayAttr>(group))
      for (Attribute index : indices)
        if (auto i = dyn_cast<IntegerAttr>(index);
            i && i.getValue().getSignificantBits() > 32)
          return op->emitOpError()
                 << "reassociation index "
                 << llvm::toString(i.getValue(), 10, /*Signed=*/true)
                 << " does not fit in 32 bits (the verifier reads it as a "
                    "32-bit affine dim)";
  return success();
}

/// The error for a tensor.pad whose static low or high list holds more
/// dynamic markers (-2^63, ShapedType::kDynamic) than it has operands: its
/// verifier does not count them, and printing or folding it reads past its
/// operands. The text scan (core/ParseHazards.h) rejects the marker in
/// text; this catches it in bytecode.
LogicalResult checkPadMarkers(tensor::PadOp pad) {
  auto check = [&](ArrayRef<int64_t> list, size_t operands,
                   StringRef what) -> LogicalResult {
    size_t markers = llvm::count_if(list, ShapedType::isDynamic);
    if (markers == operands)
      return success();
    return pad.emitOpError() << what << " has " << markers
                             << " dynamic entries (-9223372036854775808) but "
                             << operands << " operands";
  };
  if (failed(check(pad.getStaticLow(), pad.getLow().size(), "low")))
    return failure();
  return check(pad.getStaticHigh(), pad.getHigh().size(), "high");
}

/// The error for a tensor.concat with a negative dim: its verifier checks
/// only `dim < rank` and then indexes the shapes with it (a segfault).
LogicalResult checkConcatDim(Operation *op) {
  if (op->getName().getStringRef() != "tensor.concat")
    return success();
  auto dim = dyn_cast_or_null<IntegerAttr>(op->getAttr("dim"));
  if (!dim || !dim.getValue().isNegative())
    return success();
  return op->emitOpError() << "dim "
                           << llvm::toString(dim.getValue(), 10,
                                             /*Signed=*/true)
                           << " must not be negative";
}

/// The error for a tensor.from_elements whose result type has more
/// elements than the op has operands: its verifier builds a list of that
/// many types before comparing (past 2^32: "SmallVector unable to grow").
LogicalResult checkFromElementsCount(Operation *op) {
  if (op->getName().getStringRef() != "tensor.from_elements" ||
      op->getNumResults() != 1)
    return success();
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape())
    return success();
  std::optional<int64_t> elements = spmd::checkedProduct(type.getShape(), 1);
  if (elements && *elements <= static_cast<int64_t>(op->getNumOperands()))
    return success();
  return op->emitOpError() << "result type " << type
                           << " has more elements than the op's "
                           << op->getNumOperands() << " operands";
}

/// The error for a slice (tensor.extract_slice, tensor.insert_slice,
/// memref.subview) whose static offset, size and stride reach an index
/// outside its static dim: upstream verifies only some of these (not a
/// negative stride), and the kernel then reads or writes out of bounds.
LogicalResult checkSliceBounds(Operation *op) {
  ShapedType whole;
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    whole = slice.getSourceType();
  else if (auto slice = dyn_cast<tensor::InsertSliceOp>(op))
    whole = slice.getDestType();
  else if (auto view = dyn_cast<memref::SubViewOp>(op))
    whole = view.getSourceType();
  else
    return success();
  auto slice = cast<OffsetSizeAndStrideOpInterface>(op);
  ArrayRef<int64_t> offsets = slice.getStaticOffsets();
  ArrayRef<int64_t> sizes = slice.getStaticSizes();
  ArrayRef<int64_t> strides = slice.getStaticStrides();
  if (!whole.hasRank() || offsets.size() != sizes.size() ||
      strides.size() != sizes.size() ||
      static_cast<int64_t>(sizes.size()) != whole.getRank())
    return success(); // the verifier's to reject
  for (auto [d, dim] : llvm::enumerate(whole.getShape())) {
    int64_t offset = offsets[d], size = sizes[d], stride = strides[d];
    if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(offset) ||
        ShapedType::isDynamic(size) || ShapedType::isDynamic(stride) ||
        size <= 0)
      continue;
    // The last index, offset + (size - 1) * stride, in checked arithmetic.
    std::optional<int64_t> step = spmd::checkedMul(size - 1, stride);
    std::optional<int64_t> last =
        step ? spmd::checkedAdd(offset, *step) : std::nullopt;
    auto outside = [&](int64_t i) { return i < 0 || i >= dim; };
    if (!outside(offset) && last && !outside(*last))
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << "slice of dim " << d << " (offset " << offset
                              << ", size " << size << ", stride " << stride
                              << ") reaches ";
    if (outside(offset))
      diag << "index " << offset;
    else if (last)
      diag << "index " << *last;
    else
      diag << "an index past int64";
    return diag << ", outside [0, " << dim << ")";
  }
  return success();
}

struct CheckInputPass : public PassWrapper<CheckInputPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckInputPass)

  StringRef getName() const override { return "SPMDCheckInput"; }
  StringRef getArgument() const override { return "spmd-check-input"; }
  StringRef getDescription() const override {
    return "Reject IR that upstream passes crash on (passes/InputCheck.h)";
  }
  explicit CheckInputPass(bool verifyFirst) : verifyFirst(verifyFirst) {}

  void runOnOperation() override {
    if (failed(verifyFirst ? spmd::verifyInput(getOperation())
                           : spmd::checkInputHazards(getOperation())))
      signalPassFailure();
    markAllAnalysesPreserved();
  }

  bool verifyFirst;
};

} // namespace

LogicalResult spmd::checkInputHazards(Operation *root) {
  WalkResult result = root->walk([](Operation *op) {
    if (auto dimOp = dyn_cast<ShapedDimOpInterface>(op))
      if (failed(checkDimOp(dimOp)))
        return WalkResult::interrupt();
    if (auto pad = dyn_cast<tensor::PadOp>(op))
      if (failed(checkPadMarkers(pad)))
        return WalkResult::interrupt();
    if (failed(checkReassociation(op)) || failed(checkTensorSizes(op)) ||
        failed(checkSliceBounds(op)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult spmd::checkVerifierHazards(Operation *root) {
  WalkResult result = root->walk([](Operation *op) {
    if (failed(checkConcatDim(op)) || failed(checkFromElementsCount(op)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult spmd::verifyInput(Operation *root) {
  if (failed(checkVerifierHazards(root)) || failed(verify(root)))
    return failure();
  return checkInputHazards(root);
}

std::unique_ptr<Pass> spmd::createSPMDCheckInputPass(bool verifyFirst) {
  return std::make_unique<CheckInputPass>(verifyFirst);
}
