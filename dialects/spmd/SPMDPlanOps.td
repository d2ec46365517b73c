//===- SPMDPlanOps.td - spmd plan steps --------------------*- tablegen -*-===//
//
// The steps of a compiled plan (DESIGN.md section 5). A plan is a module
// marked `spmd.plan_version`; it holds kernel functions (fused loop nests on
// memrefs, marked `spmd.plan_kernel`) and one schedule function per entry
// (marked `spmd.plan_arena_bytes`, the size of its arena). A schedule holds
// only the ops below plus `func.return`, in the order every rank runs them:
// the runtime (runtime/Plan.h) maps each op to one step.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLAN_OPS_TD
#define SPMD_PLAN_OPS_TD

include "dialects/spmd/SPMDBase.td"
include "dialects/spmd/SPMDInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class SPMD_PlanOp<string mnemonic, list<Trait> traits = []>
    : Op<SPMD_Dialect, mnemonic, traits>;

def SPMD_PlanBufferOp : SPMD_PlanOp<"plan_buffer", [Pure]> {
  let summary = "a buffer at a fixed offset of the schedule's arena";
  let description = [{
    The memory planner assigns every buffer of a schedule an `offset` into one
    arena and reserves `bytes` there (the largest size over all ranks, so the
    memory plan is the same on every rank). Dynamic dims take their sizes from
    the operands.

    ```mlir
    %b = spmd.plan_buffer offset 64 bytes 512 : memref<8x16xf32>
    %d = spmd.plan_buffer [%n] offset 0 bytes 256 : memref<?x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_sizes, I64Attr:$offset,
                       I64Attr:$bytes);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = [{
    (`[` $dynamic_sizes^ `]`)? `offset` $offset `bytes` $bytes attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def SPMD_PlanKernelOp : SPMD_PlanOp<"plan_kernel",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "call a kernel function of the plan";
  let description = [{
    Runs the kernel `callee` (a `func.func` marked `spmd.plan_kernel`) on the
    given buffers, followed by `index` scalars: rank-dependent values the
    runtime computes from the rank's mesh coordinates or argument shapes
    (`spmd.local_offset`, `spmd.local_size`, `spmd.plan_chunk_size`, a
    `memref.dim` of an entry argument), e.g. the global offset a partitioned
    one-hot adds to its `linalg.index`.

    ```mlir
    spmd.plan_kernel @kernel_0(%a, %b) : memref<8xf32>, memref<8xf32>
    spmd.plan_kernel @kernel_1(%a, %off) : memref<?xf32>, index
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee,
                       Variadic<AnyTypeOf<[AnyMemRef, Index]>>:$operands);
  let assemblyFormat = [{
    $callee `(` $operands `)` attr-dict `:` type($operands)
  }];
  let hasVerifier = 1;
}

def SPMD_PlanGemmOp : SPMD_PlanOp<"plan_gemm"> {
  let summary = "C = beta * C + op(A) * op(B), a BLAS library call";
  let description = [{
    A, B and C are contiguous row-major 2-D memrefs, or 3-D with a leading
    batch dim (all three). `transpose_a`/`transpose_b` transpose the last two
    dims of the operand. `beta` is 0 (overwrite C) or 1 (accumulate into C,
    as linalg.matmul does).

    ```mlir
    spmd.plan_gemm %a, %b, %c transpose_b beta 0 : memref<8x4xf32>, memref<16x4xf32>, memref<8x16xf32>
    ```
  }];
  let arguments = (ins AnyMemRef:$a, AnyMemRef:$b, AnyMemRef:$c,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       I64Attr:$beta);
  let assemblyFormat = [{
    $a `,` $b `,` $c (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    `beta` $beta attr-dict `:` type($a) `,` type($b) `,` type($c)
  }];
  let hasVerifier = 1;
}

def SPMD_PlanChunkSizeOp : SPMD_PlanOp<"plan_chunk_size", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "this member's torch.chunk size of a dim split over a group";
  let description = [{
    The size of torch.chunk `i` of `size` elements split into as many chunks
    as the group over `mesh_axes` has members, where `i` is this device's
    index in that group (row-major over `mesh_axes` as listed): the split
    that `spmd.shard`, `spmd.reduce_scatter` and the split dim of
    `spmd.all_to_all` make. The runtime computes it from the rank's mesh
    coordinates; it sizes the dynamic (uneven) results of those collectives.

    ```mlir
    // 5 rows over tp=4: 2, 2, 1, 0.
    %n = spmd.plan_chunk_size @mesh ["tp"] of 5 : index
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       I64Attr:$size);
  let results = (outs Index:$result);
  let assemblyFormat = [{
    $mesh $mesh_axes `of` $size attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// Indices of `mesh_axes` in the mesh, for a verified op.
    ::llvm::SmallVector<int64_t> getMeshAxisIndices();
  }];
}

def SPMD_PlanCopyOp : SPMD_PlanOp<"plan_copy"> {
  let summary = "copy one buffer into another of the same shape";
  let arguments = (ins AnyMemRef:$source, AnyMemRef:$target);
  let assemblyFormat = [{
    $source `,` $target attr-dict `:` type($source) `,` type($target)
  }];
  let hasVerifier = 1;
}

class SPMD_PlanCollectiveOp<string mnemonic, list<Trait> traits = []>
    : SPMD_PlanOp<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
         SPMD_CollectiveOpInterface])> {
  code extraPlanDecls = [{
    /// Indices of `mesh_axes` in the mesh, for a verified op.
    ::llvm::SmallVector<int64_t> getMeshAxisIndices();
  }];
  let extraClassDeclaration = extraPlanDecls;
}

def SPMD_PlanAllGatherOp : SPMD_PlanCollectiveOp<"plan_all_gather"> {
  let summary = "spmd.all_gather on buffers";
  let description = [{
    ```mlir
    spmd.plan_all_gather %in, %out on @mesh ["tp"] dim 0 : memref<4x8xf32>, memref<16x8xf32>
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       I64Attr:$dim);
  let assemblyFormat = [{
    $input `,` $output `on` $mesh $mesh_axes `dim` $dim attr-dict `:` type($input) `,` type($output)
  }];
}

def SPMD_PlanAllReduceOp : SPMD_PlanCollectiveOp<"plan_all_reduce"> {
  let summary = "spmd.all_reduce on buffers (output may be the input)";
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       SPMD_ReductionKind:$kind);
  let assemblyFormat = [{
    $input `,` $output `on` $mesh $mesh_axes $kind attr-dict `:` type($input) `,` type($output)
  }];
}

def SPMD_PlanReduceScatterOp : SPMD_PlanCollectiveOp<"plan_reduce_scatter"> {
  let summary = "spmd.reduce_scatter on buffers";
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       I64Attr:$dim, SPMD_ReductionKind:$kind);
  let assemblyFormat = [{
    $input `,` $output `on` $mesh $mesh_axes `dim` $dim $kind attr-dict `:` type($input) `,` type($output)
  }];
}

