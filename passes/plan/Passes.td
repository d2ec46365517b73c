//===- Passes.td - spmd plan lowering passes ---------------*- tablegen -*-===//
//
// The passes of plan lowering: fusion, bufferization, outlining of kernels and
// GEMMs, the memory plan.
// Registered through registerPlanPasses() in passes/plan/Passes.h;
// one pass per .cpp file in this folder.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_PLAN_PASSES_TD
#define SPMD_PASSES_PLAN_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def SPMDOneHotMatmul : Pass<"spmd-one-hot-matmul", "mlir::ModuleOp"> {
  let summary = "Turn one-hot contractions (embeddings) into matmuls";
  let description = [{
    A reduction `out += select(idx == j, v, 0)` over the loops of `v`, with
    `j` a loop and `idx` read from another operand (the frontend's embedding
    `sum_v (tok == v) * W[v]` and its backward, the scatter of gradients
    into the vocabulary rows), is a contraction with a one-hot operand. As a
    fused kernel it reads every row of `v` for every output element
    (vocabulary x tokens x dim work, ~0.7 s per step on an H200 for a
    GPT with 8192 words and 8192 tokens). This pass materializes the one-hot
    tensor `oh = select(idx == j, 1, 0)` over the loops the condition reads
    and rewrites the reduction as `out += oh * v`, a contraction that
    spmd-outline-plan runs as a GEMM (cuBLASLt, BLAS). Equal to the select
    form wherever `v` is finite (0 x inf is NaN where the select skipped
    it).
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

#endif // SPMD_PASSES_PLAN_PASSES_TD
