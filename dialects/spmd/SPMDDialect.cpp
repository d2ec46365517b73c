//===- SPMDDialect.cpp - spmd dialect -------------------------------------===//

#include "dialects/spmd/SPMDOps.h"
#include "dialects/spmd/SPMDPlanOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace spmd;

#include "dialects/spmd/SPMDDialect.cpp.inc"
#include "dialects/spmd/SPMDInterfaces.cpp.inc"

void SPMDDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/spmd/SPMDOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/spmd/SPMDPlanOps.cpp.inc"
      >();
}

ReductionKind spmd::toReductionKind(::spmd::ReduceKind kind) {
  switch (kind) {
  case ::spmd::ReduceKind::Sum:
    return ReductionKind::sum;
  case ::spmd::ReduceKind::Avg:
    return ReductionKind::avg;
  case ::spmd::ReduceKind::Max:
    return ReductionKind::max;
  case ::spmd::ReduceKind::Min:
    return ReductionKind::min;
  }
  llvm_unreachable("unknown reduce kind");
}

::spmd::ReduceKind spmd::toReduceKind(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::sum:
    return ::spmd::ReduceKind::Sum;
  case ReductionKind::avg:
    return ::spmd::ReduceKind::Avg;
  case ReductionKind::max:
    return ::spmd::ReduceKind::Max;
  case ReductionKind::min:
    return ::spmd::ReduceKind::Min;
  }
  llvm_unreachable("unknown reduction kind");
}

std::optional<int64_t> spmd::elementBytes(Type type) {
  if (auto complex = dyn_cast<mlir::ComplexType>(type)) {
    std::optional<int64_t> part = elementBytes(complex.getElementType());
    return part ? std::optional<int64_t>(2 * *part) : std::nullopt;
  }
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return (static_cast<int64_t>(type.getIntOrFloatBitWidth()) + 7) / 8;
  return std::nullopt;
}

/// The spmd.mesh named `name` among the ops of `from`'s nearest symbol
/// table, or null. The verifier asks once per layout (every value of a
/// propagated program has one): a scan for mesh ops, comparing uniqued
/// names, costs a fraction of the generic lookup.
static MeshOp findMesh(Operation *from, StringAttr name) {
  Operation *table = SymbolTable::getNearestSymbolTable(from);
  if (!table || table->getNumRegions() == 0 || table->getRegion(0).empty())
    return nullptr;
  for (Operation &op : table->getRegion(0).front())
    if (auto mesh = dyn_cast<MeshOp>(op); mesh && mesh.getSymNameAttr() == name)
      return mesh;
  return nullptr;
}

MeshOp spmd::lookupMesh(Operation *from, FlatSymbolRefAttr name,
                        SymbolTableCollection *symbolTable) {
  if (MeshOp mesh = findMesh(from, name.getAttr()))
    return mesh;
  Operation *found = symbolTable
                         ? symbolTable->lookupNearestSymbolFrom(from, name)
                         : SymbolTable::lookupNearestSymbolFrom(from, name);
  auto mesh = dyn_cast_or_null<MeshOp>(found);
  if (!mesh) {
    if (found)
      from->emitError() << "symbol " << name << " is not an spmd.mesh";
    else
      from->emitError() << "unknown mesh " << name;
  }
  return mesh;
}

LogicalResult spmd::verifyLayout(Operation *anchor, LayoutAttr layout,
                                 Type type, const Twine &what,
                                 SymbolTableCollection *symbolTable) {
  int64_t rank = -1;
  if (type) {
    // Plans keep the layouts of entry arguments/results on their buffers.
    if (auto buffer = dyn_cast<MemRefType>(type)) {
      rank = buffer.getRank();
    } else {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor)
        return anchor->emitError()
               << "layout " << layout << " on " << what
               << " needs a ranked tensor, but it has type " << type;
      rank = tensor.getRank();
    }
  }
  MeshOp mesh = lookupMesh(anchor, layout.getMesh(), symbolTable);
  if (!mesh)
    return failure();
  // Every op of a propagated program carries a layout: check it in place,
  // and build the message (Layout::validate) only for a bad one.
  ArrayRef<::spmd::Placement> placements = layout.getPlacements();
  bool ok = placements.size() == mesh.getAxisSizes().size();
  for (const ::spmd::Placement &p : placements)
    ok &= !p.isShard() || (p.dim >= 0 && (rank < 0 || p.dim < rank));
  if (ok)
    return success();
  std::string error = layout.toLayout().validate(mesh.toMesh(), rank);
  if (!error.empty())
    return anchor->emitError()
           << "invalid layout " << layout << " on " << what << ": " << error;
  return success();
}

