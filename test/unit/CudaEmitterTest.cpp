//===- CudaEmitterTest.cpp - targets/cuda/CudaEmitter with scalars --------===//
//
// Kernels whose views take rank-dependent offsets and sizes as trailing
// `index` arguments (spmd.local_offset / local_size passed by the schedule):
// the printer makes them `long long` parameters and folds them into the
// index arithmetic and the launch rule (plain func.func: only the kernel
// body matters here).
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/CudaEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using spmd::cudagen::CudaKernel;
using spmd::cudagen::CudaParam;

namespace {

struct Emitted {
  bool ok = false;
  CudaKernel kernel;
  std::string diagnostics;
};

Emitted emit(const char *ir) {
  MLIRContext context;
  context.loadDialect<func::FuncDialect, memref::MemRefDialect,
                      linalg::LinalgDialect, arith::ArithDialect,
                      math::MathDialect>();
  Emitted out;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    out.diagnostics += d.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(ir, &context);
  if (!module)
    return out;
  auto func = *module->getOps<func::FuncOp>().begin();
  out.ok = succeeded(spmd::cudagen::emitCudaKernel(func, out.kernel));
  return out;
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

TEST(CudaEmitter, IndexArgumentOffsetsAView) {
  Emitted e = emit(R"(
    func.func @k(%x: memref<16x8xf32>, %y: memref<4x8xf32>, %off: index) {
      %s = memref.subview %x[%off, 0] [4, 8] [1, 1]
          : memref<16x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
      linalg.copy ins(%s : memref<4x8xf32, strided<[8, 1], offset: ?>>)
          outs(%y : memref<4x8xf32>)
      return
    })");
  ASSERT_TRUE(e.ok) << e.diagnostics;
  ASSERT_EQ(e.kernel.params.size(), 3u);
  EXPECT_EQ(e.kernel.params[2].kind, CudaParam::Scalar);
  EXPECT_EQ(e.kernel.params[2].cType, "long long");
  EXPECT_EQ(e.kernel.params[2].name, "s2");
  EXPECT_TRUE(contains(e.kernel.source, "long long s2)")) << e.kernel.source;
  EXPECT_TRUE(contains(e.kernel.source, "a0[s2 * 8LL + i0 * 8LL + i1]"))
      << e.kernel.source;
  EXPECT_EQ(e.kernel.workConstant, 32);
  EXPECT_TRUE(e.kernel.workFactors.empty());
}

TEST(CudaEmitter, IndexArgumentSizesTheWork) {
  Emitted e = emit(R"(
    func.func @k(%x: memref<?x8xf16>, %y: memref<?x8xf16>, %off: index,
                 %n: index) {
      %s = memref.subview %x[%off, 0] [%n, 8] [1, 1]
          : memref<?x8xf16> to memref<?x8xf16, strided<[8, 1], offset: ?>>
      %d = memref.subview %y[0, 0] [%n, 8] [1, 1]
          : memref<?x8xf16> to memref<?x8xf16, strided<[8, 1]>>
      linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                       affine_map<(d0, d1) -> (d0, d1)>],
                      iterator_types = ["parallel", "parallel"]}
          ins(%s : memref<?x8xf16, strided<[8, 1], offset: ?>>)
          outs(%d : memref<?x8xf16, strided<[8, 1]>>) {
      ^bb0(%a: f16, %o: f16):
        %r = arith.addf %a, %a : f16
        linalg.yield %r : f16
      }
      return
    })");
  ASSERT_TRUE(e.ok) << e.diagnostics;
  // x, y, off, n, then the dynamic dims of x and y.
  ASSERT_EQ(e.kernel.params.size(), 6u);
  EXPECT_EQ(e.kernel.params[3].name, "s3");
  EXPECT_EQ(e.kernel.params[4].kind, CudaParam::Dim);
  EXPECT_EQ(e.kernel.params[4].name, "a0_d0");
  EXPECT_EQ(e.kernel.params[5].name, "a1_d0");
  EXPECT_TRUE(contains(e.kernel.source, "const long long n0 = s3;"))
      << e.kernel.source;
  // work = 8 * n (argument 3's value).
  EXPECT_EQ(e.kernel.workConstant, 8);
  ASSERT_EQ(e.kernel.workFactors.size(), 1u);
  EXPECT_EQ(e.kernel.workFactors[0], std::make_pair(3u, -1));
}

TEST(CudaEmitter, NonConstantComputedOffsetIsAnError) {
  Emitted e = emit(R"(
    func.func @k(%x: memref<16xf32>, %y: memref<4xf32>, %off: index) {
      %c1 = arith.constant 1 : index
      %o = arith.addi %off, %c1 : index
      %s = memref.subview %x[%o] [4] [1]
          : memref<16xf32> to memref<4xf32, strided<[1], offset: ?>>
      linalg.copy ins(%s : memref<4xf32, strided<[1], offset: ?>>)
          outs(%y : memref<4xf32>)
      return
    })");
  EXPECT_FALSE(e.ok);
  EXPECT_TRUE(contains(e.diagnostics, "arith.addi")) << e.diagnostics;
}

} // namespace
