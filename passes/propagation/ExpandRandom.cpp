//===- ExpandRandom.cpp - spmd-expand-random ------------------------------===//
//
// Rewrites every spmd.random into a linalg.generic that computes Philox4x32-10
// from the element's global index (linalg.index), the seed and the step.
// Why here, before propagation: the generic is elementwise over its result
// with no tensor inputs but two scalars, so any layout fits it, and
// spmd-partition already turns a sharded loop's linalg.index into the global
// index (adding the rank's chunk offset). Each rank then computes exactly
// its shard's elements of the one global stream: no communication, and the
// same values on 1 or N ranks, uneven and empty shards included.
//
//===----------------------------------------------------------------------===//

#include "passes/propagation/Passes.h"

#include "dialects/spmd/SPMDOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <array>
#include <cmath>

namespace spmd {
#define GEN_PASS_DEF_SPMDEXPANDRANDOM
#include "passes/propagation/Passes.h.inc"
} // namespace spmd

using namespace mlir;

namespace {

// Philox4x32's round multipliers and Weyl key increments (Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3", SC'11).
constexpr uint64_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
constexpr int kRounds = 10;

/// Builds the scalar code of one element inside the generic's body.
struct PhiloxBuilder {
  OpBuilder &b;
  Location loc;
  Type i32, i64;

  PhiloxBuilder(OpBuilder &b, Location loc)
      : b(b), loc(loc), i32(b.getI32Type()), i64(b.getI64Type()) {}

  Value c64(uint64_t v) {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i64, v));
  }
  Value c32(uint32_t v) {
    return arith::ConstantOp::create(b, loc,
                                     b.getIntegerAttr(i32, APInt(32, v)));
  }
  Value lo(Value v) { return arith::TruncIOp::create(b, loc, i32, v); }
  Value hi(Value v) { return lo(arith::ShRUIOp::create(b, loc, v, c64(32))); }
  /// (high, low) 32-bit halves of the 64-bit product m * x.
  std::pair<Value, Value> mulhilo(uint64_t m, Value x) {
    Value wide = arith::ExtUIOp::create(b, loc, i64, x);
    Value p = arith::MulIOp::create(b, loc, wide, c64(m));
    return {hi(p), lo(p)};
  }
  Value xori(Value x, Value y) { return arith::XOrIOp::create(b, loc, x, y); }

  /// Philox4x32-10 of counter (c0..c3) under key (k0, k1): four words.
  std::array<Value, 4> philox(std::array<Value, 4> c, Value k0, Value k1) {
    for (int r = 0; r < kRounds; ++r) {
      auto [hi0, lo0] = mulhilo(kMul0, c[0]);
      auto [hi1, lo1] = mulhilo(kMul1, c[2]);
      c = {xori(xori(hi1, c[1]), k0), lo1, xori(xori(hi0, c[3]), k1), lo0};
      if (r + 1 < kRounds) {
        k0 = arith::AddIOp::create(b, loc, k0, c32(kWeyl0));
        k1 = arith::AddIOp::create(b, loc, k1, c32(kWeyl1));
      }
    }
    return c;
  }

  /// A float32 in [0, 1) from the top 24 bits of a word (exact).
  Value unit(Value word, bool open0 = false) {
    Value bits = arith::ShRUIOp::create(b, loc, word, c32(8));
    Value f = arith::UIToFPOp::create(b, loc, b.getF32Type(), bits);
    if (open0) // (0, 1]: for a logarithm
      f = arith::AddFOp::create(b, loc, f, f32(1.0));
    return arith::MulFOp::create(b, loc, f, f32(1.0 / (1 << 24)));
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
};

