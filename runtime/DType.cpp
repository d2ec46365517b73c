//===- DType.cpp - Element types of runtime buffers -----------------------===//

#include "runtime/DType.h"

#include <cstring>

namespace spmd {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::I8:
    return "i8";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32,
                  DType::I64, DType::I8})
    if (name == dtypeName(d))
      return d;
  return std::nullopt;
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::I8:
    return 1;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  }
  return 0;
}

bool isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 ||
         dtype == DType::F64;
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

std::string shapeStr(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return s + "]";
}

uint16_t floatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t mant = x & 0x7fffff;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  if (exp == 0xff) // Inf stays Inf; NaN stays a (quiet) NaN.
    return static_cast<uint16_t>(sign | 0x7c00 |
                                 (mant ? 0x200 | (mant >> 13) : 0));
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f)
    return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {
    // Subnormal half (or zero): value = m * 2^-24.
    if (e < -10)
      return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t m = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (m & 1)))
      ++m; // A carry into the exponent field is the right answer.
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t h = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    ++h; // May carry into the exponent, up to Inf: correct rounding.
  return static_cast<uint16_t>(h);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000 | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      int32_t e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400));
      mant &= 0x3ff;
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else {
    x = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBF16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7fffffff) > 0x7f800000) // NaN: keep it a quiet NaN.
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

float bf16ToFloat(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

double loadAsDouble(const void *data, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::F32:
    return static_cast<const float *>(data)[i];
  case DType::F16:
    return halfToFloat(static_cast<const uint16_t *>(data)[i]);
  case DType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(data)[i]);
  case DType::F64:
    return static_cast<const double *>(data)[i];
  case DType::I32:
    return static_cast<const int32_t *>(data)[i];
  case DType::I64:
    return static_cast<double>(static_cast<const int64_t *>(data)[i]);
  case DType::I8:
    return static_cast<const int8_t *>(data)[i];
  }
  return 0;
}

void storeFromDouble(void *data, DType dtype, int64_t i, double v) {
  switch (dtype) {
  case DType::F32:
    static_cast<float *>(data)[i] = static_cast<float>(v);
    return;
  case DType::F16:
    static_cast<uint16_t *>(data)[i] = floatToHalf(static_cast<float>(v));
    return;
  case DType::BF16:
    static_cast<uint16_t *>(data)[i] = floatToBF16(static_cast<float>(v));
    return;
  case DType::F64:
    static_cast<double *>(data)[i] = v;
    return;
  case DType::I32:
    static_cast<int32_t *>(data)[i] = static_cast<int32_t>(v);
    return;
  case DType::I64:
    static_cast<int64_t *>(data)[i] = static_cast<int64_t>(v);
    return;
  case DType::I8:
    static_cast<int8_t *>(data)[i] = static_cast<int8_t>(v);
    return;
  }
}

} // namespace spmd
