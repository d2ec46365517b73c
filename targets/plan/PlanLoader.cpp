//===- PlanLoader.cpp - MLIR plan to runtime plan -------------------------===//

#include "targets/plan/PlanLoader.h"

#include "core/ParseHazards.h"
#include "dialects/spmd/SPMDOps.h"
#include "dialects/spmd/SPMDPlanOps.h"
#include "passes/InputCheck.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <numeric>

using namespace mlir;
using namespace spmd;

OwningOpRef<ModuleOp> spmd::parseProgramFile(StringRef file,
                                             llvm::SourceMgr &sourceMgr,
                                             MLIRContext *ctx) {
  std::string error = unreadableSourceFile(file.str());
  if (!error.empty()) {
    emitError(FileLineColLoc::get(ctx, file, 0, 0)) << error;
    return nullptr;
  }
  std::unique_ptr<llvm::MemoryBuffer> buffer = openInputFile(file, &error);
  if (!buffer) {
    emitError(FileLineColLoc::get(ctx, file, 0, 0)) << error;
    return nullptr;
  }
  return parseProgramBuffer(std::move(buffer), sourceMgr, ctx);
}

OwningOpRef<ModuleOp>
spmd::parseProgramBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                         llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
  std::optional<ParseHazard> hazard = findParseHazard(buffer->getBuffer());
  const char *start = buffer->getBufferStart();
  std::string name = buffer->getBufferIdentifier().str();
  unsigned id = sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  if (hazard) {
    auto [line, column] = sourceMgr.getLineAndColumn(
        llvm::SMLoc::getFromPointer(start + hazard->offset), id);
    emitError(FileLineColLoc::get(ctx, name, line, column)) << hazard->message;
    return nullptr;
  }
  // Verified after the checks of what upstream's verifiers crash on, which
  // text and bytecode (never scanned above) reach alike.
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(
      sourceMgr, ParserConfig(ctx, /*verifyAfterParse=*/false));
  if (module && failed(verifyInput(*module)))
    return nullptr;
  return module;
}

LogicalResult spmd::captureDiagnostics(MLIRContext *ctx, std::string &error,
                                       llvm::function_ref<LogicalResult()> fn) {
  std::string text;
  llvm::raw_string_ostream os(text);
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
    os << diag.getLocation() << ": " << diag << "\n";
    for (Diagnostic &note : diag.getNotes())
      os << "  note: " << note << "\n";
    return success();
  });
  LogicalResult result = fn();
  error += text;
  return result;
}

bool spmd::isPlan(ModuleOp module) {
  return module->hasAttr(kPlanVersionAttrName);
}

LogicalResult spmd::checkPlanVersion(ModuleOp module, StringRef file,
                                     std::string &error) {
  auto version = module->getAttrOfType<IntegerAttr>(kPlanVersionAttrName);
  if (!version) {
    error = (file + ": not a plan (no integer " + kPlanVersionAttrName +
             " attribute)")
                .str();
    return failure();
  }
  if (version.getInt() != kPlanVersion) {
    error = (file + ": plan version " + Twine(version.getInt()) +
             " is not supported (this spmd-run reads version " +
             Twine(kPlanVersion) + ")")
                .str();
    return failure();
  }
  return success();
}

std::optional<DType> spmd::dtypeOfElementType(Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isF64())
    return DType::F64;
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isInteger(32) || type.isIndex())
    return type.isIndex() ? DType::I64 : DType::I32;
  if (type.isInteger(64))
    return DType::I64;
  if (type.isInteger(8) || type.isInteger(1))
    return DType::I8;
  return std::nullopt;
}

/// The global shape spmd-partition records in spmd.global_type.
static std::optional<Shape> globalShapeOf(TypeAttr attr) {
  auto type =
      attr ? dyn_cast<RankedTensorType>(attr.getValue()) : RankedTensorType();
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  return Shape(type.getShape().begin(), type.getShape().end());
}

namespace {
struct ScheduleBuilder {
  func::FuncOp func;
  plan::Schedule &schedule;
  std::string &error;
  llvm::StringMap<int64_t> kernelIndex;
  std::optional<StringRef> meshName;

  ScheduleBuilder(func::FuncOp func, plan::Schedule &schedule,
                  std::string &error)
      : func(func), schedule(schedule), error(error) {}

  LogicalResult fail(Operation *op, const Twine &message) {
    std::string loc;
    llvm::raw_string_ostream os(loc);
    os << op->getLoc();
    error = (loc + ": '" + op->getName().getStringRef() + "' " + message).str();
    return failure();
  }

