//===- InputCheck.cpp - Parsed IR that upstream MLIR's passes crash on ----===//

#include "passes/InputCheck.h"

#include "core/Checked.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ShapedOpInterfaces.h"
#include "llvm/ADT/SmallVector.h"

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

/// Bytes of one element of `type` (a complex number counts twice its part;
/// an element type without a bit width, one byte: its count alone).
int64_t elementBytes(Type type) {
  if (auto complex = dyn_cast<ComplexType>(type))
    return 2 * elementBytes(complex.getElementType());
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return (static_cast<int64_t>(type.getIntOrFloatBitWidth()) + 7) / 8;
  return 1;
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
  return !spmd::checkedProduct(dims, elementBytes(tensor.getElementType()));
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

struct CheckInputPass : public PassWrapper<CheckInputPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckInputPass)

  StringRef getName() const override { return "SPMDCheckInput"; }
  StringRef getArgument() const override { return "spmd-check-input"; }
  StringRef getDescription() const override {
    return "Reject IR that upstream passes crash on (passes/InputCheck.h)";
  }
  void runOnOperation() override {
    if (failed(spmd::checkInputHazards(getOperation())))
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace

LogicalResult spmd::checkInputHazards(Operation *root) {
  WalkResult result = root->walk([](Operation *op) {
    if (auto dimOp = dyn_cast<ShapedDimOpInterface>(op))
      if (failed(checkDimOp(dimOp)))
        return WalkResult::interrupt();
    if (failed(checkTensorSizes(op)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

std::unique_ptr<Pass> spmd::createSPMDCheckInputPass() {
  return std::make_unique<CheckInputPass>();
}
