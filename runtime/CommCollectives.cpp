//===- CommCollectives.cpp - Plan collectives over a Communicator ---------===//

#include "runtime/CommCollectives.h"

using namespace spmd;
using namespace spmd::plan;

std::optional<DType> spmd::plan::toDType(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return DType::F32;
  case ElemType::F64:
    return DType::F64;
  case ElemType::F16:
    return DType::F16;
  case ElemType::BF16:
    return DType::BF16;
  case ElemType::I32:
    return DType::I32;
  case ElemType::I64:
    return DType::I64;
  case ElemType::I8:
    return std::nullopt;
  }
  return std::nullopt;
}

namespace {
/// Runs `call` with the blocks converted; checks the output shape.
template <typename Call>
std::string run(const void *in, const Shape &inShape, void *out,
                const Shape &outShape, ElemType type, Call call) {
  std::optional<DType> dtype = toDType(type);
  if (!dtype)
    return std::string("collectives on ") + elemTypeName(type) +
           " are not supported by the communicator";
  InBlock block{in, *dtype, inShape};
  OutBlock dst{out, static_cast<size_t>(plan::numElements(outShape)) *
                        dtypeSize(*dtype)};
  CollectiveResult result = call(block, dst);
  if (!result.ok())
    return result.status.message();
  if (result.shape != outShape)
    return "the group's blocks give shape " + plan::shapeStr(result.shape) +
           ", the plan expects " + plan::shapeStr(outShape);
  return "";
}
} // namespace

std::string CommCollectives::allGather(const void *in, const Shape &inShape,
                                       void *out, const Shape &outShape,
                                       ElemType type,
                                       const std::vector<int64_t> &axes,
                                       int64_t dim) {
  return run(in, inShape, out, outShape, type,
             [&](const InBlock &b, OutBlock o) {
               return comm.allGather(b, o, axes, dim);
             });
}

std::string CommCollectives::allReduce(const void *in, const Shape &shape,
                                       void *out, ElemType type,
                                       const std::vector<int64_t> &axes,
                                       ReduceKind kind) {
  return run(in, shape, out, shape, type, [&](const InBlock &b, OutBlock o) {
    return comm.allReduce(b, o, axes, mismatch ? ReduceKind::Max : kind);
  });
}

std::string CommCollectives::reduceScatter(const void *in, const Shape &inShape,
                                           void *out, const Shape &outShape,
                                           ElemType type,
                                           const std::vector<int64_t> &axes,
                                           int64_t dim, ReduceKind kind) {
  return run(in, inShape, out, outShape, type,
             [&](const InBlock &b, OutBlock o) {
               return comm.reduceScatter(b, o, axes, dim, kind);
             });
}

std::string CommCollectives::allToAll(const void *in, const Shape &inShape,
                                      void *out, const Shape &outShape,
                                      ElemType type,
                                      const std::vector<int64_t> &axes,
                                      int64_t split, int64_t concat) {
  return run(in, inShape, out, outShape, type,
             [&](const InBlock &b, OutBlock o) {
               return comm.allToAll(b, o, axes, split, concat);
             });
}