  llvm::DenseMap<Value, int64_t> heapIds;
  std::map<std::pair<int64_t, int64_t>, int64_t> sizeSlotOf;

  /// The slot of a rank-dependent index: spmd.local_size/local_offset,
  /// spmd.plan_chunk_size, or a memref.dim of an entry argument or of a
  /// buffer whose size is itself such an index.
  FailureOr<int64_t> sizeSlot(Operation *user, Value size) {
    if (auto local = size.getDefiningOp<LocalSizeOp>())
      return localSlot(local, plan::SizeSource::Kind::LocalChunk);
    if (auto local = size.getDefiningOp<LocalOffsetOp>())
      return localSlot(local, plan::SizeSource::Kind::LocalOffset);
    if (auto chunk = size.getDefiningOp<PlanChunkSizeOp>())
      return chunkSizeSlot(chunk);
    auto dim = size.getDefiningOp<memref::DimOp>();
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (!dim || !index)
      return fail(user, "has a dynamic size or index that is not a constant "
                        "dim of a buffer or a rank-dependent size or offset");
    Value source = dim.getSource();
    if (auto arg = dyn_cast<BlockArgument>(source)) {
      auto key = std::make_pair(int64_t(arg.getArgNumber()), *index);
      auto [it, inserted] = sizeSlotOf.try_emplace(
          key, static_cast<int64_t>(schedule.sizes.size()));
      if (inserted) {
        plan::SizeSource source;
        source.arg = key.first;
        source.dim = key.second;
        schedule.sizes.push_back(source);
      }
      return it->second;
    }
    auto buffer = source.getDefiningOp<PlanBufferOp>();
    auto type = cast<MemRefType>(source.getType());
    if (!buffer || !type.isDynamicDim(*index))
      return fail(user, "has a dynamic size that is not a constant dim of a "
                        "buffer");
    return sizeSlot(user,
                    buffer.getDynamicSizes()[type.getDynamicDimIndex(*index)]);
  }

  /// spmd-partition's `spmd.local_size|local_offset @mesh [axes] of N`: this
  /// rank's chunk of N, or where it starts.
  template <typename OpTy>
  FailureOr<int64_t> localSlot(OpTy op, plan::SizeSource::Kind kind) {
    auto mesh =
        SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
    if (!mesh)
      return fail(op, "names an unknown mesh");
    return meshSlot(op, op.getMesh(), kind, op.getGlobalSize(),
                    op.getMeshAxisIndices(mesh));
  }

  FailureOr<int64_t> chunkSizeSlot(PlanChunkSizeOp op) {
    return meshSlot(op, op.getMesh(), plan::SizeSource::Kind::GroupChunk,
                    op.getSize(), op.getMeshAxisIndices());
  }

  /// The slot of a value computed from mesh coordinates; equal ones (each
  /// partitioned op makes its own spmd.local_offset) share a slot.
  FailureOr<int64_t> meshSlot(Operation *op, StringRef mesh,
                              plan::SizeSource::Kind kind, int64_t globalSize,
                              ArrayRef<int64_t> axes) {
    if (meshName && *meshName != mesh)
      return fail(op, "uses a second mesh; a schedule runs on one mesh");
    meshName = mesh;
    for (auto [slot, source] : llvm::enumerate(schedule.sizes))
      if (source.kind == kind && source.globalSize == globalSize &&
          llvm::equal(source.axes, axes))
        return static_cast<int64_t>(slot);
    plan::SizeSource source;
    source.kind = kind;
    source.globalSize = globalSize;
    source.axes.assign(axes.begin(), axes.end());
    schedule.sizes.push_back(source);
    return static_cast<int64_t>(schedule.sizes.size() - 1);
  }

