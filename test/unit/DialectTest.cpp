//===- DialectTest.cpp - spmd dialect C++ API -----------------------------===//

#include "dialects/spmd/SPMDOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace spmd;

namespace {

class DialectTest : public ::testing::Test {
protected:
  DialectTest() { context.loadDialect<SPMDDialect, func::FuncDialect>(); }
  MLIRContext context;
};

TEST_F(DialectTest, LayoutAttrRoundTripsThroughPlainLayout) {
  auto mesh = FlatSymbolRefAttr::get(&context, "mesh");
  ::spmd::Layout layout{{::spmd::Placement::shard(1),
                         ::spmd::Placement::partial(::spmd::ReduceKind::Max),
                         ::spmd::Placement::replicate()}};
  LayoutAttr attr = LayoutAttr::get(mesh, layout);
  EXPECT_EQ(attr.toLayout(), layout);
  EXPECT_EQ(attr.getMesh(), mesh);
  // Uniqued: the same layout gives the same attribute, another does not.
  EXPECT_EQ(attr, LayoutAttr::get(mesh, layout));
  layout.placements[1] = ::spmd::Placement::partial(::spmd::ReduceKind::Min);
  EXPECT_NE(attr, LayoutAttr::get(mesh, layout));

  std::string text;
  llvm::raw_string_ostream os(text);
  os << Attribute(attr);
  EXPECT_EQ(text, "#spmd.layout<@mesh, [S(1), P(max), R]>");
  EXPECT_EQ(parseAttribute(text, &context), Attribute(attr));
}

TEST_F(DialectTest, MeshOpAndLayoutVerification) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    spmd.mesh @mesh ["dp"=2, "tp"=3]
    func.func private @f(tensor<5x7xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), S(1)]>})
  )mlir",
                                                             &context);
  ASSERT_TRUE(module);
  auto meshOp = *module->getOps<MeshOp>().begin();
  ::spmd::Mesh mesh = meshOp.toMesh();
  EXPECT_EQ(mesh.axisNames, (std::vector<std::string>{"dp", "tp"}));
  EXPECT_EQ(mesh.axisSizes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(meshOp.getNumDevices(), 6);
  EXPECT_EQ(meshOp.getAxisIndex("tp"), std::optional<int64_t>(1));
  EXPECT_EQ(meshOp.getAxisIndex("pp"), std::nullopt);

  auto fn = *module->getOps<func::FuncOp>().begin();
  auto layout =
      fn.getArgAttrOfType<LayoutAttr>(0, SPMDDialect::kLayoutAttrName);
  ASSERT_TRUE(layout);
  EXPECT_TRUE(succeeded(
      verifyLayout(fn, layout, fn.getArgumentTypes()[0], "argument 0")));

  // The same layout on a rank-1 tensor is rejected with a message.
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto rank1 = RankedTensorType::get({5}, Float32Type::get(&context));
  EXPECT_TRUE(failed(verifyLayout(fn, layout, rank1, "argument 0")));
  EXPECT_NE(message.find("shards dim 1 of a rank-1 tensor"), std::string::npos)
      << message;
}

TEST_F(DialectTest, ReductionKindConversions) {
  for (auto kind : {::spmd::ReduceKind::Sum, ::spmd::ReduceKind::Avg,
                    ::spmd::ReduceKind::Max, ::spmd::ReduceKind::Min}) {
    EXPECT_EQ(toReduceKind(toReductionKind(kind)), kind);
    EXPECT_EQ(stringifyReductionKind(toReductionKind(kind)),
              ::spmd::reduceKindName(kind));
  }
}

} // namespace
