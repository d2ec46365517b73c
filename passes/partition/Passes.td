//===- Passes.td - spmd partition passes -------------------*- tablegen -*-===//
//
// The passes of partitioning: the global program becomes one local program per
// rank with explicit collectives.
// Registered through registerPartitionPasses() in passes/partition/Passes.h;
// one pass per .cpp file in this folder.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_PARTITION_PASSES_TD
#define SPMD_PASSES_PARTITION_PASSES_TD

include "mlir/Pass/PassBase.td"

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
      (core/RedistributePlanner.h): `spmd.all_gather`, `spmd.all_reduce`,
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

#endif // SPMD_PASSES_PARTITION_PASSES_TD