  /// A reshaped view of a runtime-sized buffer: each dynamic dim of the
  /// view is the one dynamic dim of its reassociation group in the source,
  /// scaled by the group's static dims.
  FailureOr<plan::BufferRef> reshapeDynamic(Operation *op, plan::BufferRef base,
                                            MemRefType type) {
    auto unsupported = [&] {
      return fail(op, "reshapes a buffer with rank-dependent dims other than "
                      "by static factors; not supported by spmd-run yet");
    };
    if (base.where != plan::BufferRef::Where::Heap)
      return unsupported();
    bool collapse = isa<memref::CollapseShapeOp>(op);
    SmallVector<ReassociationIndices> groups =
        collapse ? cast<memref::CollapseShapeOp>(op).getReassociationIndices()
                 : cast<memref::ExpandShapeOp>(op).getReassociationIndices();
    // The wide side has a dim per group member, the narrow one per group.
    ArrayRef<int64_t> narrow = collapse ? type.getShape() : ArrayRef<int64_t>();
    Shape wide = collapse
                     ? base.shape
                     : Shape(type.getShape().begin(), type.getShape().end());
    if (!collapse)
      narrow = ArrayRef<int64_t>(base.shape);
    // The source's dynamic dims, in order, with their slots and scales.
    std::vector<std::pair<int64_t, int64_t>> scales = base.sizeScales;
    if (scales.empty())
      scales.assign(base.sizeSlots.size(), {1, 1});
    plan::BufferRef out = base;
    out.shape.assign(type.getShape().begin(), type.getShape().end());
    for (int64_t &d : out.shape)
      if (ShapedType::isDynamic(d))
        d = -1;
    out.sizeSlots.clear();
    out.sizeScales.clear();
    size_t sourceSlot = 0;
    for (auto [g, group] : llvm::enumerate(groups)) {
      int64_t wideStatic = 1, wideDynamic = 0;
      for (int64_t k : group) {
        if (wide[k] < 0 || ShapedType::isDynamic(wide[k]))
          ++wideDynamic;
        else
          wideStatic *= wide[k];
      }
      bool narrowDynamic = narrow[g] < 0 || ShapedType::isDynamic(narrow[g]);
      if (wideDynamic != (narrowDynamic ? 1 : 0))
        return unsupported();
      if (!narrowDynamic)
        continue;
      auto [mul, div] = scales[sourceSlot];
      int64_t slot = base.sizeSlots[sourceSlot++];
      // collapse: [.., ?, ..] -> [? * static]; expand: the reverse.
      if (collapse)
        mul *= wideStatic;
      else
        div *= wideStatic;
      int64_t common = std::gcd(mul, div);
      out.sizeSlots.push_back(slot);
      out.sizeScales.push_back({mul / common, div / common});
    }
    if (llvm::all_of(out.sizeScales,
                     [](auto s) { return s.first == 1 && s.second == 1; }))
      out.sizeScales.clear();
    return out;
  }

  FailureOr<plan::BufferRef> ref(Operation *user, Value value) {
    // A cast between identity layouts is the same buffer (its sizes are
    // the source's, known at run time).
    if (auto castOp = value.getDefiningOp<memref::CastOp>())
      return ref(user, castOp.getSource());
    // A reshape is the same buffer under another (static) shape.
    if (isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(
            value.getDefiningOp())) {
      FailureOr<plan::BufferRef> base =
          ref(user, value.getDefiningOp()->getOperand(0));
      auto type = cast<MemRefType>(value.getType());
      if (failed(base))
        return failure();
      if (!base->isStatic() || !type.hasStaticShape())
        return reshapeDynamic(value.getDefiningOp(), *base, type);
      base->shape.assign(type.getShape().begin(), type.getShape().end());
      return base;
    }
    // A contiguous static slice of an arena buffer (a member of a bucketed
    // collective a GEMM reads) is the arena at a larger offset.
    if (auto sub = value.getDefiningOp<memref::SubViewOp>()) {
      auto type = cast<MemRefType>(sub.getType());
      auto sourceType = cast<MemRefType>(sub.getSource().getType());
      int64_t offset = 0;
      SmallVector<int64_t> strides;
      if (sourceType.getLayout().isIdentity() && type.hasStaticShape() &&
          succeeded(type.getStridesAndOffset(strides, offset)) &&
          !ShapedType::isDynamic(offset)) {
        bool contiguous = true;
        int64_t expected = 1;
        for (int64_t d = type.getRank() - 1; d >= 0; --d) {
          if (type.getDimSize(d) != 1 && strides[d] != expected)
            contiguous = false;
          expected *= type.getDimSize(d);
        }
        FailureOr<plan::BufferRef> base = ref(user, sub.getSource());
        if (failed(base))
          return failure();
        if (contiguous && base->where == plan::BufferRef::Where::Arena) {
          base->index += offset * static_cast<int64_t>(dtypeSize(base->type));
          base->shape.assign(type.getShape().begin(), type.getShape().end());
          return base;
        }
      }
      return fail(user, "reads a strided or runtime-sized slice of a buffer; "
                        "a plan step takes whole buffers or contiguous "
                        "slices of the arena");
    }
    auto type = dyn_cast<MemRefType>(value.getType());
    if (!type || !type.getLayout().isIdentity())
      return fail(user, "needs identity-layout memref buffers");
    std::optional<DType> elem = dtypeOfElementType(type.getElementType());
    if (!elem)
      return fail(user, "has a buffer of unsupported element type");
    plan::BufferRef r;
    r.type = *elem;
    r.shape.assign(type.getShape().begin(), type.getShape().end());
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      r.where = plan::BufferRef::Where::Arg;
      r.index = arg.getArgNumber();
      return r;
    }
    for (int64_t &d : r.shape)
      if (ShapedType::isDynamic(d))
        d = -1;
    if (auto buffer = value.getDefiningOp<PlanBufferOp>()) {
      if (type.hasStaticShape()) {
        r.where = plan::BufferRef::Where::Arena;
        r.index = buffer.getOffset();
        return r;
      }
      if (buffer.getBytes() != 0)
        return fail(buffer, "with dynamic dims must have 'bytes 0' (allocated "
                            "by the runtime)");
      r.where = plan::BufferRef::Where::Heap;
      auto [it, inserted] = heapIds.try_emplace(value, schedule.numHeapBuffers);
      if (inserted)
        ++schedule.numHeapBuffers;
      r.index = it->second;
      for (Value size : buffer.getDynamicSizes()) {
        FailureOr<int64_t> slot = sizeSlot(buffer, size);
        if (failed(slot))
          return failure();
        r.sizeSlots.push_back(*slot);
      }
      return r;
    }
    return fail(user, "uses a buffer that is neither an argument nor a "
                      "spmd.plan_buffer");
  }

