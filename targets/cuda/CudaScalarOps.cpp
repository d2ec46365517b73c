//===- CudaScalarOps.cpp - CUDA emitter: arith/math ops as C --------------===//
//
// The ops of a linalg region printed as C expressions; f16/bf16 values are
// computed in f32. An op without an exact CUDA form is an error.
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/CudaEmitterInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;

namespace spmd {
namespace cudagen {
namespace detail {

LogicalResult KernelEmitter::emitScalarOp(Operation *op,
                                          const std::string &indent) {
  if (op->getNumResults() != 1)
    return fail(op, "expected one result");
  Type type = op->getResult(0).getType();
  if (!storageType(type))
    return fail(op, "its result type is not f16/bf16/f32/f64/i1/i8/i16/i32/"
                    "i64/index");
  for (Value operand : op->getOperands())
    if (!storageType(operand.getType()))
      return fail(op, "an operand type is not f16/bf16/f32/f64/i1/i8/i16/"
                      "i32/i64/index");
  for (Value operand : op->getOperands())
    if (!names.count(operand))
      return fail(op, "an operand is defined outside the linalg region and "
                      "is not a constant or a scalar argument");
  std::string ct = computeType(type);
  bool isDouble = type.isF64();
  auto a = [&](unsigned i) { return value(op->getOperand(i)); };
  auto opType = [&](unsigned i) { return op->getOperand(i).getType(); };
  auto fn = [&](StringRef f, unsigned n) {
    std::string s = (isDouble ? f : (f + "f")).str() + "(";
    for (unsigned i = 0; i < n; ++i)
      s += (i ? ", " : "") + a(i);
    return s + ")";
  };
  auto wrapInt = [&](StringRef sym) {
    // Integer + - * wrap (through the unsigned type: no signed overflow).
    if (type.isInteger(1))
      return "(bool)(" + a(0) + " " + sym.str() + " " + a(1) + ")";
    std::string ut = unsignedType(type);
    return "(" + ct + ")((" + ut + ")" + a(0) + " " + sym.str() + " (" + ut +
           ")" + a(1) + ")";
  };
  auto binary = [&](StringRef sym) {
    return "(" + ct + ")(" + a(0) + " " + sym.str() + " " + a(1) + ")";
  };
  auto unsignedBinary = [&](StringRef sym) {
    std::string ut = unsignedType(type);
    return "(" + ct + ")((" + ut + ")" + a(0) + " " + sym.str() + " (" + ut +
           ")" + a(1) + ")";
  };
  std::string expr;
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    if (auto f = dyn_cast<FloatAttr>(c.getValue()))
      expr = floatLiteral(f.getValueAsDouble(), type);
    else if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
      expr = intLiteral(i.getValue(), type);
    else
      return fail(op, "only scalar float and integer constants are printed");
  } else if (auto idx = dyn_cast<linalg::IndexOp>(op)) {
    expr = "i" + std::to_string(idx.getDim());
  } else if (isa<arith::AddFOp>(op)) {
    expr = binary("+");
  } else if (isa<arith::SubFOp>(op)) {
    expr = binary("-");
  } else if (isa<arith::MulFOp>(op)) {
    expr = binary("*");
  } else if (isa<arith::DivFOp>(op)) {
    expr = binary("/");
  } else if (isa<arith::RemFOp>(op)) {
    expr = fn("fmod", 2);
  } else if (isa<arith::NegFOp>(op)) {
    expr = "(-" + a(0) + ")";
  } else if (isa<arith::MaximumFOp>(op)) {
    expr = "spmdgMaximumF(" + a(0) + ", " + a(1) + ")";
  } else if (isa<arith::MinimumFOp>(op)) {
    expr = "spmdgMinimumF(" + a(0) + ", " + a(1) + ")";
  } else if (isa<arith::MaxNumFOp>(op)) {
    expr = fn("fmax", 2);
  } else if (isa<arith::MinNumFOp>(op)) {
    expr = fn("fmin", 2);
  } else if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    std::string x = a(0), y = a(1);
    using P = arith::CmpFPredicate;
    switch (cmp.getPredicate()) {
    case P::AlwaysFalse:
      expr = "false";
      break;
    case P::AlwaysTrue:
      expr = "true";
      break;
    case P::OEQ:
      expr = "(" + x + " == " + y + ")";
      break;
    case P::OGT:
      expr = "(" + x + " > " + y + ")";
      break;
    case P::OGE:
      expr = "(" + x + " >= " + y + ")";
      break;
    case P::OLT:
      expr = "(" + x + " < " + y + ")";
      break;
    case P::OLE:
      expr = "(" + x + " <= " + y + ")";
      break;
    case P::ONE:
      expr = "(" + x + " < " + y + " || " + x + " > " + y + ")";
      break;
    case P::ORD:
      expr = "(" + x + " == " + x + " && " + y + " == " + y + ")";
      break;
    case P::UEQ:
      expr = "!(" + x + " < " + y + " || " + x + " > " + y + ")";
      break;
    case P::UGT:
      expr = "!(" + x + " <= " + y + ")";
      break;
    case P::UGE:
      expr = "!(" + x + " < " + y + ")";
      break;
    case P::ULT:
      expr = "!(" + x + " >= " + y + ")";
      break;
    case P::ULE:
      expr = "!(" + x + " > " + y + ")";
      break;
    case P::UNE:
      expr = "(" + x + " != " + y + ")";
      break;
    case P::UNO:
      expr = "(" + x + " != " + x + " || " + y + " != " + y + ")";
      break;
    }
  } else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    std::string x = a(0), y = a(1);
    std::string ut = unsignedType(opType(0));
    std::string ux = "(" + ut + ")" + x, uy = "(" + ut + ")" + y;
    using P = arith::CmpIPredicate;
    switch (cmp.getPredicate()) {
    case P::eq:
      expr = "(" + x + " == " + y + ")";
      break;
    case P::ne:
      expr = "(" + x + " != " + y + ")";
      break;
    case P::slt:
      expr = "(" + x + " < " + y + ")";
      break;
    case P::sle:
      expr = "(" + x + " <= " + y + ")";
      break;
    case P::sgt:
      expr = "(" + x + " > " + y + ")";
      break;
    case P::sge:
      expr = "(" + x + " >= " + y + ")";
      break;
    case P::ult:
      expr = "(" + ux + " < " + uy + ")";
      break;
    case P::ule:
      expr = "(" + ux + " <= " + uy + ")";
      break;
    case P::ugt:
      expr = "(" + ux + " > " + uy + ")";
      break;
    case P::uge:
      expr = "(" + ux + " >= " + uy + ")";
      break;
    }
    if (opType(0).isInteger(1) &&
        llvm::is_contained({P::slt, P::sle, P::sgt, P::sge},
                           cmp.getPredicate()))
      return fail(op, "signed comparison of i1 values");
  } else if (isa<arith::SelectOp>(op)) {
    if (!opType(0).isInteger(1))
      return fail(op, "a vector condition");
    expr = "(" + a(0) + " ? " + a(1) + " : " + a(2) + ")";
  } else if (isa<arith::AddIOp>(op)) {
    expr = type.isInteger(1) ? "(bool)(" + a(0) + " ^ " + a(1) + ")"
                             : wrapInt("+");
  } else if (isa<arith::SubIOp>(op)) {
    expr = type.isInteger(1) ? "(bool)(" + a(0) + " ^ " + a(1) + ")"
                             : wrapInt("-");
  } else if (isa<arith::MulIOp>(op)) {
    expr = type.isInteger(1) ? "(bool)(" + a(0) + " & " + a(1) + ")"
                             : wrapInt("*");
  } else if (isa<arith::AndIOp>(op)) {
    expr = binary("&");
  } else if (isa<arith::OrIOp>(op)) {
    expr = binary("|");
  } else if (isa<arith::XOrIOp>(op)) {
    expr = binary("^");
  } else if (isa<arith::DivSIOp, arith::RemSIOp, arith::DivUIOp, arith::RemUIOp,
                 arith::ShLIOp, arith::ShRSIOp, arith::ShRUIOp>(op) &&
             type.isInteger(1)) {
    return fail(op, "i1 division and shifts are not printed");
  } else if (isa<arith::DivSIOp>(op)) {
    expr = binary("/");
  } else if (isa<arith::RemSIOp>(op)) {
    expr = binary("%");
  } else if (isa<arith::DivUIOp>(op)) {
    expr = unsignedBinary("/");
  } else if (isa<arith::RemUIOp>(op)) {
    expr = unsignedBinary("%");
  } else if (isa<arith::ShLIOp>(op)) {
    expr = unsignedBinary("<<");
  } else if (isa<arith::ShRUIOp>(op)) {
    expr = unsignedBinary(">>");
  } else if (isa<arith::ShRSIOp>(op)) {
    expr = binary(">>");
  } else if (isa<arith::MaxSIOp>(op)) {
    expr = "(" + a(0) + " > " + a(1) + " ? " + a(0) + " : " + a(1) + ")";
  } else if (isa<arith::MinSIOp>(op)) {
    expr = "(" + a(0) + " < " + a(1) + " ? " + a(0) + " : " + a(1) + ")";
  } else if (isa<arith::MaxUIOp, arith::MinUIOp>(op)) {
    std::string ut = unsignedType(type);
    std::string cmpSym = isa<arith::MaxUIOp>(op) ? " > " : " < ";
    expr = "((" + ut + ")" + a(0) + cmpSym + "(" + ut + ")" + a(1) + " ? " +
           a(0) + " : " + a(1) + ")";
  } else if (isa<arith::ExtFOp>(op)) {
    expr = "(" + ct + ")" + a(0);
  } else if (isa<arith::TruncFOp>(op)) {
    // Rounded to the narrow type's precision, then computed in f32.
    if (type.isF16())
      expr = "spmdgRoundF16((float)" + a(0) + ")";
    else if (type.isBF16())
      expr = "spmdgRoundBF16((float)" + a(0) + ")";
    else
      expr = "(" + ct + ")" + a(0);
  } else if (isa<arith::SIToFPOp>(op) || isa<arith::UIToFPOp>(op)) {
    std::string src =
        isa<arith::UIToFPOp>(op)
            ? "(" + unsignedType(opType(0)) + ")" + a(0)
            : (opType(0).isInteger(1) ? "(" + a(0) + " ? -1 : 0)" : a(0));
    if (type.isF16())
      expr = "spmdgRoundF16((float)" + src + ")";
    else if (type.isBF16())
      expr = "spmdgRoundBF16((float)" + src + ")";
    else
      expr = "(" + ct + ")" + src;
  } else if (isa<arith::FPToSIOp>(op)) {
    if (type.isInteger(1))
      return fail(op, "conversion to i1");
    expr = "(" + ct + ")" + a(0);
  } else if (isa<arith::FPToUIOp>(op)) {
    if (type.isInteger(1))
      return fail(op, "conversion to i1");
    expr = "(" + ct + ")(" + unsignedType(type) + ")" + a(0);
  } else if (isa<arith::ExtSIOp>(op)) {
    expr = opType(0).isInteger(1) ? "(" + ct + ")(" + a(0) + " ? -1 : 0)"
                                  : "(" + ct + ")" + a(0);
  } else if (isa<arith::ExtUIOp>(op) ||
             (isa<arith::IndexCastUIOp>(op) &&
              (type.isIndex() || type.getIntOrFloatBitWidth() >= 64))) {
    // Zero extension (index_castui to a type at least as wide as index too).
    expr = "(" + ct + ")(" + unsignedType(opType(0)) + ")" + a(0);
  } else if (isa<arith::TruncIOp, arith::IndexCastOp, arith::IndexCastUIOp>(
                 op)) {
    // Truncation, or sign extension (index_cast to a wider type).
    expr =
        type.isInteger(1) ? "(bool)(" + a(0) + " & 1)" : "(" + ct + ")" + a(0);
  } else if (isa<math::ExpOp>(op)) {
    expr = fn("exp", 1);
  } else if (isa<math::Exp2Op>(op)) {
    expr = fn("exp2", 1);
  } else if (isa<math::ExpM1Op>(op)) {
    expr = fn("expm1", 1);
  } else if (isa<math::LogOp>(op)) {
    expr = fn("log", 1);
  } else if (isa<math::Log2Op>(op)) {
    expr = fn("log2", 1);
  } else if (isa<math::Log10Op>(op)) {
    expr = fn("log10", 1);
  } else if (isa<math::Log1pOp>(op)) {
    expr = fn("log1p", 1);
  } else if (isa<math::SqrtOp>(op)) {
    expr = fn("sqrt", 1);
  } else if (isa<math::RsqrtOp>(op)) {
    expr = isDouble ? "(1.0 / sqrt(" + a(0) + "))" : "rsqrtf(" + a(0) + ")";
  } else if (isa<math::TanhOp>(op)) {
    expr = fn("tanh", 1);
  } else if (isa<math::ErfOp>(op)) {
    expr = fn("erf", 1);
  } else if (isa<math::AbsFOp>(op)) {
    expr = fn("fabs", 1);
  } else if (isa<math::PowFOp>(op)) {
    expr = fn("pow", 2);
  } else if (isa<math::SinOp>(op)) {
    expr = fn("sin", 1);
  } else if (isa<math::CosOp>(op)) {
    expr = fn("cos", 1);
  } else if (isa<math::TanOp>(op)) {
    expr = fn("tan", 1);
  } else if (isa<math::AtanOp>(op)) {
    expr = fn("atan", 1);
  } else if (isa<math::Atan2Op>(op)) {
    expr = fn("atan2", 2);
  } else if (isa<math::FloorOp>(op)) {
    expr = fn("floor", 1);
  } else if (isa<math::CeilOp>(op)) {
    expr = fn("ceil", 1);
  } else if (isa<math::RoundOp>(op)) {
    expr = fn("round", 1);
  } else if (isa<math::RoundEvenOp>(op)) {
    expr = fn("rint", 1);
  } else if (isa<math::TruncOp>(op)) {
    expr = fn("trunc", 1);
  } else if (isa<math::CopySignOp>(op)) {
    expr = fn("copysign", 2);
  } else if (isa<math::FmaOp>(op)) {
    expr = fn("fma", 3);
  } else if (isa<math::AbsIOp>(op)) {
    expr = "(" + ct + ")(" + a(0) + " < 0 ? -" + a(0) + " : " + a(0) + ")";
  } else {
    return fail(op, "no CUDA form for this op");
  }
  // Ops on 16-bit float types are computed in f32 (the kernel library's
  // convention); only explicit conversions round.
  std::string name = fresh("v");
  os << indent << "const " << ct << " " << name << " = " << expr << ";\n";
  names[op->getResult(0)] = name;
  return success();
}

} // namespace detail
} // namespace cudagen
} // namespace spmd
