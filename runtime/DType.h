//===- DType.h - Element types of runtime buffers --------------*- C++ -*-===//
//
// The element types a plan's buffers and the communicators handle, and the
// scalar conversions for the 16-bit floats (computed in f32 on the CPU).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_DTYPE_H
#define SPMD_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmd {

/// I8 holds i8 and i1 (one byte per element).
enum class DType : uint8_t { F32, F16, BF16, F64, I32, I64, I8 };

/// "f32", "f16", "bf16", "f64", "i32", "i64", "i8".
const char *dtypeName(DType dtype);
std::optional<DType> parseDType(std::string_view name);
size_t dtypeSize(DType dtype);
bool isFloat(DType dtype);

/// Row-major shapes; sizes may be zero.
using Shape = std::vector<int64_t>;
int64_t numElements(const Shape &shape);
/// "[2, 3]".
std::string shapeStr(const Shape &shape);

/// IEEE binary16 and bfloat16, round to nearest even.
uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);
uint16_t floatToBF16(float value);
float bf16ToFloat(uint16_t bits);

/// Element `index` of a buffer of `dtype` as a double, and the reverse (for
/// tests, I/O and reference checks, not for hot loops).
double loadAsDouble(const void *data, DType dtype, int64_t index);
void storeFromDouble(void *data, DType dtype, int64_t index, double value);

} // namespace spmd

#endif // SPMD_RUNTIME_DTYPE_H
