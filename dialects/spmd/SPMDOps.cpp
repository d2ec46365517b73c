//===- SPMDOps.cpp - spmd operations --------------------------------------===//

#include "dialects/spmd/SPMDOps.h"
#include "dialects/spmd/FunctionMesh.h"

#include <cmath>

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace spmd;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `["dp"=2, "tp"=4]`
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &names,
                                 DenseI64ArrayAttr &sizes) {
  SmallVector<Attribute> nameAttrs;
  SmallVector<int64_t> sizeValues;
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, [&] {
        std::string name;
        int64_t size;
        if (parser.parseString(&name) || parser.parseEqual() ||
            parser.parseInteger(size))
          return failure();
        nameAttrs.push_back(parser.getBuilder().getStringAttr(name));
        sizeValues.push_back(size);
        return success();
      }))
    return failure();
  names = parser.getBuilder().getArrayAttr(nameAttrs);
  sizes = parser.getBuilder().getDenseI64ArrayAttr(sizeValues);
  return success();
}

static void printMeshAxes(OpAsmPrinter &printer, Operation *, ArrayAttr names,
                          DenseI64ArrayAttr sizes) {
  printer << "[";
  llvm::interleaveComma(
      llvm::zip(names, sizes.asArrayRef()), printer, [&](auto pair) {
        printer << std::get<0>(pair) << "=" << std::get<1>(pair);
      });
  printer << "]";
}

/// `#spmd.layout<...> : type`, the layout written out in full as users read
/// it, then the value's type.
static ParseResult parseLayoutAndType(OpAsmParser &parser, LayoutAttr &layout,
                                      Type &type) {
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  (void)spmd::detail::takeTrailingLayoutType();
  if (parser.parseAttribute(attr))
    return failure();
  layout = dyn_cast<LayoutAttr>(attr);
  if (!layout)
    return parser.emitError(loc, "expected a #spmd.layout, got ") << attr;
  // The parser has usually consumed the `: type` already.
  type = spmd::detail::takeTrailingLayoutType();
  if (!type && (parser.parseColon() || parser.parseType(type)))
    return failure();
  return success();
}

static void printLayoutAndType(OpAsmPrinter &printer, Operation *,
                               LayoutAttr layout, Type type) {
  printer.printAttribute(layout);
  printer << " : " << type;
}

#define GET_OP_CLASSES
#include "dialects/spmd/SPMDOps.cpp.inc"

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

::spmd::Mesh MeshOp::toMesh() {
  ::spmd::Mesh mesh;
  for (Attribute name : getAxisNames())
    mesh.axisNames.push_back(cast<StringAttr>(name).str());
  mesh.axisSizes.assign(getAxisSizes().begin(), getAxisSizes().end());
  return mesh;
}

int64_t MeshOp::getNumDevices() {
  int64_t n = 1;
  for (int64_t s : getAxisSizes())
    n *= s;
  return n;
}

std::optional<int64_t> MeshOp::getAxisIndex(StringRef name) {
  for (auto [i, attr] : llvm::enumerate(getAxisNames()))
    if (cast<StringAttr>(attr).getValue() == name)
      return static_cast<int64_t>(i);
  return std::nullopt;
}

std::optional<int64_t> spmd::collectiveSplitDim(Operation *op) {
  if (auto c = dyn_cast<ShardOp>(op))
    return c.getDim();
  if (auto c = dyn_cast<ReduceScatterOp>(op))
    return c.getDim();
  if (auto c = dyn_cast<AllToAllOp>(op))
    return c.getSplitDim();
  return std::nullopt;
}

std::optional<int64_t> spmd::collectiveJoinDim(Operation *op) {
  if (auto c = dyn_cast<AllGatherOp>(op))
    return c.getDim();
  if (auto c = dyn_cast<AllToAllOp>(op))
    return c.getConcatDim();
  return std::nullopt;
}

