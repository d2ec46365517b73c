//===- Npy.h - NumPy .npy files --------------------------------*- C++ -*-===//
//
// Reads and writes NumPy's .npy format (versions 1.0, 2.0 and 3.0 headers),
// little-endian, C order only. Element types: '<f4' f32, '<f8' f64, '<f2'
// f16, '<i4' i32, '<i8' i64, '|i1' i8 ('|b1' bools read as i8). NumPy has no
// bfloat16, so bf16 arrays are stored as their raw bits with descr '<u2' (read
// them in numpy with
// `(a.astype(np.uint32) << 16).view(np.float32)`); reading '<u2' yields bf16.
// Errors name the file and the problem.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_NPY_H
#define SPMD_RUNTIME_NPY_H

#include "runtime/DType.h"
#include "runtime/Status.h"

#include <string>
#include <vector>

namespace spmd {

struct NpyArray {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<char> data; // numElements(shape) * dtypeSize(dtype) bytes
};

/// The descr string for `dtype` ("<f4", ..., "<u2" for bf16).
const char *npyDescr(DType dtype);

Status readNpy(const std::string &path, NpyArray &array);
/// readNpy, and checks that the file holds `dtype` and `shape`.
Status readNpyExpecting(const std::string &path, DType dtype,
                        const Shape &shape, NpyArray &array);
Status writeNpy(const std::string &path, DType dtype, const Shape &shape,
                const void *data);

/// Parses a .npy file already in memory (`name` is used in messages).
Status parseNpy(const std::string &name, const char *bytes, size_t size,
                NpyArray &array);

} // namespace spmd

#endif // SPMD_RUNTIME_NPY_H