/// Verifies a `spmd.layout` attribute attached to an argument or result.
static LogicalResult verifyValueLayoutAttr(Operation *op, NamedAttribute attr,
                                           Type type, const Twine &what) {
  if (attr.getName() == SPMDDialect::kGlobalTypeAttrName) {
    // The global type of a local (partitioned) value: same rank and element
    // type, static shape. The local value may be a buffer once the plan
    // pipeline has bufferized the function.
    auto typeAttr = dyn_cast<TypeAttr>(attr.getValue());
    auto global =
        typeAttr ? dyn_cast<RankedTensorType>(typeAttr.getValue()) : nullptr;
    auto local = dyn_cast_or_null<ShapedType>(type);
    if (local && !local.hasRank())
      local = nullptr;
    if (!global || !global.hasStaticShape())
      return op->emitError()
             << "'" << SPMDDialect::kGlobalTypeAttrName << "' on " << what
             << " must be a statically shaped tensor type, got "
             << attr.getValue();
    if (!local || local.getRank() != global.getRank() ||
        local.getElementType() != global.getElementType())
      return op->emitError()
             << "'" << SPMDDialect::kGlobalTypeAttrName << "' " << global
             << " on " << what << " does not match its local type " << type;
    return success();
  }
  if (attr.getName() != SPMDDialect::kLayoutAttrName)
    return op->emitError() << "unknown spmd attribute '"
                           << attr.getName().getValue() << "' on " << what
                           << "; expected '" << SPMDDialect::kLayoutAttrName
                           << "'";
  auto layout = dyn_cast<LayoutAttr>(attr.getValue());
  if (!layout)
    return op->emitError() << "'" << SPMDDialect::kLayoutAttrName << "' on "
                           << what << " must be a #spmd.layout, got "
                           << attr.getValue();
  return verifyLayout(op, layout, type, what);
}

LogicalResult SPMDDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  Type type;
  if (auto fn = dyn_cast<FunctionOpInterface>(op))
    type = fn.getArgumentTypes()[argIndex];
  else if (regionIndex < op->getNumRegions() &&
           !op->getRegion(regionIndex).empty())
    type = op->getRegion(regionIndex).getArgument(argIndex).getType();
  return verifyValueLayoutAttr(op, attr, type, "argument " + Twine(argIndex));
}

LogicalResult SPMDDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  Type type;
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (fn)
    type = fn.getResultTypes()[resultIndex];
  if (attr.getName() == kUpdatesAttrName) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!fn || !index || index.getInt() < 0 ||
        index.getInt() >= int64_t(fn.getNumArguments()) ||
        fn.getArgumentTypes()[index.getInt()] != type)
      return op->emitError()
             << "'" << kUpdatesAttrName << "' on result " << resultIndex
             << " must be the index of an argument of the same type, got "
             << attr.getValue();
    return success();
  }
  return verifyValueLayoutAttr(op, attr, type, "result " + Twine(resultIndex));
}

/// `spmd.result_global_type` and `spmd.result_layout` come together on a
/// one-result op: the global type has the result's rank and element type,
/// and the layout fits it.
static LogicalResult verifyResultShardAttributes(Operation *op) {
  auto global =
      op->getAttrOfType<TypeAttr>(SPMDDialect::kResultGlobalTypeAttrName);
  auto layout =
      op->getAttrOfType<LayoutAttr>(SPMDDialect::kResultLayoutAttrName);
  if (!global || !layout)
    return op->emitError() << "'" << SPMDDialect::kResultGlobalTypeAttrName
                           << "' (a type) and '"
                           << SPMDDialect::kResultLayoutAttrName
                           << "' (a #spmd.layout) must be given together";
  auto globalType = dyn_cast<RankedTensorType>(global.getValue());
  auto resultType = op->getNumResults() == 1
                        ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                        : RankedTensorType();
  if (!globalType || !resultType ||
      globalType.getRank() != resultType.getRank() ||
      globalType.getElementType() != resultType.getElementType())
    return op->emitError() << "'" << SPMDDialect::kResultGlobalTypeAttrName
                           << "' must be a ranked tensor type of the single "
                              "result's rank and element type";
  return verifyLayout(op, layout, globalType, "result 0 (global)");
}

LogicalResult SPMDDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  // `spmd.layout` on an op gives the layout of each of its results: one
  // #spmd.layout for a single result, or an array with one per result.
  if (attr.getName().getValue().starts_with("spmd.plan_"))
    return verifyPlanAttribute(op, attr);
  if (attr.getName() == kResultGlobalTypeAttrName ||
      attr.getName() == kResultLayoutAttrName)
    return verifyResultShardAttributes(op);
  if (attr.getName() != kLayoutAttrName)
    return op->emitError() << "unknown spmd attribute '"
                           << attr.getName().getValue() << "'";
  SmallVector<LayoutAttr> layouts;
  if (auto single = dyn_cast<LayoutAttr>(attr.getValue())) {
    layouts.push_back(single);
  } else if (auto array = dyn_cast<ArrayAttr>(attr.getValue())) {
    for (Attribute a : array) {
      auto layout = dyn_cast<LayoutAttr>(a);
      if (!layout)
        return op->emitError()
               << "'" << kLayoutAttrName
               << "' must hold #spmd.layout attributes, got " << a;
      layouts.push_back(layout);
    }
  } else {
    return op->emitError() << "'" << kLayoutAttrName
                           << "' must be a #spmd.layout or an array of them";
  }
  if (layouts.size() != op->getNumResults())
    return op->emitError() << "'" << kLayoutAttrName << "' has "
                           << layouts.size() << " layouts for "
                           << op->getNumResults() << " results";
  for (auto [i, layout] : llvm::enumerate(layouts))
    if (failed(verifyLayout(op, layout, op->getResult(i).getType(),
                            "result " + Twine(i))))
      return failure();
  return success();
}