FailureOr<FlatSymbolRefAttr> spmd::functionMesh(FunctionOpInterface fn) {
  struct Use {
    FlatSymbolRefAttr mesh;
    std::string what;
    Location loc;
  };
  std::optional<Use> first;
  std::optional<Use> second;
  // `what` is built only for the (at most two) uses kept: the walk visits
  // every op of programs with hundreds of thousands.
  auto note = [&](FlatSymbolRefAttr mesh, function_ref<std::string()> what,
                  Location loc) {
    if (!mesh || second)
      return;
    if (!first)
      first = Use{mesh, what(), loc};
    else if (mesh != first->mesh)
      second = Use{mesh, what(), loc};
  };
  auto noteLayout = [&](Attribute a, function_ref<std::string()> what,
                        Location loc) {
    if (auto layout = dyn_cast_or_null<LayoutAttr>(a))
      note(layout.getMesh(), what, loc);
  };
  StringAttr name =
      StringAttr::get(fn->getContext(), SPMDDialect::kLayoutAttrName);
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    noteLayout(
        fn.getArgAttr(i, name), [&] { return "argument " + std::to_string(i); },
        fn.getLoc());
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    noteLayout(
        fn.getResultAttr(i, name),
        [&] { return "result " + std::to_string(i); }, fn.getLoc());
  fn->walk([&](Operation *op) {
    auto what = [&] {
      return ("'" + op->getName().getStringRef() + "'").str();
    };
    auto layoutWhat = [&] { return what() + " layout"; };
    if (auto c = dyn_cast<ConstrainOp>(op))
      noteLayout(c.getLayout(), what, op->getLoc());
    if (auto c = dyn_cast<CollectiveOpInterface>(op))
      note(c.getMeshAttr(), what, op->getLoc());
    Attribute a = op->getAttr(name);
    if (auto array = dyn_cast_or_null<ArrayAttr>(a))
      for (Attribute e : array)
        noteLayout(e, layoutWhat, op->getLoc());
    else
      noteLayout(a, layoutWhat, op->getLoc());
  });
  if (!first)
    return FlatSymbolRefAttr();
  if (!second)
    return first->mesh;
  InFlightDiagnostic diag = fn.emitError()
                            << "function @" << fn.getName()
                            << " names two meshes: " << first->what << " is on "
                            << first->mesh << ", " << second->what << " on "
                            << second->mesh << "; a function runs on one mesh";
  if (second->loc != fn.getLoc())
    diag.attachNote(second->loc) << second->what << " on " << second->mesh;
  return failure();
}

LogicalResult RandomOp::verify() {
  StringRef kind = getDistribution();
  double a = getA().convertToDouble(), b = getB().convertToDouble();
  Type element = getType().getElementType();
  if (kind == "uniform") {
    if (!isa<FloatType>(element))
      return emitOpError() << "uniform needs a float result, got " << element;
    if (!(a <= b) || !std::isfinite(a) || !std::isfinite(b))
      return emitOpError() << "uniform needs finite bounds with a <= b, got ["
                           << a << ", " << b << ")";
  } else if (kind == "normal") {
    if (!isa<FloatType>(element))
      return emitOpError() << "normal needs a float result, got " << element;
    if (!(b >= 0) || !std::isfinite(a) || !std::isfinite(b))
      return emitOpError() << "normal needs a finite mean and a standard "
                              "deviation >= 0, got "
                           << a << ", " << b;
  } else if (kind == "bernoulli") {
    if (!isa<FloatType, IntegerType>(element))
      return emitOpError() << "bernoulli needs a float or integer result, got "
                           << element;
    if (!(a >= 0 && a <= 1))
      return emitOpError() << "bernoulli needs a probability in [0, 1], got "
                           << a;
  } else {
    return emitOpError() << "unknown distribution '" << kind
                         << "' (uniform, normal or bernoulli)";
  }
  if (std::optional<uint64_t> offset = getOffset())
    if (static_cast<int64_t>(*offset) < 0)
      return emitOpError() << "offset " << static_cast<int64_t>(*offset)
                           << " is negative";
  return success();
}

LogicalResult MeshOp::verify() {
  std::string error = toMesh().validate();
  if (error.empty())
    return success();
  // "mesh has ..." -> "mesh @name has ...": the error names the mesh.
  StringRef rest(error);
  if (rest.consume_front("mesh "))
    return emitOpError() << "mesh @" << getSymName() << " " << rest;
  return emitOpError() << error;
}

//===----------------------------------------------------------------------===//
// ConstrainOp
//===----------------------------------------------------------------------===//

LogicalResult ConstrainOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyLayout(*this, getLayout(), getType(), "the constrained value",
                      &tables);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

FailureOr<MeshGroup> spmd::verifyMeshGroup(Operation *op,
                                           FlatSymbolRefAttr name,
                                           ArrayAttr axisNames,
                                           SymbolTableCollection &tables) {
  MeshGroup group;
  Operation *found = tables.lookupNearestSymbolFrom(op, name);
  group.mesh = dyn_cast_or_null<MeshOp>(found);
  if (!group.mesh)
    return op->emitOpError() << (found ? "symbol " : "names unknown mesh ")
                             << name << (found ? " is not an spmd.mesh" : "");
  if (axisNames.empty())
    return op->emitOpError() << "needs at least one mesh axis";
  for (Attribute attr : axisNames) {
    StringRef axis = cast<StringAttr>(attr).getValue();
    std::optional<int64_t> index = group.mesh.getAxisIndex(axis);
    if (!index)
      return op->emitOpError()
             << "mesh " << name << " has no axis named '" << axis << "'";
    if (llvm::is_contained(group.axes, *index))
      return op->emitOpError() << "lists mesh axis '" << axis << "' twice";
    group.axes.push_back(*index);
    group.size *= group.mesh.getAxisSizes()[*index];
  }
  return group;
}

