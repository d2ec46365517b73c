//===- InputCheck.cpp - Parsed IR that upstream MLIR's passes crash on ----===//

#include "passes/InputCheck.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/ShapedOpInterfaces.h"

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
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

std::unique_ptr<Pass> spmd::createSPMDCheckInputPass() {
  return std::make_unique<CheckInputPass>();
}