  LogicalResult operands(Operation *op, plan::Step &step) {
    for (Value v : op->getOperands()) {
      // A kernel's index scalars (after its buffers).
      if (v.getType().isIndex()) {
        FailureOr<int64_t> slot = sizeSlot(op, v);
        if (failed(slot))
          return failure();
        step.scalars.push_back(*slot);
        continue;
      }
      FailureOr<plan::BufferRef> r = ref(op, v);
      if (failed(r))
        return failure();
      step.operands.push_back(*r);
    }
    return success();
  }

  template <typename OpTy>
  LogicalResult collective(OpTy op, plan::StepKind kind, plan::Step &step) {
    step.kind = kind;
    if (meshName && *meshName != op.getMesh())
      return fail(op, "uses a second mesh; a schedule runs on one mesh");
    meshName = op.getMesh();
    SmallVector<int64_t> axes = op.getMeshAxisIndices();
    step.axes.assign(axes.begin(), axes.end());
    return operands(op, step);
  }

  /// The entry's arguments and results are scattered and assembled on the
  /// schedule's one mesh: a layout on another one cannot be.
  LogicalResult layoutMesh(LayoutAttr layout, const Twine &what) {
    StringRef mesh = layout.getMesh().getValue();
    if (meshName && *meshName != mesh)
      return fail(func, (what + " has a layout on mesh @" + mesh +
                         " but the schedule runs on @" + *meshName +
                         "; a schedule runs on one mesh")
                            .str());
    meshName = mesh;
    return success();
  }

