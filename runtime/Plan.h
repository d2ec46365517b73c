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

#include "core/Layout.h"
#include "runtime/DType.h"
#include "runtime/Memory.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace spmd::plan {

// Element types of plan buffers are the runtime's DTypes (f32, f64, f16,
// bf16, i32, i64, and i8 for i1/i8 buffers); Shape, numElements, shapeStr
// and the element conversions come from runtime/DType.h.

/// A buffer a step reads or writes: an entry argument, an arena slice, or a
/// buffer with rank-dependent (dynamic) dims that the executor allocates at
/// its rank's size, outside the arena.
struct BufferRef {
  enum class Where : uint8_t { Arg, Arena, Heap };
  Where where = Where::Arena;
  int64_t index = 0; // argument number, arena byte offset, or heap buffer id
  DType type = DType::F32;
  Shape shape; // -1 on a dynamic dim
  /// For each dynamic dim of a Heap buffer: its index in Schedule::sizes.
  std::vector<int64_t> sizeSlots;
  /// For each dynamic dim (empty: all 1/1): the size is the slot's value
  /// times `first`, divided by `second` (a reshaped view of a dynamic
  /// buffer: [?, 8] collapsed to [? * 8], [? * 8] expanded to [?, 8]).
  std::vector<std::pair<int64_t, int64_t>> sizeScales;
  bool isStatic() const;
  /// Bytes of a static buffer.
  int64_t bytes() const {
    return numElements(shape) * static_cast<int64_t>(dtypeSize(type));
  }
};

/// Where a rank-dependent index (a dynamic size, or a kernel's scalar
/// argument) comes from: a dim of an entry argument (the run gives each
/// rank's argument shapes), or this rank's torch.chunk size or offset of a
/// global dim sharded over mesh axes, nested in the order listed (what
/// spmd-partition's `spmd.local_size` / `spmd.local_offset` compute).
struct SizeSource {
  /// LocalChunk nests the chunking over `axes` (spmd.local_size), and
  /// LocalOffset gives that chunk's offset (spmd.local_offset); GroupChunk
  /// splits once over the whole group (spmd.plan_chunk_size, as collectives
  /// split).
  enum class Kind : uint8_t { ArgDim, LocalChunk, GroupChunk, LocalOffset };
  Kind kind = Kind::ArgDim;
  int64_t arg = 0;
  int64_t dim = 0;
  int64_t globalSize = 0;
  std::vector<int64_t> axes;
};

enum class StepKind : uint8_t {
  Kernel,
  Gemm,
  Copy,
  AllGather,
  AllReduce,
  ReduceScatter,
  AllToAll,
  Shard,
  PartialFromReplicated
};
const char *stepKindName(StepKind kind);
/// All-gather, all-reduce, reduce-scatter and all-to-all: the steps that
/// communicate (spmd.shard and partial-from-replicated are local).
bool isCollective(StepKind kind);

struct Step {
  StepKind kind = StepKind::Kernel;
  /// Kernel: the callee's index in Schedule::kernels; its arguments.
  int64_t kernel = -1;
  std::vector<BufferRef>
      operands; // Kernel: all; Gemm: A, B, C; others: in, out
  /// Kernel: its index arguments after the buffers, as Schedule::sizes slots.
  std::vector<int64_t> scalars;
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
  DType type = DType::F32;
  Shape localShape;
  std::optional<Layout> layout; // absent: replicated
  /// The global shape (spmd.global_type of a partitioned program); absent:
  /// unknown (even shards assumed where needed).
  std::optional<Shape> globalShape;
};

/// One entry of a plan.
struct Schedule {
  std::string name;
  int64_t arenaBytes = 0;
  Mesh mesh; // one device when the entry names no mesh
  std::vector<TensorInfo> args, results;
  std::vector<BufferRef> resultRefs; // where each result lives after a run
  std::vector<SizeSource> sizes;     // dynamic sizes and kernel scalars
  int64_t numHeapBuffers = 0;
  std::vector<std::string> kernels; // kernel function names
  /// Per kernel, when its compiled form can run a part of its outermost
  /// loop (a parallel loop every output is indexed by): that loop's extent
  /// and the kernel's iterations in all. Such a kernel takes the range
  /// [lb, ub) of that loop as two index arguments after its others, and a
  /// rank's threads (runtime/Workers.h) run pieces of it. Filled by the CPU
  /// target (targets/cpu/CpuJit.h); empty or 0: the kernel runs whole.
  struct KernelSplit {
    int64_t extent = 0, iterations = 0;
  };
  std::vector<KernelSplit> kernelSplits;
  std::vector<Step> steps;

  /// Checks every buffer lies inside the arena or matches its argument, and
  /// step operands are consistent; returns an error message or "".
  std::string validate() const;
  /// One line per step, for --print-plan and tests.
  std::string str() const;
};

/// The most ranks one process runs as threads (spmd-run's in-process and
/// NCCL runs): a thread each, with its stack and communicator state.
constexpr int64_t kMaxThreadRanks = 4096;

/// Checks that one process can run `schedule` on every device of its mesh
/// before anything is allocated: at most kMaxThreadRanks ranks when they
/// are threads, and within `available` bytes the most it holds at once:
/// the arguments (global, plus every rank's local block) and every rank's
/// results copied out of its arena throughout; while the ranks run, the
/// arenas (and thread stacks) of the ranks held here; after them, the
/// assembled global results and, with a `reference` (spmd-run --check's
/// unpartitioned program), its arena, its copy of the global arguments and
/// one result block to compare. Returns an error message or "".
std::string checkRunResources(const Schedule &schedule, bool ranksAsThreads,
                              int64_t available = availableMemoryBytes(),
                              const Schedule *reference = nullptr);

} // namespace spmd::plan

#endif // SPMD_RUNTIME_PLAN_H
