//===- Passes.td - spmd passes -----------------------------*- tablegen -*-===//
//
// Every pass of the project is declared here and registered with spmd-opt
// through registerSPMDPasses(). One pass per .cpp file in this folder.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_TD
#define SPMD_PASSES_TD

include "mlir/Pass/PassBase.td"

def SPMDDedupCollectives : Pass<"spmd-dedup-collectives"> {
  let summary = "Remove redundant collectives of local programs";
  let description = [{
    Works on the explicit collectives of a local program, to a fixpoint:

    * Identical collectives (same op, operand, mesh, axes in the same order,
      dims / reduction kind and result type) become one: the first in program
      order is kept when it dominates every use of the later one. Each use of
      a partial gradient would otherwise reduce it again. This does not rely
      on CSE, so it stays right if collectives stop being side-effect free.
    * Gather-then-slice round trips are removed:
      `spmd.shard(spmd.all_gather(x, A, d), A, d)` becomes `x`, and
      `all_to_all(all_to_all(x, A, split s, concat c), A, split c, concat s)`
      becomes `x`, when the mesh and the axes (in order) agree and the final
      type equals the type of `x`. With a dynamic dim this relies on the
      local-program convention that a dynamic dim holds torch.chunk pieces.
    * `spmd.shard(spmd.all_reduce(x, A, kind), A, d)` becomes
      `spmd.reduce_scatter(x, A, d, kind)` when the all_reduce has no other
      use (otherwise both stay: no communication is duplicated).

    Collectives left without uses by these rewrites are erased; others are
    left alone. All ranks run the same program, so every rank removes the
    same collectives.
  }];
  let dependentDialects = ["::spmd::SPMDDialect"];
}

def SPMDCommReport : Pass<"spmd-comm-report", "::mlir::ModuleOp"> {
  let summary = "Report the collectives of local programs as JSON";
  let description = [{
    Writes, per function, the collectives in program order (a static count:
    a collective inside a loop body is listed once) with their kind, mesh,
    axes, group size, reduction kind, dims, element type, local input and
    result shapes (`null` for a dynamic dim) and the bytes each rank sends
    under the standard ring algorithms, for a group of `k` ranks:
    all_gather `(k-1) * in`, all_reduce `2(k-1)/k * in`, reduce_scatter
    `(k-1)/k * in`, all_to_all `(k-1)/k * in`, shard `0`, where `in` is the
    byte size of the local input.

    A collective with a dynamic dim gets `"dynamic": true`. If the formula's
    input size is not static, `"bytes"` is `null` and `"bytes_upper_bound"`
    bounds it where the op's static dims allow (a dynamic dim gathered into
    a static dim of size `n` over `k` ranks holds at most `ceil(n/k)`, as
    torch.chunk gives; a dynamic dim split into static chunks of `m` at most
    `k*m`), else `null`. A collective whose formula input is static keeps
    its exact bytes even if its result is dynamic (a reduce_scatter into
    uneven chunks). Totals per function (count, bytes and, where some bytes
    are unknown, the upper bound, `null` if some op has none) are given by
    kind, per mesh by the joined axes of each op in mesh order (a collective
    over `dp` and `tp` counts once under "dp,tp", whatever order it lists
    them in), and per mesh and single axis for the collectives over one
    axis (a ring over a joined group does not split its bytes per axis).

    The JSON goes to the file named by `out`, else to stdout.
  }];
  let options = [
    Option<"out", "out", "std::string", /*default=*/"\"\"",
           "File to write the JSON report to (default: stdout)">
  ];
}

