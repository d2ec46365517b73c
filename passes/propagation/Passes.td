//===- Passes.td - spmd propagation passes -----------------*- tablegen -*-===//
//
// The passes of layout propagation: a layout for every value.
// Registered through registerPropagationPasses() in passes/propagation/Passes.h;
// one pass per .cpp file in this folder.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_PROPAGATION_PASSES_TD
#define SPMD_PASSES_PROPAGATION_PASSES_TD

include "mlir/Pass/PassBase.td"

def SPMDExpandRandom : Pass<"spmd-expand-random", "mlir::ModuleOp"> {
  let summary = "write every spmd.random as a linalg.generic computing "
                "Philox4x32-10 from each element's global index";
  let description = [{
    Each `spmd.random` becomes a `linalg.generic` over its result (the
    seed and the step as 0-d inputs) whose body computes the element's
    global row-major index from `linalg.index`, adds the op's counter
    `offset`, runs Philox4x32-10 keyed by the seed on the counter
    `(offset + index, step)` and turns the words into the distribution's
    value. Ops without an `offset` get disjoint ranges in program order
    (after the ranges of ops that fix theirs).

    Run before propagation (spmd-partition-pipeline and spmd-compile do):
    the generic takes any layout, and partitioning turns its `linalg.index`
    into the global index, so every rank computes its shard of the one
    global stream, bit-identical whatever the layout, mesh or rank count.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def SPMDDeferScales : Pass<"spmd-defer-scales", "mlir::func::FuncOp"> {
  let summary = "compute a backward from an unscaled seed and scale its "
                "results where they are consumed";
  let description = [{
    A mean loss divides by a count computed from the batch (cross-entropy's
    non-ignored targets); under data parallelism that count is a partial
    sum, so every gradient would wait for its all_reduce. For each 0-d
    f32/f64 value computed from a reduction whose linear uses reach a
    contraction (a backward's seed), the values computed linearly from it
    (rules/Linearity; zero inits, reshapes, transposes, slices and
    concatenations included) are computed from 1 instead, and each of them
    read by an op that is not linear in it (an optimizer, a returned value)
    is multiplied by the value right before that op. The results are the
    same up to rounding. spmd-dedup-collectives then moves such a scale out
    of the gradients' reductions, which no longer wait for the count and
    share its bucket. 16-bit closures are left alone (a summed loss's
    gradients can overflow f16).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def SPMDFoldReshapes : Pass<"spmd-fold-reshapes"> {
  let summary = "fold tensor reshapes into linalg ops by expanding their "
                "iteration space, so that shardings of the expanded dims "
                "survive";
  let description = [{
    A `tensor.collapse_shape` feeding a linalg op, or a `tensor.expand_shape`
    of a linalg op's result, merges dims into one loop; propagation can carry
    a sharding through such a reshape only on the outermost dim of a group
    whose other dims are not all 1 (e.g. attention's [b, heads, t, d] -> [b*heads, t, d] around the batched
    matmuls loses a head sharding). This pass applies MLIR's
    fold-reshape-by-expansion patterns (linalg ops, named ones included,
    become linalg.generic ops over the expanded loops) and folds the
    expand/collapse pairs left behind, so that every expanded dim is a loop
    of its own. Only reshapes with static shapes are folded, and not those
    that only add or drop unit dims (their groups have one dim of another
    size, which carries the sharding as it is; folding them by expansion
    can feed itself). Run before spmd-propagate (spmd-partition-pipeline
    does).

    The rewrite is bounded: at most `max-rewrites` pattern applications
    (default: 16 per op of the input plus 1024) and 8 sweeps. A program
    that does not settle within them keeps what was folded, still valid,
    and the pass says so with a remark; propagation then carries shardings
    through the reshapes that are left.
  }];
  let options = [
    Option<"maxRewrites", "max-rewrites", "int64_t", "0",
           "most pattern applications (0: 16 per op + 1024)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SPMDAutoShard : Pass<"spmd-auto-shard", "mlir::ModuleOp"> {
  let summary = "choose layouts for a program's free arguments and its "
                "activations: least estimated step time within a memory "
                "budget (an ILP solved with CBC)";
  let description = [{
    For every function, the tensor arguments without `spmd.layout` are
    free: the pass chooses their layouts on the mesh (`mesh`, or the
    module's only one), and a layout for every op result, minimizing the
    estimated step time: each op's roofline time on its local share under
    the device profile (`device`) plus the alpha-beta cost of every reshard
    between what a producer makes and what its consumer needs. Annotated
    arguments and results, `spmd.constrain` ops and `spmd.layout` op
    attributes are kept as constraints. A result with `spmd.updates = i`
    is the new value of argument i (a parameter, an optimizer state) and
    comes back in its layout; other unannotated results are replicated.

    With `memory-budget`, the bytes live at every program point (arguments
    throughout, other values from definition to last use) at their local
    sizes stay within the budget per device; when no choice fits, the pass
    fails naming the smallest peak it found.

    Per mesh axis, in mesh order, one MILP (Alpa's formulation on the
    factor rules of rules/: a binary per op and candidate, edge variables
    tying producer and consumer choices) is solved by COIN-OR CBC within
    `time-limit` seconds; without a solution by then a deterministic greedy
    choice stands in. On a mesh of several axes the search also solves the
    mesh taken as one axis of all its devices (every 1-D plan over all
    devices, laid out alike on each axis) and the axes in reverse order,
    improves each kept plan by coordinate descent (an axis solved again,
    the others kept), and descends again from the plan `comm-slack`
    refines; the lowest estimate is kept. The result: `spmd.layout` on the
    free arguments and results, and on every op (`pin-activations`), which spmd-propagate
    completes. `report` writes the plan per argument in DTensor's terms
    (Colwise, Rowwise, FSDP Shard, Replicate) with the estimated compute,
    communication and peak memory.
  }];
  let dependentDialects = ["::spmd::SPMDDialect"];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "the mesh to shard on (default: the module's only spmd.mesh)">,
    Option<"memoryBudget", "memory-budget", "std::string", /*default=*/"\"\"",
           "bytes per device (4096, 64MiB, 1.5GB; empty: no limit)">,
    Option<"device", "device", "std::string", /*default=*/"\"h100\"",
           "device profile of the cost model (h100, cpu)">,
    Option<"collectiveLatency", "collective-latency", "double",
           /*default=*/"-1",
           "microseconds one collective costs besides its bytes, in place "
           "of the device profile's (a calibrated interconnect; negative: "
           "the profile's)">,
    Option<"timeLimit", "time-limit", "double", /*default=*/"20.0",
           "seconds the solver may take per mesh axis">,
    Option<"searchTime", "search-time", "double", /*default=*/"25.0",
           "seconds after the pass began in which the search beyond the "
           "first plan (other starts, axes solved again) may begin a step; "
           "0: the first plan only">,
    Option<"exactLastAxis", "exact-last-axis", "bool", /*default=*/"true",
           "price the mesh axis solved last (every other axis decided) by "
           "each reshard's whole layout change along the redistribute "
           "planner's path, as the estimate does, instead of per axis">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "write the chosen plan to this file (- for stderr)">,
    Option<"commSlack", "comm-slack", "double", /*default=*/"0.005",
           "of the plans whose estimated step time is within this fraction "
           "of the fastest, take one that sends fewer bytes (or as many in "
           "less time; 0: the fastest)">,
    Option<"tieRounds", "tie-rounds", "int", /*default=*/"6",
           "ops alike this many ops around them (the same op of every "
           "middle layer) share one choice; -1: none share">,
    Option<"pinActivations", "pin-activations", "bool", /*default=*/"true",
           "annotate every op result with its chosen layout (else only "
           "arguments and results, and spmd-propagate picks the rest)">,
  ];
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
    conflicts are resolved by cost: an alpha-beta communication model plus
    the compute each choice leaves on every rank, under a device profile
    (`device`; a contraction is computed replicated only when gathering its
    operands costs less than reducing its partial result plus the work it
    repeats; a partial product summed with others before its reduction pays
    its share of it). Where a
    consumer needs another layout than its producer gives, an `spmd.constrain`
    is inserted, so that afterwards layouts change only at constrains. User
    annotations are never overridden. An op without a rule is computed
    replicated, with a remark. See rules/ for the rules.
  }];
  let dependentDialects = ["::spmd::SPMDDialect"];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "emit a remark at every inserted spmd.constrain saying which op "
           "or annotation needs it, and record it in the constrain's "
           "`reason` attribute">,
    Option<"device", "device", "std::string", /*default=*/"\"h100\"",
           "device profile of the cost model (h100, cpu): link speed and "
           "latency of collectives, and the compute a choice saves or "
           "repeats (a contraction computed replicated instead of reducing "
           "its partial result)">,
  ];
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
    core/CostModel.h, resharding its sharded inputs to replicated (plus
    recomputing the region on every rank) costs less than the reshards its
    results go through (one all_gather per updated parameter and moment),
    the region's ops become replicated: its inputs are constrained to R (a
    slice of a replicated value is replaced by that value), constrains of
    its results to R disappear, and other users get a (free) slice. Layouts
    still change only at `spmd.constrain`.
  }];
  let dependentDialects = ["::spmd::SPMDDialect"];
}

#endif // SPMD_PASSES_PROPAGATION_PASSES_TD
