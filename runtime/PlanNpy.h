//===- Npy.h - Read and write .npy files ------------------------*- C++ -*-===//
//
// NumPy's .npy format, version 1.0-3.0, little-endian C-order arrays of
// f2/f4/f8/i1/i4/i8 (bf16 has no NumPy type: it is written as f4).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_PLANNPY_H
#define SPMD_RUNTIME_PLANNPY_H

#include "runtime/Plan.h"

#include <string>
#include <vector>

namespace spmd::plan {

struct NpyArray {
  ElemType type = ElemType::F32;
  Shape shape;
  std::vector<char> data;
};

/// Reads `path`; on failure returns a message naming the file and problem.
std::string readNpy(const std::string &path, NpyArray &array);
std::string writeNpy(const std::string &path, const NpyArray &array);

} // namespace spmd::plan

#endif // SPMD_RUNTIME_PLANNPY_H