  LogicalResult build() {
    schedule.name = func.getSymName().str();
    schedule.arenaBytes =
        func->getAttrOfType<IntegerAttr>(kPlanArenaAttrName).getInt();
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      FailureOr<plan::BufferRef> r = ref(func, func.getArgument(i));
      if (failed(r))
        return failure();
      plan::TensorInfo info{r->type, r->shape, std::nullopt};
      if (auto layout = func.getArgAttrOfType<LayoutAttr>(
              i, SPMDDialect::kLayoutAttrName)) {
        if (failed(layoutMesh(layout, "argument " + Twine(i))))
          return failure();
        info.layout = layout.toLayout();
      }
      info.globalShape = globalShapeOf(
          func.getArgAttrOfType<TypeAttr>(i, SPMDDialect::kGlobalTypeAttrName));
      schedule.args.push_back(info);
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (auto layout = func.getResultAttrOfType<LayoutAttr>(
              i, SPMDDialect::kLayoutAttrName))
        if (failed(layoutMesh(layout, "result " + Twine(i))))
          return failure();

    for (Operation &op : func.getBody().front()) {
      plan::Step step;
      if (isa<PlanBufferOp, PlanChunkSizeOp, LocalSizeOp, LocalOffsetOp,
              memref::DimOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
              memref::CastOp, memref::SubViewOp, arith::ConstantOp>(op))
        continue;
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          FailureOr<plan::BufferRef> r = ref(&op, v);
          if (failed(r))
            return failure();
          schedule.resultRefs.push_back(*r);
          plan::TensorInfo info{r->type, r->shape, std::nullopt};
          if (auto layout = func.getResultAttrOfType<LayoutAttr>(
                  i, SPMDDialect::kLayoutAttrName))
            info.layout = layout.toLayout();
          info.globalShape = globalShapeOf(func.getResultAttrOfType<TypeAttr>(
              i, SPMDDialect::kGlobalTypeAttrName));
          schedule.results.push_back(info);
        }
        continue;
      }
      if (auto kernel = dyn_cast<PlanKernelOp>(op)) {
        step.kind = plan::StepKind::Kernel;
        auto [it, inserted] = kernelIndex.try_emplace(
            kernel.getCallee(), static_cast<int64_t>(schedule.kernels.size()));
        if (inserted)
          schedule.kernels.push_back(kernel.getCallee().str());
        step.kernel = it->second;
        if (failed(operands(&op, step)))
          return failure();
      } else if (auto gemm = dyn_cast<PlanGemmOp>(op)) {
        step.kind = plan::StepKind::Gemm;
        step.transposeA = gemm.getTransposeA();
        step.transposeB = gemm.getTransposeB();
        step.beta = gemm.getBeta();
        if (failed(operands(&op, step)))
          return failure();
      } else if (isa<PlanCopyOp>(op)) {
        step.kind = plan::StepKind::Copy;
        if (failed(operands(&op, step)))
          return failure();
      } else if (auto c = dyn_cast<PlanAllGatherOp>(op)) {
        step.dim0 = c.getDim();
        if (failed(collective(c, plan::StepKind::AllGather, step)))
          return failure();
      } else if (auto c = dyn_cast<PlanAllReduceOp>(op)) {
        step.reduce = toReduceKind(c.getKind());
        if (failed(collective(c, plan::StepKind::AllReduce, step)))
          return failure();
      } else if (auto c = dyn_cast<PlanReduceScatterOp>(op)) {
        step.dim0 = c.getDim();
        step.reduce = toReduceKind(c.getKind());
        if (failed(collective(c, plan::StepKind::ReduceScatter, step)))
          return failure();
      } else if (auto c = dyn_cast<PlanAllToAllOp>(op)) {
        step.dim0 = c.getSplitDim();
        step.dim1 = c.getConcatDim();
        if (failed(collective(c, plan::StepKind::AllToAll, step)))
          return failure();
      } else if (auto c = dyn_cast<PlanPartialFromReplicatedOp>(op)) {
        step.reduce = toReduceKind(c.getKind());
        if (failed(collective(c, plan::StepKind::PartialFromReplicated, step)))
          return failure();
      } else if (auto c = dyn_cast<PlanShardOp>(op)) {
        step.dim0 = c.getDim();
        if (failed(collective(c, plan::StepKind::Shard, step)))
          return failure();
      } else {
        return fail(&op, "is not a plan step");
      }
      schedule.steps.push_back(std::move(step));
    }

    schedule.mesh = Mesh{{"world"}, {1}};
    if (meshName) {
      auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
          func, FlatSymbolRefAttr::get(func.getContext(), *meshName));
      if (!mesh)
        return fail(func, ("names unknown mesh @" + *meshName).str());
      schedule.mesh = mesh.toMesh();
    }
    if (std::string err = schedule.validate(); !err.empty()) {
      error = "schedule " + schedule.name + ": " + err;
      return failure();
    }
    return success();
  }
};
} // namespace

LogicalResult spmd::loadSchedule(ModuleOp module, StringRef entry,
                                 plan::Schedule &schedule, std::string &error) {
  SmallVector<func::FuncOp> schedules;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(kPlanArenaAttrName))
      schedules.push_back(func);
  func::FuncOp func;
  if (entry.empty()) {
    if (schedules.size() != 1) {
      error = "the plan has " + std::to_string(schedules.size()) +
              " entries; choose one with --entry";
      return failure();
    }
    func = schedules.front();
  } else {
    for (func::FuncOp f : schedules)
      if (f.getSymName() == entry)
        func = f;
    if (!func) {
      error = ("unknown entry '" + entry + "'; the plan has:").str();
      for (func::FuncOp f : schedules)
        error += " " + f.getSymName().str();
      return failure();
    }
  }
  ScheduleBuilder builder(func, schedule, error);
  return builder.build();
}
