//===- Bufferize.cpp - one-shot bufferization with spmd collectives -------===//

#include "passes/Passes.h"

#include "dialects/spmd/SPMDPlanOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDBUFFERIZE
#include "passes/Passes.h.inc"
} // namespace spmd

using namespace mlir;
using namespace mlir::bufferization;

namespace {
/// Builds the plan op of collective `op` reading `in` and writing `out`.
Operation *buildPlanCollective(RewriterBase &b, Operation *op, Value in,
                               Value out) {
  Location loc = op->getLoc();
  if (auto c = dyn_cast<spmd::AllGatherOp>(op))
    return spmd::PlanAllGatherOp::create(b, loc, in, out, c.getMeshAttr(),
                                         c.getMeshAxes(), c.getDimAttr());
  if (auto c = dyn_cast<spmd::AllReduceOp>(op))
    return spmd::PlanAllReduceOp::create(b, loc, in, out, c.getMeshAttr(),
                                         c.getMeshAxes(), c.getKindAttr());
  if (auto c = dyn_cast<spmd::ReduceScatterOp>(op))
    return spmd::PlanReduceScatterOp::create(b, loc, in, out, c.getMeshAttr(),
                                             c.getMeshAxes(), c.getDimAttr(),
                                             c.getKindAttr());
  if (auto c = dyn_cast<spmd::AllToAllOp>(op))
    return spmd::PlanAllToAllOp::create(b, loc, in, out, c.getMeshAttr(),
                                        c.getMeshAxes(), c.getSplitDimAttr(),
                                        c.getConcatDimAttr());
  auto c = cast<spmd::ShardOp>(op);
  return spmd::PlanShardOp::create(b, loc, in, out, c.getMeshAttr(),
                                   c.getMeshAxes(), c.getDimAttr());
}

/// A collective reads its input and writes a fresh buffer: it never
/// aliases, so bufferization never needs to copy around it.
template <typename OpTy>
struct CollectiveBufferizeModel
    : public BufferizableOpInterface::ExternalModel<
          CollectiveBufferizeModel<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    Value input = op->getOperand(0);
    FailureOr<Value> in = getBuffer(rewriter, input, options, state);
    if (failed(in))
      return failure();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    rewriter.setInsertionPoint(op);
    SmallVector<Value> dynamicSizes;
    for (int64_t d = 0; d < resultType.getRank(); ++d) {
      if (!resultType.isDynamicDim(d))
        continue;
      // Only an all_reduce keeps its input's (dynamic) shape; other results'
      // rank-dependent sizes need the mesh coordinates at run time.
      if (!isa<spmd::AllReduceOp>(op))
        return op->emitOpError()
               << "with a dynamic result dim is not supported by "
                  "spmd-bufferize yet";
      dynamicSizes.push_back(
          memref::DimOp::create(rewriter, op->getLoc(), *in, d));
    }
    auto memType =
        MemRefType::get(resultType.getShape(), resultType.getElementType());
    Value out = memref::AllocOp::create(rewriter, op->getLoc(), memType,
                                        dynamicSizes);
    buildPlanCollective(rewriter, op, *in, out);
    replaceOpWithBufferizedValues(rewriter, op, out);
    return success();
  }
};

struct BufferizePass : spmd::impl::SPMDBufferizeBase<BufferizePass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    SPMDBufferizeBase::getDependentDialects(registry);
    arith::registerBufferizableOpInterfaceExternalModels(registry);
    linalg::registerBufferizableOpInterfaceExternalModels(registry);
    tensor::registerBufferizableOpInterfaceExternalModels(registry);
    func_ext::registerBufferizableOpInterfaceExternalModels(registry);
    registry.addExtension(+[](MLIRContext *ctx, spmd::SPMDDialect *) {
      spmd::AllGatherOp::attachInterface<
          CollectiveBufferizeModel<spmd::AllGatherOp>>(*ctx);
      spmd::AllReduceOp::attachInterface<
          CollectiveBufferizeModel<spmd::AllReduceOp>>(*ctx);
      spmd::ReduceScatterOp::attachInterface<
          CollectiveBufferizeModel<spmd::ReduceScatterOp>>(*ctx);
      spmd::AllToAllOp::attachInterface<
          CollectiveBufferizeModel<spmd::AllToAllOp>>(*ctx);
      spmd::ShardOp::attachInterface<CollectiveBufferizeModel<spmd::ShardOp>>(
          *ctx);
    });
  }

  void runOnOperation() override {
    OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    options.setFunctionBoundaryTypeConversion(
        LayoutMapOption::IdentityLayoutMap);
    options.unknownTypeConverterFn = [](TensorType tensorType,
                                        Attribute memorySpace,
                                        const BufferizationOptions &) {
      return getMemRefTypeWithStaticIdentityLayout(tensorType, memorySpace);
    };
    BufferizationState state;
    if (failed(runOneShotModuleBufferize(getOperation(), options, state)))
      return signalPassFailure();
  }
};
} // namespace
