//===- Passes.td - spmd CPU target passes ------------------*- tablegen -*-===//
//
// The passes of the CPU target, run on a plan's kernels as they are lowered
// for the JIT (targets/cpu/CpuJit.cpp) and available to spmd-opt for tests.
// Registered through registerCpuPasses() in targets/cpu/Passes.h.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CPU_PASSES_TD
#define SPMD_TARGETS_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def SPMDCpuOneHotLoops : Pass<"spmd-cpu-one-hot-loops", "mlir::ModuleOp"> {
  let summary = "Run one-hot contractions (embedding lookups and their "
                "backward) as gathers and scatter-adds";
  let description = [{
    The PyTorch frontend writes an embedding lookup as a contraction with a
    one-hot matrix — `out[p] += (idx[p] == r + off) ? val[p] : 0` summed over
    the vocabulary dim `r` — so that a vocabulary-sharded table partitions
    by indexing maps alone; its backward is the transposed contraction. On
    buffers, this pass replaces every such `linalg.generic` (two inputs, one
    output, projected-permutation maps, exactly that body; `off` an
    invariant added before or after the index cast; the index operand not
    indexed by `r`) with loops over the other dims that compute
    `r = idx[p] - off` and, when `0 <= r < R`, add `val` at `r` into the
    output: a gather forward, a scatter-add backward (the loops are
    sequential, so accumulating in place is exact). Any other generic is
    left alone. The CPU target runs it on every kernel it JIT-compiles.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect"];
}

#endif // SPMD_TARGETS_CPU_PASSES_TD