SmallVector<int64_t> spmd::meshAxisIndices(MeshOp mesh, ArrayAttr axisNames) {
  SmallVector<int64_t> axes;
  for (Attribute attr : axisNames)
    axes.push_back(*mesh.getAxisIndex(cast<StringAttr>(attr).getValue()));
  return axes;
}

/// Checks element type and rank agree and `dims` are in range.
static LogicalResult verifySameRankAndElement(Operation *op,
                                              RankedTensorType in,
                                              RankedTensorType out,
                                              ArrayRef<uint64_t> dims) {
  if (in.getElementType() != out.getElementType())
    return op->emitOpError()
           << "changes the element type from " << in.getElementType() << " to "
           << out.getElementType();
  if (in.getRank() != out.getRank())
    return op->emitOpError() << "changes the rank from " << in.getRank()
                             << " to " << out.getRank();
  for (uint64_t dim : dims)
    if (dim >= static_cast<uint64_t>(in.getRank()))
      return op->emitOpError()
             << "dim " << dim << " is out of range for a rank-" << in.getRank()
             << " tensor";
  return success();
}

/// How one dim changes under a collective over a group of `k` devices.
enum class DimRule {
  Same,   // untouched: sizes agree
  Gather, // every member's piece concatenated: out = in * k
  Split,  // torch.chunk of in: out = in / k, dynamic if uneven
};

static LogicalResult verifyDim(Operation *op, int64_t dim, int64_t in,
                               int64_t out, DimRule rule, int64_t k) {
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(out))
    return success();
  switch (rule) {
  case DimRule::Same:
    if (in != out)
      return op->emitOpError()
             << "dim " << dim << " changes from " << in << " to " << out;
    return success();
  case DimRule::Gather:
    if (out != in * k)
      return op->emitOpError()
             << "gathers " << k << " pieces of size " << in << " along dim "
             << dim << " into " << out << "; expected " << in * k;
    return success();
  case DimRule::Split:
    if (in % k != 0)
      return op->emitOpError()
             << "splits dim " << dim << " of size " << in << " into " << k
             << " uneven chunks, so the result dim must be dynamic ('?')";
    if (out != in / k)
      return op->emitOpError()
             << "splits dim " << dim << " of size " << in << " into " << k
             << " chunks of " << in / k << ", not " << out;
    return success();
  }
  llvm_unreachable("unknown dim rule");
}

/// Verifies a collective whose dims follow `rules` (one per dim).
static LogicalResult verifyShapes(Operation *op, RankedTensorType in,
                                  RankedTensorType out, int64_t k,
                                  ArrayRef<DimRule> rules) {
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (failed(
            verifyDim(op, d, in.getDimSize(d), out.getDimSize(d), rules[d], k)))
      return failure();
  return success();
}

static SmallVector<DimRule>
rulesWith(int64_t rank, ArrayRef<std::pair<int64_t, DimRule>> set) {
  SmallVector<DimRule> rules(rank, DimRule::Same);
  for (auto [dim, rule] : set)
    rules[dim] = rule;
  return rules;
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<MeshGroup> group =
      verifyMeshGroup(*this, getMeshAttr(), getMeshAxes(), tables);
  if (failed(group))
    return failure();
  auto in = getInput().getType(), out = getResult().getType();
  if (failed(verifySameRankAndElement(*this, in, out, {getDim()})))
    return failure();
  return verifyShapes(*this, in, out, group->size,
                      rulesWith(in.getRank(), {{getDim(), DimRule::Gather}}));
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyMeshGroup(*this, getMeshAttr(), getMeshAxes(), tables);
}

LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<MeshGroup> group =
      verifyMeshGroup(*this, getMeshAttr(), getMeshAxes(), tables);
  if (failed(group))
    return failure();
  auto in = getInput().getType(), out = getResult().getType();
  if (failed(verifySameRankAndElement(*this, in, out, {getDim()})))
    return failure();
  return verifyShapes(*this, in, out, group->size,
                      rulesWith(in.getRank(), {{getDim(), DimRule::Split}}));
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<MeshGroup> group =
      verifyMeshGroup(*this, getMeshAttr(), getMeshAxes(), tables);
  if (failed(group))
    return failure();
  auto in = getInput().getType(), out = getResult().getType();
  if (failed(verifySameRankAndElement(*this, in, out,
                                      {getSplitDim(), getConcatDim()})))
    return failure();
  if (getSplitDim() == getConcatDim())
    return emitOpError() << "splits and concatenates the same dim "
                         << getSplitDim() << "; that is no layout change";
  return verifyShapes(
      *this, in, out, group->size,
      rulesWith(in.getRank(), {{getSplitDim(), DimRule::Split},
                               {getConcatDim(), DimRule::Gather}}));
}

LogicalResult ShardOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<MeshGroup> group =
      verifyMeshGroup(*this, getMeshAttr(), getMeshAxes(), tables);
  if (failed(group))
    return failure();
  auto in = getInput().getType(), out = getResult().getType();
  if (failed(verifySameRankAndElement(*this, in, out, {getDim()})))
    return failure();
  return verifyShapes(*this, in, out, group->size,
                      rulesWith(in.getRank(), {{getDim(), DimRule::Split}}));
}

LogicalResult
PartialFromReplicatedOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyMeshGroup(*this, getMeshAttr(), getMeshAxes(), tables);
}

LogicalResult LocalSizeOp::verifySymbolUses(SymbolTableCollection &tables) {
  if (failed(verifyMeshGroup(*this, getMeshAttr(), getMeshAxes(), tables)))
    return failure();
  // I64Attr's accessor is unsigned; read the signed value.
  if (getGlobalSizeAttr().getInt() < 0)
    return emitOpError() << "global size " << getGlobalSizeAttr().getInt()
                         << " is negative";
  return success();
}

LogicalResult LocalOffsetOp::verifySymbolUses(SymbolTableCollection &tables) {
  if (failed(verifyMeshGroup(*this, getMeshAttr(), getMeshAxes(), tables)))
    return failure();
  if (getGlobalSizeAttr().getInt() < 0)
    return emitOpError() << "global size " << getGlobalSizeAttr().getInt()
                         << " is negative";
  return success();
}

// shard selects this member's chunk locally.
bool ShardOp::communicates() { return false; }

#define DEFINE_MESH_AXIS_INDICES(Op)                                           \
  SmallVector<int64_t> Op::getMeshAxisIndices(MeshOp mesh) {                   \
    return meshAxisIndices(mesh, getMeshAxes());                               \
  }
DEFINE_MESH_AXIS_INDICES(AllGatherOp)
DEFINE_MESH_AXIS_INDICES(AllReduceOp)
DEFINE_MESH_AXIS_INDICES(ReduceScatterOp)
DEFINE_MESH_AXIS_INDICES(AllToAllOp)
DEFINE_MESH_AXIS_INDICES(ShardOp)
DEFINE_MESH_AXIS_INDICES(PartialFromReplicatedOp)
DEFINE_MESH_AXIS_INDICES(LocalSizeOp)
DEFINE_MESH_AXIS_INDICES(LocalOffsetOp)
#undef DEFINE_MESH_AXIS_INDICES

/// Whether the group over `axes` of `meshRef` is one device: then every
/// collective over it (and partial_from_replicated) is the identity.
static bool isSingletonGroup(Operation *op, FlatSymbolRefAttr meshRef,
                             ArrayAttr axes) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!mesh)
    return false;
  ArrayRef<int64_t> sizes = mesh.getAxisSizes();
  for (Attribute a : axes) {
    auto name = dyn_cast<StringAttr>(a);
    std::optional<int64_t> index =
        name ? mesh.getAxisIndex(name.getValue()) : std::nullopt;
    if (!index || *index < 0 || *index >= static_cast<int64_t>(sizes.size()) ||
        sizes[*index] != 1)
      return false;
  }
  return true;
}

#define DEFINE_SINGLETON_FOLD(Op)                                              \
  OpFoldResult Op::fold(FoldAdaptor) {                                         \
    if (getInput().getType() == getResult().getType() &&                       \
        isSingletonGroup(*this, getMeshAttr(), getMeshAxes()))                 \
      return getInput();                                                       \
    return {};                                                                 \
  }
DEFINE_SINGLETON_FOLD(AllGatherOp)
DEFINE_SINGLETON_FOLD(AllReduceOp)
DEFINE_SINGLETON_FOLD(ReduceScatterOp)
DEFINE_SINGLETON_FOLD(AllToAllOp)
DEFINE_SINGLETON_FOLD(ShardOp)
DEFINE_SINGLETON_FOLD(PartialFromReplicatedOp)
#undef DEFINE_SINGLETON_FOLD
