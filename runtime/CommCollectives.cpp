//===- CommCollectives.cpp - Plan collectives over a Communicator ---------===//

#include "runtime/CommCollectives.h"

using namespace spmd;
using namespace spmd::plan;

namespace {
/// Runs `call` with the blocks converted; checks the output shape.
template <typename Call>
std::string run(const void *in, const Shape &inShape, void *out,
                const Shape &outShape, DType type, Call call) {
  // The communicators reduce floats and 32/64-bit integers.
  if (type == DType::I8)
    return std::string("collectives on ") + dtypeName(type) +
           " are not supported by the communicator";
  InBlock block{in, type, inShape};
  OutBlock dst{out,
               static_cast<size_t>(numElements(outShape)) * dtypeSize(type)};
  CollectiveResult result = call(block, dst);
  if (!result.ok())
    return result.status.message();
  if (result.shape != outShape)
    return "the group's blocks give shape " + shapeStr(result.shape) +
           ", the plan expects " + shapeStr(outShape);
  return "";
}
} // namespace

std::string CommCollectives::allGather(const void *in, const Shape &inShape,
                                       void *out, const Shape &outShape,
                                       DType type,
                                       const std::vector<int64_t> &axes,
                                       int64_t dim) {
  return run(in, inShape, out, outShape, type,
             [&](const InBlock &b, OutBlock o) {
               return comm.allGather(b, o, axes, dim);
             });
}

std::string CommCollectives::allReduce(const void *in, const Shape &shape,
                                       void *out, DType type,
                                       const std::vector<int64_t> &axes,
                                       ReduceKind kind) {
  return run(in, shape, out, shape, type, [&](const InBlock &b, OutBlock o) {
    return comm.allReduce(b, o, axes, mismatch ? ReduceKind::Max : kind);
  });
}

std::string CommCollectives::reduceScatter(const void *in, const Shape &inShape,
                                           void *out, const Shape &outShape,
                                           DType type,
                                           const std::vector<int64_t> &axes,
                                           int64_t dim, ReduceKind kind) {
  return run(in, inShape, out, outShape, type,
             [&](const InBlock &b, OutBlock o) {
               return comm.reduceScatter(b, o, axes, dim, kind);
             });
}

std::string CommCollectives::allToAll(const void *in, const Shape &inShape,
                                      void *out, const Shape &outShape,
                                      DType type,
                                      const std::vector<int64_t> &axes,
                                      int64_t split, int64_t concat) {
  return run(in, inShape, out, outShape, type,
             [&](const InBlock &b, OutBlock o) {
               return comm.allToAll(b, o, axes, split, concat);
             });
}
