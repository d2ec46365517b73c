//===- Checked.h - Overflow-checked 64-bit size arithmetic ------*- C++ -*-===//
//
// Sizes, offsets and byte counts read from IR, plan files or .npy headers
// are untrusted: a product or sum that wraps would yield a small buffer for
// a huge tensor (memory corruption) or pass a bound check it should fail.
// These helpers return std::nullopt instead of wrapping.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CORE_CHECKED_H
#define SPMD_CORE_CHECKED_H

#include <cstdint>
#include <optional>

namespace spmd {

inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// The product of `dims` times `scale` (an element size), or std::nullopt
/// when it overflows int64 or a dim is negative (dynamic).
template <typename Range>
std::optional<int64_t> checkedProduct(const Range &dims, int64_t scale = 1) {
  std::optional<int64_t> n = scale;
  for (int64_t d : dims) {
    if (d < 0)
      return std::nullopt;
    if (!(n = checkedMul(*n, d)))
      return std::nullopt;
  }
  return n;
}

/// Whether [offset, offset + size) lies within [0, limit), without
/// overflow.
inline bool fitsWithin(int64_t offset, int64_t size, int64_t limit) {
  if (offset < 0 || size < 0)
    return false;
  std::optional<int64_t> end = checkedAdd(offset, size);
  return end && *end <= limit;
}

} // namespace spmd

#endif // SPMD_CORE_CHECKED_H