def SPMDBucketAllReduces : Pass<"spmd-bucket-all-reduces"> {
  let summary = "Fuse small all_reduces into few large ones, under a size cap";
  let description = [{
    Gradients of a data-parallel step each get an all_reduce; many small ones
    waste latency. Within each block, in program order, this pass groups
    all_reduces with the same mesh, axes (in order), reduction kind and
    element type into buckets of at most `cap-bytes` bytes (local input
    bytes; 0 means no cap). An all_reduce joins the current bucket of its
    kind when a position exists after the definitions of all the bucket's
    operands and before the first use of any of its results; otherwise, or
    when the cap would be exceeded, the bucket is closed and a new one
    started. A bucket of two or more becomes: every operand flattened to 1-D
    (`tensor.collapse_shape`), one `tensor.concat`, one all_reduce, and per
    member a `tensor.extract_slice` and a `tensor.expand_shape` back to its
    shape. They are placed after the last operand's definition (never above
    it) and before the first use of a result; within that window, after the
    collective that preceded the first member and after the bucket fused
    before, so the collectives keep their program order where the data
    allows. The choice depends only on the program, so every rank makes the
    same one.

    Left alone: all_reduces with a dynamic dim (their size differs between
    ranks, so a concatenation would have rank-dependent offsets), with an
    element type of unknown byte size, and those larger than the cap on
    their own.
  }];
  let options = [
    Option<"capBytes", "cap-bytes", "int64_t", /*default=*/"26214400",
           "Largest bucket in bytes (default 25 MiB as PyTorch DDP; 0: no cap)">
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def SPMDPropagate : Pass<"spmd-propagate", "mlir::ModuleOp"> {
  let summary = "give every tensor value a layout (factor rules, cost model)";
  let description = [{
    For every `func.func` whose signature or body names a layout, gives every
    tensor value a layout: op results get the `spmd.layout` op attribute,
    unannotated function arguments and results the `spmd.layout` argument /
    result attribute. Layouts come from a factor model of each op (linalg ops
    from their indexing maps and iterator types, explicit rules for tensor,
    arith and math ops), propagated forward and backward to a fixpoint;
    conflicts are resolved by an alpha-beta communication cost model. Where a
    consumer needs another layout than its producer gives, an `spmd.constrain`
    is inserted, so that afterwards layouts change only at constrains. User
    annotations are never overridden. An op without a rule is computed
    replicated, with a remark. See passes/Propagate.cpp for the rules.
  }];
  let dependentDialects = ["::spmd::SPMDDialect"];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "emit a remark at every inserted spmd.constrain saying which op "
           "or annotation needs it, and record it in the constrain's "
           "`reason` attribute">,
  ];
}

def SPMDPartition : Pass<"spmd-partition", "mlir::ModuleOp"> {
  let summary = "rewrite a layout-consistent global program into the local "
                "program every rank runs";
  let description = [{
    Input: a layout-consistent global program (every tensor value has a
    layout: function arguments/results through the `spmd.layout`
    argument/result attribute, op results through the `spmd.layout` op
    attribute; layouts change only at `spmd.constrain`). Functions that name
    no layout at all are left alone.

    Output, per function:
    * the signature uses each rank's local shard types (a dim whose local
      size differs between ranks is dynamic); every tensor argument/result
      keeps its `spmd.layout` attribute and gains `spmd.global_type` (the
      global tensor type), so a runtime knows how to shard inputs and
      assemble outputs;
    * every `spmd.constrain` becomes the redistribute planner's steps
      (passes/RedistributePlanner.h): `spmd.all_gather`, `spmd.all_reduce`,
      `spmd.reduce_scatter`, `spmd.all_to_all`, `spmd.shard`, and
      `spmd.partial_from_replicated` for R -> P(sum);
    * every other op computes on local types: linalg ops keep their
      indexing maps (a reduction over a sharded factor gives this rank's
      partial term, no communication), `tensor.empty` gets its dynamic local
      sizes from `spmd.local_size`, `tensor.expand_shape`/`collapse_shape`
      keep a sharding on the outermost dim of a group when the chunk
      boundaries agree on every rank, `tensor.extract_slice`/`insert_slice`/
      `concat`/`pad` change only dims that are not sharded (sharded dims are
      taken whole, with local sizes), splat constants get local types, a
      `linalg.fill` or splat constant whose layout is P(sum) with a non-zero
      value is made partial with `spmd.partial_from_replicated`;
    * `spmd.layout` op attributes are dropped.

    A program that is not layout-consistent is rejected with an error naming
    the op: a tensor without a layout, operand layouts that do not fit the
    op's sharding rule (linalg factors from the indexing maps; partial values
    only through ops that are linear, or monotone for max/min, in them), an
    op without a partitioning rule on a non-replicated value.

    With `explain=true` every inserted collective gets a remark at its
    `spmd.constrain` saying which layout change forced it, and why when the
    constrain carries a `reason` string attribute.
  }];
  let dependentDialects = ["::spmd::SPMDDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "emit a remark at every inserted collective saying which "
           "spmd.constrain (and reason) forced it">,
  ];
}

