//===- Bufferize.cpp - one-shot bufferization with spmd collectives -------===//

#include "passes/plan/Passes.h"

#include "dialects/spmd/SPMDOps.h"
#include "dialects/spmd/SPMDPlanOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"

namespace spmd {
#define GEN_PASS_DEF_SPMDBUFFERIZE
#include "passes/plan/Passes.h.inc"
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
  if (auto c = dyn_cast<spmd::PartialFromReplicatedOp>(op))
    return spmd::PlanPartialFromReplicatedOp::create(
        b, loc, in, out, c.getMeshAttr(), c.getMeshAxes(), c.getKindAttr());
  auto c = cast<spmd::ShardOp>(op);
  return spmd::PlanShardOp::create(b, loc, in, out, c.getMeshAttr(),
                                   c.getMeshAxes(), c.getDimAttr());
}

/// spmd.local_size of result dim `d` from the op's recorded global type and
/// layout, or null when the op has none.
Value layoutSize(RewriterBase &b, Operation *op, int64_t d) {
  auto global =
      op->getAttrOfType<TypeAttr>(spmd::SPMDDialect::kResultGlobalTypeAttrName);
  auto layout = op->getAttrOfType<spmd::LayoutAttr>(
      spmd::SPMDDialect::kResultLayoutAttrName);
  if (!global || !layout)
    return {};
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<spmd::MeshOp>(op, layout.getMesh());
  if (!mesh)
    return {};
  SmallVector<Attribute> names;
  for (int64_t axis : layout.toLayout().shardAxes(d))
    names.push_back(mesh.getAxisNames()[axis]);
  return spmd::LocalSizeOp::create(
      b, op->getLoc(), b.getIndexType(), layout.getMesh(),
      b.getArrayAttr(names),
      b.getI64IntegerAttr(
          cast<RankedTensorType>(global.getValue()).getDimSize(d)));
}

/// A collective that changes the shape reads its input and writes a fresh
/// buffer: it never aliases, so bufferization never copies around it.
template <typename OpTy>
struct CollectiveBufferizeModel : public BufferizableOpInterface::ExternalModel<
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
    auto inType = cast<RankedTensorType>(input.getType());
    std::optional<int64_t> splitDim = spmd::collectiveSplitDim(op);
    std::optional<int64_t> joinDim = spmd::collectiveJoinDim(op);
    for (int64_t d = 0; d < resultType.getRank(); ++d) {
      if (!resultType.isDynamicDim(d))
        continue;
      if (splitDim && *splitDim == d && !inType.isDynamicDim(d)) {
        // A dim the collective splits over the group: this member's chunk
        // of the (static) input size, from the mesh coordinates at run time.
        auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
        auto axes = op->getAttrOfType<ArrayAttr>("mesh_axes");
        dynamicSizes.push_back(spmd::PlanChunkSizeOp::create(
            rewriter, op->getLoc(), rewriter.getIndexType(), mesh, axes,
            rewriter.getI64IntegerAttr(inType.getDimSize(d))));
        continue;
      }
      if ((!splitDim || *splitDim != d) && (!joinDim || *joinDim != d)) {
        // A dim the collective leaves alone (uneven on another mesh axis,
        // as a tensor sharded on two dims gathered one dim at a time): the
        // input's size.
        dynamicSizes.push_back(
            memref::DimOp::create(rewriter, op->getLoc(), *in, d));
        continue;
      }
      // A split or joined dim of an input uneven on another axis too (two
      // mesh axes nested on one dim): this rank's chunk of the global size
      // by the result's layout, as spmd-partition recorded it.
      if (Value size = layoutSize(rewriter, op, d)) {
        dynamicSizes.push_back(size);
        continue;
      }
      return op->emitOpError()
             << "with dynamic result dim " << d
             << " is not supported by spmd-bufferize (a split or joined dim "
                "of a dynamic input needs the result's '"
             << spmd::SPMDDialect::kResultGlobalTypeAttrName << "' and '"
             << spmd::SPMDDialect::kResultLayoutAttrName << "')";
    }
    auto memType =
        MemRefType::get(resultType.getShape(), resultType.getElementType());
    Value out =
        memref::AllocOp::create(rewriter, op->getLoc(), memType, dynamicSizes);
    buildPlanCollective(rewriter, op, *in, out);
    replaceOpWithBufferizedValues(rewriter, op, out);
    return success();
  }
};