def SPMD_PlanAllToAllOp : SPMD_PlanCollectiveOp<"plan_all_to_all"> {
  let summary = "spmd.all_to_all on buffers";
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       I64Attr:$split_dim, I64Attr:$concat_dim);
  let assemblyFormat = [{
    $input `,` $output `on` $mesh $mesh_axes `split` $split_dim `concat` $concat_dim attr-dict
    `:` type($input) `,` type($output)
  }];
}

def SPMD_PlanShardOp : SPMD_PlanCollectiveOp<"plan_shard",
    [DeclareOpInterfaceMethods<SPMD_CollectiveOpInterface, ["communicates"]>]> {
  let summary = "spmd.shard on buffers (a local copy of this member's chunk)";
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       I64Attr:$dim);
  let assemblyFormat = [{
    $input `,` $output `on` $mesh $mesh_axes `dim` $dim attr-dict `:` type($input) `,` type($output)
  }];
}

def SPMD_PlanPartialFromReplicatedOp
    : SPMD_PlanOp<"plan_partial_from_replicated",
        [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "spmd.partial_from_replicated on buffers (local, no communication)";
  let description = [{
    For `sum` the member with group index 0 copies the input and every other
    member writes zeros; for `avg`, `max` and `min` every member copies it.
    The output may be the input.

    ```mlir
    spmd.plan_partial_from_replicated %x, %x on @mesh ["tp"] sum : memref<8xf32>, memref<8xf32>
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       SPMD_ReductionKind:$kind);
  let assemblyFormat = [{
    $input `,` $output `on` $mesh $mesh_axes $kind attr-dict `:` type($input) `,` type($output)
  }];
  let extraClassDeclaration = [{
    /// Indices of `mesh_axes` in the mesh, for a verified op.
    ::llvm::SmallVector<int64_t> getMeshAxisIndices();
  }];
}

#endif // SPMD_PLAN_OPS_TD