def SPMDFuseElementwise : Pass<"spmd-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse elementwise and broadcast chains of linalg ops";
  let description = [{
    Generalizes named linalg ops that are not contractions or fills (so
    `linalg.add`, `linalg.exp`, `linalg.broadcast`, ... become
    `linalg.generic`) and applies upstream elementwise fusion. Matmuls stay
    named so they become GEMM library calls.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::tensor::TensorDialect"];
}

def SPMDBufferize : Pass<"spmd-bufferize", "mlir::ModuleOp"> {
  let summary = "One-shot bufferization of a local program, collectives included";
  let description = [{
    One-shot module bufferization with identity-layout function boundaries.
    spmd collectives bufferize into their `spmd.plan_*` forms on a fresh
    output buffer (external BufferizableOpInterface models registered by
    this pass).
  }];
  let dependentDialects = ["::spmd::SPMDDialect",
                           "mlir::bufferization::BufferizationDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect"];
}

def SPMDOutlinePlan : Pass<"spmd-outline-plan", "mlir::ModuleOp"> {
  let summary = "Turn bufferized entry functions into plan schedules";
  let description = [{
    Every linalg op of a public function becomes a kernel function (marked
    `spmd.plan_kernel`) called by `spmd.plan_kernel`; matmuls and batch
    matmuls (also with transposed operands) become `spmd.plan_gemm` (a
    preceding zero fill of C becomes beta 0); `memref.copy` becomes
    `spmd.plan_copy`. Identical kernels are emitted once. Anything else in
    an entry is rejected.
  }];
  let dependentDialects = ["::spmd::SPMDDialect", "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect"];
}

def SPMDPlanMemory : Pass<"spmd-plan-memory", "mlir::ModuleOp"> {
  let summary = "Static memory plan: one arena per schedule, reuse by liveness";
  let description = [{
    Replaces every `memref.alloc` of a schedule by a `spmd.plan_buffer` at an
    offset of one arena. Buffers whose live ranges (definition to last use,
    results live to the end) do not overlap share memory; offsets are chosen
    first-fit, largest buffers first. A buffer with rank-dependent (dynamic)
    dims becomes a `spmd.plan_buffer` with `bytes 0` that the runtime places
    outside the arena, by the same rule, once it knows the rank's sizes. Sets `spmd.plan_arena_bytes` on each
    schedule and `spmd.plan_version` on the module.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64",
           "Byte alignment of every buffer">
  ];
  let dependentDialects = ["::spmd::SPMDDialect",
                           "mlir::memref::MemRefDialect"];
}

def SPMDFoldReshapes : Pass<"spmd-fold-reshapes"> {
  let summary = "fold tensor reshapes into linalg ops by expanding their "
                "iteration space, so that shardings of the expanded dims "
                "survive";
  let description = [{
    A `tensor.collapse_shape` feeding a linalg op, or a `tensor.expand_shape`
    of a linalg op's result, merges dims into one loop; propagation can carry
    a sharding through such a reshape only on the outermost dim of a group
    (e.g. attention's [b, heads, t, d] -> [b*heads, t, d] around the batched
    matmuls loses a head sharding). This pass applies MLIR's
    fold-reshape-by-expansion patterns (linalg ops, named ones included,
    become linalg.generic ops over the expanded loops) and folds the
    expand/collapse pairs left behind, so that every expanded dim is a loop
    of its own. Only reshapes with static shapes are folded. Run before
    spmd-propagate (spmd-partition-pipeline does).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SPMDHoistGathers : Pass<"spmd-hoist-gathers", "mlir::func::FuncOp"> {
  let summary = "compute a sharded elementwise region replicated when "
                "gathering its inputs moves fewer bytes than gathering its "
                "results";
  let description = [{
    Runs on a layout-consistent program (after `spmd-propagate`). A region is
    a connected set of all-parallel linalg ops, reductions where nothing is
    sharded, reshapes and elementwise arith/math ops on tensors joined by
    sharded or partial values (an optimizer update on a sharded gradient, a
    bias gradient summed from a partial gradient, say). A reshard another
    user needs anyway costs nothing. When, by the alpha-beta model of
    passes/CostModel.h, resharding its sharded inputs to replicated (plus
    recomputing the region on every rank) costs less than the reshards its
    results go through (one all_gather per updated parameter and moment),
    the region's ops become replicated: its inputs are constrained to R (a
    slice of a replicated value is replaced by that value), constrains of
    its results to R disappear, and other users get a (free) slice. Layouts
    still change only at `spmd.constrain`.
  }];
  let dependentDialects = ["::spmd::SPMDDialect"];
}

def SPMDEmitCuda : Pass<"spmd-emit-cuda", "mlir::ModuleOp"> {
  let summary = "Print the kernels of a plan as CUDA C++ (and compile them "
                "with NVRTC)";
  let description = [{
    Prints every `spmd.plan_kernel` function of a plan as an `extern "C"
    __global__` CUDA C++ function over runtime/cuda/kernels/spmd_kernels.cuh
    (codegen/CudaEmitter.h: parameters, launch rule), all in one translation
    unit, and records the launch rule on each kernel (`spmd_cuda.launch`,
    `spmd_cuda.work`). `output=` writes the translation unit to a file ("-":
    stdout). `embed=true` compiles it with NVRTC for `archs` (cubins + PTX)
    and stores runtime/cuda/Nvrtc.h's serializeModule bytes in the module
    attribute `spmd_cuda.module`. A kernel that cannot be printed is an
    error naming the op and the reason.
  }];
  let options = [
    Option<"output", "output", "std::string", "\"\"",
           "File to write the CUDA C++ translation unit to (- for stdout)">,
    Option<"embed", "embed", "bool", "false",
           "Compile with NVRTC and embed the images in the plan">,
    ListOption<"archs", "archs", "int", "SM versions for embed (default 80,90)">,
    Option<"rowReductions", "row-reductions", "bool", "true",
           "One warp per row for reductions over the innermost loop">
  ];
}

def SPMDScheduleCollectives
    : Pass<"spmd-schedule-collectives", "mlir::func::FuncOp"> {
  let summary = "issue collectives as early as their operands allow, so "
                "compute overlaps them";
  let description = [{
    Runs on a local program (after `spmd-partition`). Every collective of
    computed values moves up to right after the last of its operands is
    produced (ops that exist only to feed it, such as the packing of a
    bucketed all_reduce, move up with it); a collective of only function
    arguments (an FSDP parameter gather) is prefetched one ahead, right
    before the first user of the previous such collective. A GPU then runs
    it on its communication stream while the compute in between proceeds.
    Only the order within the block changes; every rank gets the same order.
  }];
  let dependentDialects = ["::spmd::SPMDDialect"];
}

#endif // SPMD_PASSES_TD
