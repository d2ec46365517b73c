//===- CudaTypes.cpp - CUDA emitter: C types and literals -----------------===//
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/CudaEmitterInternal.h"

#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;

namespace spmd {
namespace cudagen {
namespace detail {

/// The C type a value of `type` has in memory.
std::optional<std::string> storageType(Type type) {
  if (type.isF32())
    return std::string("float");
  if (type.isF64())
    return std::string("double");
  if (type.isF16())
    return std::string("spmdk::f16");
  if (type.isBF16())
    return std::string("spmdk::bf16");
  if (type.isIndex() || type.isInteger(64))
    return std::string("long long");
  if (type.isInteger(32))
    return std::string("int");
  if (type.isInteger(16))
    return std::string("short");
  if (type.isInteger(8))
    return std::string("signed char");
  if (type.isInteger(1))
    return std::string("bool");
  return std::nullopt;
}
/// The C type a value of `type` is computed in.
std::string computeType(Type type) {
  if (type.isF16() || type.isBF16())
    return "float";
  return *storageType(type);
}
std::string unsignedType(Type type) {
  if (type.isIndex() || type.isInteger(64))
    return "unsigned long long";
  if (type.isInteger(32))
    return "unsigned";
  if (type.isInteger(16))
    return "unsigned short";
  if (type.isInteger(8))
    return "unsigned char";
  return "bool";
}
bool is16BitFloat(Type type) { return type.isF16() || type.isBF16(); }

std::string floatLiteral(double v, Type type) {
  bool isDouble = type.isF64();
  if (std::isnan(v))
    return isDouble ? "(double)__int_as_float(0x7fc00000)"
                    : "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) {
    std::string s = v > 0 ? "spmdk::posInf()" : "spmdk::negInf()";
    return isDouble ? "(double)" + s : s;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format(isDouble ? "%.17g" : "%.9g", v);
  if (text.find_first_of(".eE") == std::string::npos)
    text += ".0";
  if (!isDouble)
    text += "f";
  return v < 0 ? "(" + text + ")" : text;
}

std::string intLiteral(const APInt &v, Type type) {
  if (type.isInteger(1))
    return v.isZero() ? "false" : "true";
  int64_t s = v.getSExtValue();
  std::string ctype = *storageType(type);
  if (type.isIndex() || type.isInteger(64))
    return IExpr::constant(s).str();
  return "(" + ctype + ")(" + std::to_string(s) + ")";
}

} // namespace detail
} // namespace cudagen
} // namespace spmd
