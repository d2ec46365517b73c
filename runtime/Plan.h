//===- Plan.h - Plan model executed by the runtime --------------*- C++ -*-===//
//
// The runtime's view of a compiled plan (no MLIR): the buffers of one
// schedule (entry arguments, or fixed offsets of one arena from the static
// memory plan), and its steps in the order every rank runs them: kernel
// calls, GEMMs, collectives and copies. tools/spmd-run builds it from the
// `spmd.plan_*` ops of a plan file (dialects/spmd/SPMDPlanOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_PLAN_H
#define SPMD_RUNTIME_PLAN_H

#include "runtime/Layout.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spmd::plan {

/// Element types of plan buffers.
enum class ElemType : uint8_t { F32, F64, F16, BF16, I32, I64, I8 };
size_t elemSize(ElemType type);
const char *elemTypeName(ElemType type);
bool isFloatType(ElemType type);

/// Element `i` of a buffer as a double, and the reverse (f16/bf16 round to
/// nearest even). For I/O, checks and the slow paths, not hot loops.
double loadElement(const void *data, ElemType type, int64_t i);
void storeElement(void *data, ElemType type, int64_t i, double value);

using Shape = std::vector<int64_t>;
int64_t numElements(const Shape &shape);
std::string shapeStr(const Shape &shape);

/// A buffer a step reads or writes: an entry argument or an arena slice.
struct BufferRef {
  enum class Where : uint8_t { Arg, Arena };
  Where where = Where::Arena;
  int64_t index = 0; // argument number, or byte offset into the arena
  ElemType type = ElemType::F32;
  Shape shape;
  int64_t bytes() const {
    return numElements(shape) * static_cast<int64_t>(elemSize(type));
  }
};

enum class StepKind : uint8_t {
  Kernel,
  Gemm,
  Copy,
  AllGather,
  AllReduce,
  ReduceScatter,
  AllToAll,
  Shard
};
const char *stepKindName(StepKind kind);

struct Step {
  StepKind kind = StepKind::Kernel;
  /// Kernel: the callee's index in Schedule::kernels; its arguments.
  int64_t kernel = -1;
  std::vector<BufferRef> operands; // Kernel: all; Gemm: A, B, C; others: in, out
  /// Gemm.
  bool transposeA = false, transposeB = false;
  int64_t beta = 1;
  /// Collectives: mesh axis indices, dims and reduction.
  std::vector<int64_t> axes;
  int64_t dim0 = -1, dim1 = -1; // gather/scatter/shard dim or split; concat
  ReduceKind reduce = ReduceKind::Sum;
};

/// A tensor crossing the entry's boundary: local type and global layout.
struct TensorInfo {
  ElemType type = ElemType::F32;
  Shape localShape;
  std::optional<Layout> layout; // absent: replicated
};

/// One entry of a plan.
struct Schedule {
  std::string name;
  int64_t arenaBytes = 0;
  Mesh mesh; // one device when the entry names no mesh
  std::vector<TensorInfo> args, results;
  std::vector<BufferRef> resultRefs; // where each result lives after a run
  std::vector<std::string> kernels;  // kernel function names
  std::vector<Step> steps;

  /// Checks every buffer lies inside the arena or matches its argument, and
  /// step operands are consistent; returns an error message or "".
  std::string validate() const;
  /// One line per step, for --print-plan and tests.
  std::string str() const;
};

} // namespace spmd::plan

#endif // SPMD_RUNTIME_PLAN_H
