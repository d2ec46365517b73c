//===- CommReport.cpp - JSON report of the collectives of a program -------===//
//
// Lists, per function, the collectives in program order with the bytes each
// rank sends under the ring algorithms, and totals by kind and mesh axes.
// The collective sequence is a compile-time fact identical on every rank
// (DESIGN section 4), so this is what every rank will do.
//
//===----------------------------------------------------------------------===//

#include "core/CostModel.h"
#include "dialects/spmd/SPMDOps.h"
#include "passes/collectives/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>

namespace spmd {
#define GEN_PASS_DEF_SPMDCOMMREPORT
#include "passes/collectives/Passes.h.inc"
} // namespace spmd

using namespace mlir;
using namespace spmd;
namespace json = llvm::json;

namespace {

/// Bytes one rank sends: exact when the sizes are static, else an upper bound
/// when the op's static dims give one.
struct Bytes {
  std::optional<double> exact;
  std::optional<double> bound;
};

/// How a dim of the input relates to the same dim of the result.
enum class DimRole { Same, Gathered, Split };

struct Collective {
  Operation *op;
  StringRef kind;
  std::string mesh;
  SmallVector<std::string> axes;
  /// The axes joined with ',' in mesh order: the same group of devices gives
  /// the same key whatever order the op lists its axes in.
  std::string groupKey;
  int64_t groupSize = 1;
  std::optional<ReductionKind> reduction;
  SmallVector<std::pair<StringRef, int64_t>> dims;
  RankedTensorType input, result;
  SmallVector<DimRole> roles;
  /// Per result dim, its largest local size when spmd-partition recorded
  /// the result's global type and layout; else empty.
  SmallVector<int64_t> maxResult;
  double factor = 0; // bytes sent = factor * input bytes
  Bytes bytes;
  bool dynamic = false;
};

/// Count and bytes of a set of collectives.
struct Tally {
  int64_t count = 0;
  double bytes = 0, bound = 0;
  bool allExact = true, allBounded = true;

