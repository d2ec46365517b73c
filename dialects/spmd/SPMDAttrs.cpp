//===- SPMDAttrs.cpp - spmd attributes ------------------------------------===//

#include "dialects/spmd/SPMDOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace spmd;

#define GET_ATTRDEF_CLASSES
#include "dialects/spmd/SPMDAttrs.cpp.inc"

#include "dialects/spmd/SPMDEnums.cpp.inc"

void SPMDDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/spmd/SPMDAttrs.cpp.inc"
      >();
}

static constexpr const char *kPlacementSyntax =
    "expected a placement: R, S(dim) or P(sum|avg|max|min)";

/// Parses `R`, `S(<dim>)` or `P(<kind>)`.
static ParseResult parsePlacement(AsmParser &parser, ::spmd::Placement &out) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (failed(parser.parseOptionalKeyword(&keyword)))
    return parser.emitError(loc, kPlacementSyntax);
  if (keyword == "R") {
    out = ::spmd::Placement::replicate();
    return success();
  }
  if (keyword == "S") {
    int64_t dim;
    SMLoc dimLoc;
    if (parser.parseLParen() || parser.getCurrentLocation(&dimLoc) ||
        parser.parseInteger(dim) || parser.parseRParen())
      return failure();
    if (dim < 0)
      return parser.emitError(dimLoc, "S(dim) needs a non-negative dim, got ")
             << dim;
    out = ::spmd::Placement::shard(dim);
    return success();
  }
  if (keyword == "P") {
    StringRef kind;
    SMLoc kindLoc;
    if (parser.parseLParen() || parser.getCurrentLocation(&kindLoc) ||
        parser.parseKeyword(&kind) || parser.parseRParen())
      return failure();
    std::optional<::spmd::ReduceKind> reduce = ::spmd::parseReduceKind(kind);
    if (!reduce)
      return parser.emitError(kindLoc, "unknown partial reduction '")
             << kind << "'; expected sum, avg, max or min";
    out = ::spmd::Placement::partial(*reduce);
    return success();
  }
  return parser.emitError(loc, "unknown placement '")
         << keyword << "'; " << kPlacementSyntax;
}

/// MLIR's parser reads a `: type` that follows any dialect attribute as the
/// attribute's type and hands it to the attribute parser, so in
/// `spmd.constrain %v to #spmd.layout<...> : tensor<4xf32>` the op's type
/// reaches LayoutAttr::parse. It is kept here for the op to take back.
static thread_local Type trailingLayoutType;

Type spmd::detail::takeTrailingLayoutType() {
  Type type = trailingLayoutType;
  trailingLayoutType = {};
  return type;
}

Attribute LayoutAttr::parse(AsmParser &parser, Type trailingType) {
  trailingLayoutType = trailingType;
  SMLoc loc = parser.getCurrentLocation();
  FlatSymbolRefAttr mesh;
  SmallVector<::spmd::Placement> placements;
  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&] { return parsePlacement(parser, placements.emplace_back()); }) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<LayoutAttr>(loc, parser.getContext(), mesh,
                                       placements);
}

void LayoutAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(
      getPlacements(), printer,
      [&](const ::spmd::Placement &p) { printer << p.str(); });
  printer << "]>";
}

LogicalResult LayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 FlatSymbolRefAttr mesh,
                                 ArrayRef<::spmd::Placement> placements) {
  if (!mesh)
    return emitError() << "layout needs a mesh symbol";
  if (placements.empty())
    return emitError() << "layout needs one placement per mesh axis, got none";
  for (const ::spmd::Placement &p : placements)
    if (p.isShard() && p.dim < 0)
      return emitError() << "placement " << p.str() << " has a negative dim";
  return success();
}

::spmd::Layout LayoutAttr::toLayout() const {
  return ::spmd::Layout{std::vector<::spmd::Placement>(getPlacements().begin(),
                                                       getPlacements().end())};
}

LayoutAttr LayoutAttr::get(FlatSymbolRefAttr mesh,
                           const ::spmd::Layout &layout) {
  return get(mesh.getContext(), mesh, layout.placements);
}
