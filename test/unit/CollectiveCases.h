//===- CollectiveCases.h - Collective test cases and references -*- C++ -*-===//
//
// Shared by the in-process and the MPI tests: a list of collective calls
// (kinds, dims, dtypes, even/uneven/empty sizes) and a serial reference that
// each rank computes for itself from every member's (deterministic) input.
// Input values are small integers, so sums are exact in every dtype and
// backends that reduce in another order must still match exactly.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TEST_UNIT_COLLECTIVECASES_H
#define SPMD_TEST_UNIT_COLLECTIVECASES_H

#include "runtime/Communicator.h"

#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace spmd {
namespace testcases {

struct Case {
  std::string name;
  CollectiveKind kind;
  DType dtype = DType::F32;
  ReduceKind reduce = ReduceKind::Sum;
  int64_t dim0 = -1, dim1 = -1;
  /// The input shape of group member `i` of `n`.
  std::function<Shape(int64_t i, int64_t n)> shapeOf;
  uint64_t seed = 0;
};

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

/// Element `idx` of device `device`'s input: an integer in [-8, 8].
inline double inputValue(uint64_t seed, int64_t device, int64_t idx) {
  uint64_t h = mix(seed * 1000003ULL + static_cast<uint64_t>(device) * 7919ULL +
                   mix(static_cast<uint64_t>(idx)));
  return static_cast<double>(static_cast<int64_t>(h % 17) - 8);
}

inline std::vector<char> makeInput(const Case &c, int64_t device,
                                   const Shape &shape) {
  int64_t n = numElements(shape);
  std::vector<char> data(n * dtypeSize(c.dtype) + 1);
  for (int64_t i = 0; i < n; ++i)
    storeFromDouble(data.data(), c.dtype, i, inputValue(c.seed, device, i));
  return data;
}

inline std::vector<int64_t> unravel(int64_t idx, const Shape &shape) {
  std::vector<int64_t> pos(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    pos[d] = idx % shape[d];
    idx /= shape[d];
  }
  return pos;
}
inline int64_t ravel(const std::vector<int64_t> &pos, const Shape &shape) {
  int64_t idx = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    idx = idx * shape[d] + pos[d];
  return idx;
}

/// Reduces values like the runtime promises: f16/bf16/f32 in float, f64 in
/// double, integers in integers (avg truncates), in member order.
inline double referenceReduce(DType dtype, ReduceKind kind,
                              const std::vector<double> &v) {
  auto run = [&](auto zero) -> double {
    using T = decltype(zero);
    T acc = static_cast<T>(v[0]);
    for (size_t i = 1; i < v.size(); ++i) {
      T x = static_cast<T>(v[i]);
      if (kind == ReduceKind::Sum || kind == ReduceKind::Avg)
        acc += x;
      else if (kind == ReduceKind::Max)
        acc = x > acc ? x : acc;
      else
        acc = x < acc ? x : acc;
    }
    if (kind == ReduceKind::Avg)
      acc = static_cast<T>(acc / static_cast<T>(v.size()));
    return static_cast<double>(acc);
  };
  if (dtype == DType::F64)
    return run(0.0);
  if (dtype == DType::I32 || dtype == DType::I64)
    return run(int64_t(0));
  return run(0.0f);
}

/// The output block member `me` of the group must get.
inline void reference(const Case &c, const std::vector<int64_t> &group,
                      int64_t me, Shape &outShape, std::vector<double> &out) {
  int64_t n = static_cast<int64_t>(group.size());
  std::vector<Shape> shapes;
  for (int64_t i = 0; i < n; ++i)
    shapes.push_back(c.shapeOf(i, n));
  auto in = [&](int64_t i, const std::vector<int64_t> &pos) {
    return inputValue(c.seed, group[i], ravel(pos, shapes[i]));
  };
  outShape = shapes[me];
  switch (c.kind) {
  case CollectiveKind::AllGather: {
    outShape[c.dim0] = 0;
    for (const Shape &s : shapes)
      outShape[c.dim0] += s[c.dim0];
    break;
  }
  case CollectiveKind::ReduceScatter:
    outShape[c.dim0] = chunkRange(shapes[0][c.dim0], n, me).size;
    break;
  case CollectiveKind::AllToAll: {
    outShape[c.dim0] = chunkRange(shapes[0][c.dim0], n, me).size;
    int64_t total = 0;
    for (const Shape &s : shapes)
      total += c.dim0 == c.dim1 ? chunkRange(s[c.dim0], n, me).size : s[c.dim1];
    outShape[c.dim1] = total;
    break;
  }
  default:
    break;
  }
  int64_t count = numElements(outShape);
  out.assign(count, 0);
  for (int64_t k = 0; k < count; ++k) {
    std::vector<int64_t> pos = unravel(k, outShape);
    switch (c.kind) {
    case CollectiveKind::AllGather: {
      int64_t i = 0;
      while (pos[c.dim0] >= shapes[i][c.dim0]) {
        pos[c.dim0] -= shapes[i][c.dim0];
        ++i;
      }
      out[k] = in(i, pos);
      break;
    }
    case CollectiveKind::AllReduce:
    case CollectiveKind::ReduceScatter: {
      if (c.kind == CollectiveKind::ReduceScatter)
        pos[c.dim0] += chunkRange(shapes[0][c.dim0], n, me).offset;
      std::vector<double> vals;
      for (int64_t i = 0; i < n; ++i)
        vals.push_back(in(i, pos));
      out[k] = referenceReduce(c.dtype, c.reduce, vals);
      break;
    }
    case CollectiveKind::AllToAll: {
      // Find the sender along the concat dim, then the sender's element.
      int64_t i = 0;
      auto pieceSize = [&](int64_t j) {
        return c.dim0 == c.dim1 ? chunkRange(shapes[j][c.dim0], n, me).size
                                : shapes[j][c.dim1];
      };
      while (pos[c.dim1] >= pieceSize(i)) {
        pos[c.dim1] -= pieceSize(i);
        ++i;
      }
      pos[c.dim0] += chunkRange(shapes[i][c.dim0], n, me).offset;
      out[k] = in(i, pos);
      break;
    }
    default:
      break;
    }
  }
}

/// Runs case `c` on `comm` over `axes` and checks this rank's output element
/// by element; returns "" or what went wrong.
inline std::string runCase(Communicator &comm, const Axes &axes,
                           const Case &c) {
  const Mesh &mesh = comm.mesh();
  std::vector<int64_t> group = mesh.group(comm.device(), axes);
  int64_t n = static_cast<int64_t>(group.size());
  int64_t me = mesh.groupIndex(comm.device(), axes);
  Shape shape = c.shapeOf(me, n);
  std::vector<char> input = makeInput(c, comm.device(), shape);
  Shape expectShape;
  std::vector<double> expect;
  reference(c, group, me, expectShape, expect);
  size_t es = dtypeSize(c.dtype);
  size_t bytes = expect.size() * es;
  // Exactly the needed capacity, followed by a guard that must survive.
  constexpr size_t kGuard = 64;
  std::vector<unsigned char> output(bytes + kGuard, 0xAB);
  InBlock in{input.data(), c.dtype, shape};
  OutBlock out{output.data(), bytes};
  CollectiveResult r;
  switch (c.kind) {
  case CollectiveKind::AllGather:
    r = comm.allGather(in, out, axes, c.dim0);
    break;
  case CollectiveKind::AllReduce:
    r = comm.allReduce(in, out, axes, c.reduce);
    break;
  case CollectiveKind::ReduceScatter:
    r = comm.reduceScatter(in, out, axes, c.dim0, c.reduce);
    break;
  case CollectiveKind::AllToAll:
    r = comm.allToAll(in, out, axes, c.dim0, c.dim1);
    break;
  default:
    return "unsupported case kind";
  }
  std::string where =
      "case " + c.name + " on rank " + std::to_string(comm.device()) + ": ";
  if (!r.ok())
    return where + "error: " + r.status.message();
  if (r.shape != expectShape)
    return where + "shape " + shapeStr(r.shape) + ", expected " +
           shapeStr(expectShape);
  for (size_t k = 0; k < expect.size(); ++k) {
    double got = loadAsDouble(output.data(), c.dtype, static_cast<int64_t>(k));
    // The expected value rounded to the dtype like the runtime stores it.
    std::vector<char> tmp(8);
    storeFromDouble(tmp.data(), c.dtype, 0, expect[k]);
    double want = loadAsDouble(tmp.data(), c.dtype, 0);
    if (got != want)
      return where + "element " + std::to_string(k) + " is " +
             std::to_string(got) + ", expected " + std::to_string(want);
  }
  for (size_t k = bytes; k < output.size(); ++k)
    if (output[k] != 0xAB)
      return where + "wrote past its output (byte " + std::to_string(k) + ")";
  return "";
}

/// Uneven per-member sizes: 3, 2, 1, 0, 3, ... (zero from 4 members on).
inline int64_t unevenSize(int64_t i) { return (i * 7 + 3) % 4; }
/// Member 0 contributes nothing.
inline int64_t zeroFirstSize(int64_t i) { return i % 3; }

/// Every case for one collective kind; `seed` separates runs.
inline std::vector<Case> casesFor(CollectiveKind kind, uint64_t seed) {
  std::vector<Case> cases;
  auto add = [&](Case c) {
    c.kind = kind;
    c.seed = seed + cases.size() * 131;
    cases.push_back(std::move(c));
  };
  const DType allTypes[] = {DType::F32, DType::F16, DType::BF16,
                            DType::F64, DType::I32, DType::I64};
  const ReduceKind allKinds[] = {ReduceKind::Sum, ReduceKind::Avg,
                                 ReduceKind::Max, ReduceKind::Min};
  switch (kind) {
  case CollectiveKind::AllGather:
    for (int64_t dim = 0; dim < 3; ++dim)
      for (int variant = 0; variant < 3; ++variant)
        for (DType t : {DType::F32, DType::F16, DType::I64}) {
          Case c;
          c.name = "allGather dim " + std::to_string(dim) + " variant " +
                   std::to_string(variant) + " " + dtypeName(t);
          c.dtype = t;
          c.dim0 = dim;
          c.shapeOf = [dim, variant](int64_t i, int64_t) {
            Shape s{3, 4, 2};
            s[dim] = variant == 0   ? 2
                     : variant == 1 ? unevenSize(i)
                                    : zeroFirstSize(i);
            return s;
          };
          add(c);
        }
    break;
  case CollectiveKind::AllReduce:
    for (DType t : allTypes)
      for (ReduceKind k : allKinds)
        for (Shape s : {Shape{5, 7}, Shape{}, Shape{0, 4}, Shape{301, 67}}) {
          Case c;
          c.name = std::string("allReduce ") + reduceKindName(k) + " " +
                   dtypeName(t) + " " + shapeStr(s);
          c.dtype = t;
          c.reduce = k;
          c.shapeOf = [s](int64_t, int64_t) { return s; };
          add(c);
        }
    break;
  case CollectiveKind::ReduceScatter:
    for (DType t : allTypes)
      for (ReduceKind k : allKinds)
        for (int64_t dim = 0; dim < 2; ++dim)
          for (int variant = 0; variant < 4; ++variant) {
            Case c;
            c.name = std::string("reduceScatter ") + reduceKindName(k) + " " +
                     dtypeName(t) + " dim " + std::to_string(dim) +
                     " variant " + std::to_string(variant);
            c.dtype = t;
            c.reduce = k;
            c.dim0 = dim;
            c.shapeOf = [dim, variant](int64_t, int64_t n) {
              Shape s{3, 5, 2};
              // even, uneven, fewer rows than members, nothing at all
              s[dim] = variant == 0   ? 2 * n
                       : variant == 1 ? 2 * n + 1
                       : variant == 2 ? n - 1
                                      : 0;
              return s;
            };
            add(c);
          }
    break;
  case CollectiveKind::AllToAll:
    for (auto [split, concat] : std::vector<std::pair<int64_t, int64_t>>{
             {0, 1}, {1, 0}, {2, 0}, {1, 2}, {0, 0}, {1, 1}})
      for (int variant = 0; variant < 3; ++variant)
        for (DType t : {DType::F32, DType::BF16, DType::I32}) {
          Case c;
          c.name = "allToAll split " + std::to_string(split) + " concat " +
                   std::to_string(concat) + " variant " +
                   std::to_string(variant) + " " + dtypeName(t);
          c.dtype = t;
          c.dim0 = split;
          c.dim1 = concat;
          c.shapeOf = [split = split, concat = concat, variant](int64_t i,
                                                                int64_t n) {
            Shape s{3, 4, 2};
            // The split dim: even, uneven (with empty chunks), or tiny.
            s[split] = variant == 0 ? 2 * n : variant == 1 ? n + 1 : 1;
            // Members' sizes on the concat dim may differ.
            if (concat != split)
              s[concat] = variant == 0 ? 2 : unevenSize(i);
            else if (variant == 1)
              s[split] = n + unevenSize(i);
            return s;
          };
          add(c);
        }
    break;
  default:
    break;
  }
  return cases;
}

} // namespace testcases
} // namespace spmd

#endif // SPMD_TEST_UNIT_COLLECTIVECASES_H