  void add(const Bytes &b) {
    ++count;
    if (b.exact) {
      bytes += *b.exact;
      bound += *b.exact;
      return;
    }
    allExact = false;
    if (b.bound)
      bound += *b.bound;
    else
      allBounded = false;
  }
};

/// Integral numbers print as integers, others as doubles.
json::Value number(double v) {
  if (std::nearbyint(v) == v && std::fabs(v) < 9.0e15)
    return static_cast<int64_t>(v);
  return v;
}

json::Value optionalNumber(std::optional<double> v) {
  return v ? number(*v) : json::Value(nullptr);
}

json::Value shape(RankedTensorType type) {
  json::Array dims;
  for (int64_t d : type.getShape())
    dims.push_back(ShapedType::isDynamic(d) ? json::Value(nullptr)
                                            : json::Value(d));
  return dims;
}

/// Ring algorithm bytes per rank for `c`; see the pass description.
Bytes computeBytes(const Collective &c) {
  if (c.factor == 0)
    return {0.0, 0.0};
  std::optional<int64_t> element = elementBytes(c.input.getElementType());
  if (!element)
    return {};
  double exact = c.factor * *element, bound = exact;
  bool bounded = true;
  for (auto [i, size] : llvm::enumerate(c.input.getShape())) {
    if (!ShapedType::isDynamic(size)) {
      exact *= size;
      bound *= size;
      continue;
    }
    int64_t out = c.result.getDimSize(i), k = c.groupSize;
    // A result dim that differs between ranks: its largest size, from the
    // global type and layout spmd-partition recorded.
    if (ShapedType::isDynamic(out) && i < c.maxResult.size())
      out = c.maxResult[i];
    if (ShapedType::isDynamic(out)) {
      bounded = false;
      continue;
    }
    // torch.chunk pieces of n over k ranks hold at most ceil(n/k).
    bound *= c.roles[i] == DimRole::Same       ? out
             : c.roles[i] == DimRole::Gathered ? llvm::divideCeil(out, k)
                                               : out * k;
  }
  if (!c.input.hasStaticShape())
    return {std::nullopt,
            bounded ? std::optional<double>(bound) : std::nullopt};
  return {exact, exact};
}

void fillGroup(Collective &c, CollectiveOpInterface op,
               SymbolTableCollection &tables) {
  c.mesh = op.getMeshAttr().getValue().str();
  for (Attribute axis : op.getMeshAxes())
    c.axes.push_back(cast<StringAttr>(axis).str());
  c.input = cast<RankedTensorType>(op.getInput().getType());
  c.result = cast<RankedTensorType>(op->getResult(0).getType());
  c.roles.assign(c.input.getRank(), DimRole::Same);
  auto mesh = dyn_cast_or_null<MeshOp>(
      tables.lookupNearestSymbolFrom(op, op.getMeshAttr()));
  if (!mesh)
    return;
  SmallVector<int64_t> axes = meshAxisIndices(mesh, op.getMeshAxes());
  for (int64_t axis : axes)
    c.groupSize *= mesh.getAxisSizes()[axis];
  auto global =
      op->getAttrOfType<TypeAttr>(SPMDDialect::kResultGlobalTypeAttrName);
  auto layout =
      op->getAttrOfType<LayoutAttr>(SPMDDialect::kResultLayoutAttrName);
  if (global && layout)
    if (auto globalType = dyn_cast<RankedTensorType>(global.getValue());
        globalType && globalType.hasStaticShape())
      c.maxResult = llvm::to_vector(maxLocalShape(
          mesh.toMesh(), layout.toLayout(), globalType.getShape().vec()));
  llvm::sort(axes);
  c.groupKey =
      llvm::join(llvm::map_range(
                     axes,
                     [&](int64_t axis) {
                       return cast<StringAttr>(mesh.getAxisNames()[axis]).str();
                     }),
                 ",");
}

/// The cost model's kind of a collective that communicates.
std::optional<CollectiveKind> collectiveKind(CollectiveOpInterface op) {
  if (isa<AllGatherOp>(op))
    return CollectiveKind::AllGather;
  if (isa<AllReduceOp>(op))
    return CollectiveKind::AllReduce;
  if (isa<ReduceScatterOp>(op))
    return CollectiveKind::ReduceScatter;
  if (isa<AllToAllOp>(op))
    return CollectiveKind::AllToAll;
  return std::nullopt;
}

Collective describe(CollectiveOpInterface op, SymbolTableCollection &tables) {
  Collective c;
  c.op = op;
  c.kind = op->getName().stripDialect();
  fillGroup(c, op, tables);
  auto role = [&](int64_t dim, DimRole r) { c.roles[dim] = r; };
  if (auto gather = dyn_cast<AllGatherOp>(*op)) {
    c.dims.push_back({"dim", gather.getDim()});
    role(gather.getDim(), DimRole::Gathered);
  } else if (auto reduce = dyn_cast<AllReduceOp>(*op)) {
    c.reduction = reduce.getKind();
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(*op)) {
    c.reduction = scatter.getKind();
    c.dims.push_back({"dim", scatter.getDim()});
    role(scatter.getDim(), DimRole::Split);
  } else if (auto a2a = dyn_cast<AllToAllOp>(*op)) {
    c.dims.push_back({"split_dim", a2a.getSplitDim()});
    c.dims.push_back({"concat_dim", a2a.getConcatDim()});
    role(a2a.getSplitDim(), DimRole::Split);
    role(a2a.getConcatDim(), DimRole::Gathered);
  } else if (auto shard = dyn_cast<ShardOp>(*op)) {
    c.dims.push_back({"dim", shard.getDim()});
    role(shard.getDim(), DimRole::Split);
  }
  if (std::optional<CollectiveKind> kind = collectiveKind(op))
    c.factor = ringSendFactor(*kind, c.groupSize);
  c.dynamic = !c.input.hasStaticShape() || !c.result.hasStaticShape();
  c.bytes = computeBytes(c);
  return c;
}

/// Writes what `write` emits as one compact line, so that every collective
/// and every tally of the pretty-printed report is a line of its own.
void writeCompact(json::OStream &out,
                  llvm::function_ref<void(json::OStream &)> write) {
  std::string text;
  llvm::raw_string_ostream os(text);
  {
    json::OStream j(os);
    write(j);
  }
  out.rawValue(text);
}

void writeTally(json::OStream &out, const Tally &t) {
  writeCompact(out, [&](json::OStream &j) {
    j.object([&] {
      j.attribute("count", t.count);
      j.attribute("bytes", t.allExact ? number(t.bytes) : json::Value(nullptr));
      if (!t.allExact)
        j.attribute("bytes_upper_bound",
                    t.allBounded ? number(t.bound) : json::Value(nullptr));
    });
  });
}

void writeTallies(json::OStream &j, StringRef key,
                  const std::map<std::string, Tally> &tallies) {
  j.attributeObject(key, [&] {
    for (const auto &[name, tally] : tallies)
      j.attributeBegin(name), writeTally(j, tally), j.attributeEnd();
  });
}

void writeNested(json::OStream &j, StringRef key,
                 const std::map<std::string, std::map<std::string, Tally>> &m) {
  j.attributeObject(key, [&] {
    for (const auto &[mesh, tallies] : m)
      writeTallies(j, mesh, tallies);
  });
}

void writeCollective(json::OStream &out, const Collective &c) {
  writeCompact(out, [&](json::OStream &j) {
    j.object([&] {
      j.attribute("op", c.kind);
      j.attribute("mesh", c.mesh);
      j.attributeArray("axes", [&] {
        for (const std::string &axis : c.axes)
          j.value(axis);
      });
      j.attribute("group_size", c.groupSize);
      if (c.reduction)
        j.attribute("reduction", stringifyReductionKind(*c.reduction));
      for (auto [name, dim] : c.dims)
        j.attribute(name, dim);
      std::string element;
      llvm::raw_string_ostream(element) << c.input.getElementType();
      j.attribute("element_type", element);
      j.attribute("input_shape", shape(c.input));
      j.attribute("result_shape", shape(c.result));
      j.attribute("dynamic", c.dynamic);
      j.attribute("bytes", optionalNumber(c.bytes.exact));
      if (!c.bytes.exact)
        j.attribute("bytes_upper_bound", optionalNumber(c.bytes.bound));
    });
  });
}

LogicalResult writeFunction(json::OStream &j, FunctionOpInterface func,
                            SymbolTableCollection &tables) {
  std::vector<Collective> collectives;
  func->walk<WalkOrder::PreOrder>([&](CollectiveOpInterface op) {
    collectives.push_back(describe(op, tables));
  });

  Tally total;
  std::map<std::string, Tally> byKind;
  std::map<std::string, std::map<std::string, Tally>> byAxes, byAxis;
  for (const Collective &c : collectives) {
    total.add(c.bytes);
    byKind[c.kind.str()].add(c.bytes);
    byAxes[c.mesh][c.groupKey].add(c.bytes);
    // A collective over several axes runs one ring over the joined group;
    // its bytes do not split per axis, so only single-axis ones count here.
    if (c.axes.size() == 1)
      byAxis[c.mesh][c.axes.front()].add(c.bytes);
  }

  j.object([&] {
    j.attribute("name", func.getName());
    j.attributeArray("collectives", [&] {
      for (const Collective &c : collectives)
        writeCollective(j, c);
    });
    j.attributeBegin("totals");
    j.object([&] {
      j.attribute("count", total.count);
      j.attribute("bytes",
                  total.allExact ? number(total.bytes) : json::Value(nullptr));
      if (!total.allExact)
        j.attribute("bytes_upper_bound", total.allBounded
                                             ? number(total.bound)
                                             : json::Value(nullptr));
      writeTallies(j, "by_kind", byKind);
      writeNested(j, "by_axes", byAxes);
      writeNested(j, "by_axis", byAxis);
    });
    j.attributeEnd();
  });
  return success();
}

struct CommReportPass : spmd::impl::SPMDCommReportBase<CommReportPass> {
  using Base::Base;

  void runOnOperation() override {
    markAllAnalysesPreserved();
    SymbolTableCollection tables;
    std::string text;
    llvm::raw_string_ostream os(text);
    bool ok = true;
    {
      json::OStream j(os, /*IndentSize=*/2);
      j.object([&] {
        j.attributeArray("functions", [&] {
          getOperation().walk([&](FunctionOpInterface func) {
            if (!func.isExternal() && ok)
              ok = succeeded(writeFunction(j, func, tables));
          });
        });
      });
    }
    os << "\n";
    if (!ok)
      return signalPassFailure();

    if (out.empty()) {
      llvm::outs() << text;
      llvm::outs().flush();
      return;
    }
    std::error_code error;
    llvm::raw_fd_ostream file(out, error, llvm::sys::fs::OF_Text);
    if (!error) {
      file << text;
      file.close();
      if (file.has_error())
        error = file.error(), file.clear_error();
    }
    if (error) {
      // At the location only: the note with the whole module helps nobody.
      emitError(getOperation().getLoc()) << "spmd-comm-report: cannot write '"
                                         << out << "': " << error.message();
      signalPassFailure();
    }
  }
};

} // namespace