/// An all_reduce (or partial_from_replicated) may work in place: it reads
/// and writes its operand's buffer, and one-shot analysis inserts a copy only
/// where the input is still needed afterwards (or not writable).
template <typename OpTy>
struct InPlaceBufferizeModel
    : public BufferizableOpInterface::ExternalModel<InPlaceBufferizeModel<OpTy>,
                                                    OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    FailureOr<Value> buffer =
        getBuffer(rewriter, op->getOperand(0), options, state);
    if (failed(buffer))
      return failure();
    rewriter.setInsertionPoint(op);
    buildPlanCollective(rewriter, op, *buffer, *buffer);
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

/// Whether one-shot analysis decides `use` in place whatever else it
/// decides, and `use` plays no part in any other decision: a read that
/// neither writes nor aliases a result. For every use of a value that has
/// only such uses, its alias set stays the value alone and is never
/// written.
bool isPlainRead(OpOperand &use, const AnalysisState &state) {
  Operation *user = use.getOwner();
  if (!state.getOptions().dynCastBufferizableOp(user) ||
      user->hasTrait<OpTrait::IsTerminator>() || isa<CallOpInterface>(user))
    return false;
  return state.bufferizesToMemoryRead(use) &&
         !state.bufferizesToMemoryWrite(use) &&
         state.getAliasingValues(use).getNumAliases() == 0;
}

/// One-shot analysis gathers, for every tensor operand, the reads of every
/// alias of its value: a function argument read by N ops (a weight shared by
/// the layers of a chain) costs O(N^2). Such reads are decided in place
/// regardless (isPlainRead), so while the analysis runs each read but the
/// first takes a placeholder value of its own, then gets the argument back:
/// the same decisions in linear time.
class HiddenReads {
public:
  HiddenReads(ModuleOp module, OneShotAnalysisState &state) {
    OpBuilder b(module.getContext());
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Block &entry = func.getBody().front();
      for (BlockArgument arg : entry.getArguments()) {
        if (!isa<TensorType>(arg.getType()) || arg.use_empty() ||
            arg.hasOneUse() ||
            !llvm::all_of(arg.getUses(), [&](OpOperand &use) {
              return isPlainRead(use, state);
            }))
          continue;
        SmallVector<OpOperand *> uses;
        for (OpOperand &use : arg.getUses())
          uses.push_back(&use);
        b.setInsertionPointToStart(&entry);
        for (OpOperand *use : ArrayRef(uses).drop_front()) {
          // Not bufferizable, no operands: analyzed as nothing.
          auto placeholder = UnrealizedConversionCastOp::create(
              b, arg.getLoc(), arg.getType(), ValueRange{});
          state.createAliasInfoEntry(placeholder.getResult(0));
          use->set(placeholder.getResult(0));
          hidden.push_back({use, arg, placeholder});
        }
      }
    }
  }
  /// Gives the reads their arguments back. The placeholders leave the IR
  /// but stay allocated until destruction: the analysis caches results by
  /// value, and a new op at a freed address would hit a stale entry.
  void restore() {
    for (Hidden &h : hidden) {
      h.use->set(h.arg);
      h.placeholder->remove();
    }
  }
  ~HiddenReads() {
    for (Hidden &h : hidden)
      h.placeholder->destroy();
  }

private:
  struct Hidden {
    OpOperand *use;
    Value arg;
    Operation *placeholder;
  };
  SmallVector<Hidden> hidden;
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
          InPlaceBufferizeModel<spmd::AllReduceOp>>(*ctx);
      spmd::PartialFromReplicatedOp::attachInterface<
          InPlaceBufferizeModel<spmd::PartialFromReplicatedOp>>(*ctx);
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
    // A plan never writes its entry's arguments: a step that would update
    // one in place works on a copy, so running a plan twice on the same
    // inputs gives the same results.
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        for (unsigned i = 0; i < func.getNumArguments(); ++i)
          if (isa<TensorType>(func.getArgument(i).getType()))
            func.setArgAttr(i, BufferizationDialect::kWritableAttrName,
                            BoolAttr::get(&getContext(), false));
    // runOneShotModuleBufferize's steps (analysis, copies, bufferization),
    // with the shared reads hidden from the analysis.
    ModuleOp module = getOperation();
    BufferizationState state;
    {
      OneShotAnalysisState analysis(module, options);
      HiddenReads hidden(module, analysis);
      LogicalResult analyzed = analyzeModuleOp(module, analysis);
      hidden.restore();
      if (failed(analyzed) ||
          failed(insertTensorCopies(module, analysis, state)))
        return signalPassFailure();
    }
    if (failed(bufferizeModuleOp(module, options, state)))
      return signalPassFailure();
  }
};
} // namespace