/// The value of one element of distribution `kind` as `element`.
Value sample(PhiloxBuilder &p, spmd::RandomOp op, std::array<Value, 4> words,
             Type element) {
  OpBuilder &b = p.b;
  Location loc = p.loc;
  double a = op.getA().convertToDouble(), bb = op.getB().convertToDouble();
  StringRef kind = op.getDistribution();
  Value v;
  if (kind == "bernoulli") {
    Value keep = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                       p.unit(words[0]), p.f32(a));
    if (auto intType = dyn_cast<IntegerType>(element))
      return intType.getWidth() == 1
                 ? keep
                 : arith::ExtUIOp::create(b, loc, element, keep).getResult();
    Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 1.0));
    Value zero =
        arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
    return arith::SelectOp::create(b, loc, keep, one, zero);
  }
  if (kind == "uniform") {
    v = p.unit(words[0]);
    if (a != 0.0 || bb != 1.0)
      v = arith::AddFOp::create(
          b, loc, p.f32(a),
          arith::MulFOp::create(b, loc, v, p.f32(bb - a)).getResult());
  } else { // normal: Box-Muller
    Value u1 = p.unit(words[0], /*open0=*/true), u2 = p.unit(words[1]);
    Value r = math::SqrtOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, p.f32(-2.0),
                              math::LogOp::create(b, loc, u1).getResult())
            .getResult());
    Value angle = arith::MulFOp::create(b, loc, u2, p.f32(2.0 * M_PI));
    v = arith::MulFOp::create(b, loc, r,
                              math::CosOp::create(b, loc, angle).getResult());
    if (a != 0.0 || bb != 1.0)
      v = arith::AddFOp::create(
          b, loc, p.f32(a),
          arith::MulFOp::create(b, loc, v, p.f32(bb)).getResult());
  }
  auto floatType = cast<FloatType>(element);
  if (floatType.getWidth() < 32)
    return arith::TruncFOp::create(b, loc, element, v);
  if (floatType.getWidth() > 32)
    return arith::ExtFOp::create(b, loc, element, v);
  return v;
}

struct SPMDExpandRandomPass
    : public ::spmd::impl::SPMDExpandRandomBase<SPMDExpandRandomPass> {
  void runOnOperation() override {
    bool expanded = false;
    getOperation().walk([&](func::FuncOp func) {
      // Disjoint counter ranges in program order, after any fixed ones.
      int64_t next = 0;
      func.walk([&](spmd::RandomOp op) {
        if (std::optional<uint64_t> offset = op.getOffset())
          next =
              std::max<int64_t>(next, *offset + op.getType().getNumElements());
      });
      SmallVector<spmd::RandomOp> ops;
      func.walk([&](spmd::RandomOp op) { ops.push_back(op); });
      for (spmd::RandomOp op : ops) {
        int64_t offset;
        if (std::optional<uint64_t> fixed = op.getOffset()) {
          offset = *fixed;
        } else {
          offset = next;
          next += op.getType().getNumElements();
        }
        expand(op, offset);
        expanded = true;
      }
    });
    // Unchanged IR needs no verification after the pass (a full walk).
    if (!expanded)
      markAllAnalysesPreserved();
  }

  void expand(spmd::RandomOp op, int64_t offset) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    Value init =
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    AffineMap scalar = AffineMap::get(rank, 0, b.getContext());
    SmallVector<AffineMap> maps = {scalar, scalar,
                                   b.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    // Row-major strides of the global shape.
    SmallVector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * type.getDimSize(d + 1);
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{op.getSeed(), op.getStep()},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &nb, Location nloc, ValueRange args) {
          PhiloxBuilder p(nb, nloc);
          Value n = p.c64(static_cast<uint64_t>(offset));
          for (int64_t d = 0; d < rank; ++d) {
            Value index = linalg::IndexOp::create(nb, nloc, d);
            Value i = arith::IndexCastOp::create(nb, nloc, p.i64, index);
            if (strides[d] != 1)
              i = arith::MulIOp::create(
                  nb, nloc, i, p.c64(static_cast<uint64_t>(strides[d])));
            n = arith::AddIOp::create(nb, nloc, n, i);
          }
          Value seed = args[0], step = args[1];
          std::array<Value, 4> words =
              p.philox({p.lo(n), p.hi(n), p.lo(step), p.hi(step)}, p.lo(seed),
                       p.hi(seed));
          linalg::YieldOp::create(nb, nloc,
                                  sample(p, op, words, type.getElementType()));
        });
    // Keep what the op said about its layout (a user's spmd.layout).
    for (NamedAttribute attr : op->getDiscardableAttrs())
      generic->setAttr(attr.getName(), attr.getValue());
    op.replaceAllUsesWith(generic.getResult(0));
    op.erase();
  }
};

} // namespace
