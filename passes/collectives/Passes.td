//===- Passes.td - spmd collectives passes -----------------*- tablegen -*-===//
//
// The passes of optimizations of explicit collectives: deduplication,
// bucketing, scheduling, the communication report.
// Registered through registerCollectivesPasses() in passes/collectives/Passes.h;
// one pass per .cpp file in this folder.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_COLLECTIVES_PASSES_TD
#define SPMD_PASSES_COLLECTIVES_PASSES_TD

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
    * A sum or avg `all_reduce` / `reduce_scatter` of `x * c` or `x / c`
      (an elementwise `linalg.generic` used only by it, `c` 0-d) becomes the
      reduction of `x`, then the scale, when `c` is the same on every member
      of the group: a constant, the result of an all_reduce or all_gather
      over at least the group's axes, or computed from such values only (a
      mean loss's reduced count: see spmd-defer-scales). The reduction then
      waits for nothing but `x` and may share a bucket with `c`'s own.

    Collectives left without uses by these rewrites are erased; others are
    left alone. All ranks run the same program, so every rank removes the
    same collectives.
  }];
  let dependentDialects = ["::spmd::SPMDDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SPMDBucketCollectives : Pass<"spmd-bucket-collectives"> {
  let summary = "Fuse small all_reduces, reduce_scatters and all_gathers into "
                "few large ones, under a size cap";
  let description = [{
    Gradients of a data-parallel step each get an all_reduce (FSDP: a
    reduce_scatter), parameters of an FSDP step each an all_gather; many
    small collectives pay the latency (and on a GPU a launch) many times.
    Within each block, in program order, this pass groups collectives of the
    same op, mesh, axes (in order), reduction kind and element type into
    buckets. A collective joins the current bucket of its kind when a
    position exists after the definitions of all the bucket's operands and
    before the first use of any of its results, and the bucket is still
    below its cap (as in DDP, the member that crosses the cap is the last
    one; a member of at most 16 bytes, a loss or a count, joins
    regardless); otherwise the bucket is closed and a new one started. When a
    collective's operand is computed after the first use of a member's
    result (an optimizer step between gradient reductions, as SGD with
    momentum reduces each new momentum right before its update), the ops
    computing it move above that use first, if they are few (at most 64),
    free of memory effects, not collectives, and depend on no member; or
    else the ops using the members' results before it move below its
    definition, if it does not depend on them and they are free of memory
    effects and not collectives (at most 256). As in
    PyTorch DDP, the first bucket of each kind is small (`first-cap-bytes`,
    1 MiB), so the first collective starts early, and later ones hold up to
    `cap-bytes` (25 MiB). The small first bucket applies to reductions
    (gradients); all_gathers are grouped under `cap-bytes` alone, as FSDP2
    groups parameters per module. A member's size is its larger buffer (an
    all_gather's result, the others' input); 0 means no cap.

    Then a small sum all_reduce that can take the position of an all_gather
    on the same mesh, axes and element type rides in it (a loss and bias
    gradients beside the activations a data-parallel step gathers): its
    input is one more `[1, n]` row of the gather, and every rank sums the
    `k` gathered rows. That saves a collective for `(k-1)(k-2)/k * n` more
    bytes per rank than a ring all_reduce (none for `k = 2`), taken when at
    most `gather-reduce-bytes` (64 KiB).

    A bucket of two or more becomes one collective of a concatenation:
    * all_reduce: every input flattened to 1-D, one `tensor.concat`, one
      all_reduce, per member a `tensor.extract_slice` reshaped back;
    * reduce_scatter over `k` ranks: every input viewed as `[k, n/k]` (its
      `k` chunks are contiguous when only unit dims precede the scattered
      dim; otherwise a transpose of `[A, k, n/(A k)]` to `[k, A, ...]`
      makes them so), concatenated along dim 1, reduce-scattered along dim
      0, so each rank's row holds every member's chunk;
    * all_gather over `k` ranks: every input flattened to `[1, n]`,
      concatenated along dim 1, gathered along dim 0 into `[k, total]`;
      member `i`'s columns `[k, n_i]` are its chunks rank by rank, which is
      its result when only unit dims precede the gathered dim and its
      result after a transpose of `[k, A, ...]` to `[A, k, ...]` otherwise
      (an FSDP shard of a weight's second dim).
    Members with chunks of different sizes (uneven shards) stay apart.
    The fused op is placed after the last operand's definition (never above
    it) and before the first use of a result; within that window, after the
    collective that preceded the first member and after the bucket fused
    before, so the collectives keep their program order where the data
    allows. The choice depends only on the program, so every rank makes the
    same one.

    Left alone: collectives with a dynamic dim (their size differs between
    ranks, so a concatenation would have rank-dependent offsets), with an
    element type of unknown byte size, and those larger than the cap on
    their own.
  }];
  let options = [
    Option<"capBytes", "cap-bytes", "int64_t", /*default=*/"26214400",
           "Largest bucket in bytes (default 25 MiB as PyTorch DDP; 0: no cap)">,
    Option<"firstCapBytes", "first-cap-bytes", "int64_t", /*default=*/"1048576",
           "Largest first bucket of each kind in bytes (default 1 MiB as "
           "PyTorch DDP; 0: cap-bytes)">,
    Option<"gatherReduceBytes", "gather-reduce-bytes", "int64_t",
           /*default=*/"65536",
           "A sum all_reduce rides in an all_gather of the same mesh, axes "
           "and element type when that costs at most this many more bytes "
           "per rank (0: never)">
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect"];
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

#endif // SPMD_PASSES_COLLECTIVES_PASSES_TD
