//===- SPMDOps.td - spmd operations ------------------------*- tablegen -*-===//

#ifndef SPMD_OPS_TD
#define SPMD_OPS_TD

include "dialects/spmd/SPMDBase.td"
include "dialects/spmd/SPMDAttrs.td"
include "dialects/spmd/SPMDInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class SPMD_Op<string mnemonic, list<Trait> traits = []>
    : Op<SPMD_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Mesh and layouts of global programs
//===----------------------------------------------------------------------===//

def SPMD_MeshOp : SPMD_Op<"mesh", [Symbol]> {
  let summary = "a named N-D device mesh";
  let description = [{
    Declares a mesh of devices with named axes. Devices are numbered
    row-major over the axes.

    ```mlir
    spmd.mesh @mesh ["dp"=2, "tp"=4]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$axis_sizes);
  let assemblyFormat = [{
    $sym_name custom<MeshAxes>($axis_names, $axis_sizes) attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The plain C++ mesh the runtime and layout arithmetic use.
    ::spmd::Mesh toMesh();
    int64_t getNumDevices();
    /// Index of the axis named `name`, or nullopt.
    std::optional<int64_t> getAxisIndex(::llvm::StringRef name);
  }];
}

def SPMD_ConstrainOp : SPMD_Op<"constrain", [Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "pin the layout of a global value at this point";
  let description = [{
    The result is the input, with the given layout. Propagation never
    overrides it; partitioning inserts the communication needed to get there.

    ```mlir
    %c = spmd.constrain %v to #spmd.layout<@mesh, [R, S(0)]> : tensor<13x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, SPMD_LayoutAttr:$layout);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `to` custom<LayoutAndType>($layout, type($result)) attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// Explicit collectives of local programs
//===----------------------------------------------------------------------===//

class SPMD_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : SPMD_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        SPMD_CollectiveOpInterface])> {
  code extraCollectiveDecls = [{
    /// Indices of `mesh_axes` in `mesh`, for a verified op.
    ::llvm::SmallVector<int64_t> getMeshAxisIndices(MeshOp mesh);
  }];
  let extraClassDeclaration = extraCollectiveDecls;
  // Over a group of one device (mesh axes of size 1) it is its input.
  let hasFolder = 1;
}

def SPMD_AllGatherOp : SPMD_CollectiveOp<"all_gather"> {
  let summary = "concatenate the group's local tensors along a dim";
  let description = [{
    The group is every device that shares all mesh coordinates except those
    on `mesh_axes`; it is ordered row-major over `mesh_axes` as listed. The
    result is the concatenation, in group order, of every member's input
    along `dim`. Members may contribute different sizes (uneven shards); a
    dynamic dim then holds this device's size.

    ```mlir
    %g = spmd.all_gather %x on @mesh ["tp"] dim 0 : tensor<?x16xf32> -> tensor<13x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $mesh_axes `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
}

def SPMD_AllReduceOp : SPMD_CollectiveOp<"all_reduce",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "element-wise reduction over the group, result on every member";
  let description = [{
    ```mlir
    %r = spmd.all_reduce %x on @mesh ["tp"] sum : tensor<13x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, SPMD_ReductionKind:$kind);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $mesh_axes $kind attr-dict `:` type($result)
  }];
}

def SPMD_ReduceScatterOp : SPMD_CollectiveOp<"reduce_scatter"> {
  let summary = "element-wise reduction over the group, each member keeps its chunk";
  let description = [{
    Reduces the (equally shaped) inputs of the group and gives member `i` the
    torch.chunk `i` of the result along `dim`. When the chunks differ in size
    the result dim is dynamic.

    ```mlir
    %s = spmd.reduce_scatter %x on @mesh ["tp"] dim 0 sum : tensor<16x32xf32> -> tensor<4x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, I64Attr:$dim,
                       SPMD_ReductionKind:$kind);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $mesh_axes `dim` $dim $kind attr-dict `:` type($input) `->` type($result)
  }];
}

def SPMD_AllToAllOp : SPMD_CollectiveOp<"all_to_all"> {
  let summary = "split along one dim, exchange, concatenate along another";
  let description = [{
    Member `i` splits its input into torch.chunks along `split_dim`, sends
    chunk `j` to member `j`, and concatenates what it receives in group order
    along `concat_dim`.

    ```mlir
    %a = spmd.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<4x16xf32> -> tensor<16x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $mesh_axes `split` $split_dim `concat` $concat_dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def SPMD_ShardOp : SPMD_CollectiveOp<"shard",
    [DeclareOpInterfaceMethods<SPMD_CollectiveOpInterface, ["communicates"]>]> {
  let summary = "this device's chunk of a group-replicated tensor (no communication)";
  let description = [{
    Takes torch.chunk `i` along `dim`, where `i` is this device's index in the
    group over `mesh_axes`. Local: nothing is sent.

    ```mlir
    %l = spmd.shard %x on @mesh ["tp"] dim 0 : tensor<13x16xf32> -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $mesh_axes `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Local helpers of partitioned programs
//===----------------------------------------------------------------------===//

def SPMD_PartialFromReplicatedOp
    : SPMD_Op<"partial_from_replicated", [Pure,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        AllTypesMatch<["input", "result"]>]> {
  let summary = "turn a group-replicated tensor into partial terms (no communication)";
  let description = [{
    The input holds the same value on every member of the group over
    `mesh_axes`; the result holds terms whose reduction by `kind` over that
    group is that value. For `sum` the member with group index 0 keeps the
    input and every other member holds zeros; for `avg`, `max` and `min`
    every member keeps the input. Local: nothing is sent.

    ```mlir
    %p = spmd.partial_from_replicated %x on @mesh ["tp"] sum : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, SPMD_ReductionKind:$kind);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $mesh_axes $kind attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// Indices of `mesh_axes` in `mesh`, for a verified op.
    ::llvm::SmallVector<int64_t> getMeshAxisIndices(MeshOp mesh);
  }];
  let hasFolder = 1;
}

def SPMD_LocalSizeOp : SPMD_Op<"local_size", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "this device's size of a dim sharded over mesh axes";
  let description = [{
    The size of this device's torch.chunk of a tensor dim of `global_size`
    elements sharded over `mesh_axes`, nested in the order listed (the first
    axis chunks the dim, the next chunks that chunk, ...; layouts list the
    axes sharding one dim in mesh order). Computed from this device's mesh
    coordinates; it is how partitioned programs get the dynamic (`?`) dims
    of uneven shards.

    ```mlir
    // 13 rows over tp=4: 4, 4, 4, 1.
    %n = spmd.local_size @mesh ["tp"] of 13 : index
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       I64Attr:$global_size);
  let results = (outs Index:$result);
  let assemblyFormat = [{
    $mesh $mesh_axes `of` $global_size attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// Indices of `mesh_axes` in `mesh`, for a verified op.
    ::llvm::SmallVector<int64_t> getMeshAxisIndices(MeshOp mesh);
  }];
}

def SPMD_LocalOffsetOp : SPMD_Op<"local_offset", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "this device's offset of its chunk of a dim sharded over mesh axes";
  let description = [{
    The global index of the first element of this device's torch.chunk of a
    tensor dim of `global_size` elements sharded over `mesh_axes` (nested in
    the order listed, as for `spmd.local_size`). Computed from this device's
    mesh coordinates. Partitioned linalg ops that read a sharded loop's index
    (`linalg.index`) add it to the local index to get the global one. An
    empty chunk's offset is where it would start (clamped to `global_size`).

    ```mlir
    // 13 rows over tp=4: 0, 4, 8, 12.
    %o = spmd.local_offset @mesh ["tp"] of 13 : index
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       I64Attr:$global_size);
  let results = (outs Index:$result);
  let assemblyFormat = [{
    $mesh $mesh_axes `of` $global_size attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// Indices of `mesh_axes` in `mesh`, for a verified op.
    ::llvm::SmallVector<int64_t> getMeshAxisIndices(MeshOp mesh);
  }];
}

//===----------------------------------------------------------------------===//
// Random numbers that do not depend on the sharding
//===----------------------------------------------------------------------===//

// A 0-d i64 tensor (the random ops' seed and step), buildable so that the
// assembly format need not spell its type.
def SPMD_I64Scalar : 0DTensorOf<[I64]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI64Type())">;

def SPMD_RandomOp : SPMD_Op<"random", [Pure]> {
  let summary = "counter-based random numbers, a pure function of the global index";
  let description = [{
    A tensor of random numbers whose element at global (row-major) index
    `i` is a pure function of `(seed, step, offset + i)`: Philox4x32-10
    keyed by the 64-bit `seed`, with counter `(offset + i, step)`. Since no
    element depends on any other, every layout, mesh and rank count gives
    bit-identical global values: partitioning needs no communication, each
    rank computes its shard's elements from their global indices (uneven and
    empty shards included).

    `distribution` with its parameters `a`, `b`:
    * `uniform`: in [a, b) (24 random bits of a float32 in [0, 1), scaled);
    * `normal`: mean a, standard deviation b (Box-Muller on two draws);
    * `bernoulli`: 1 with probability a, else 0 (a dropout keep mask is
      `bernoulli` with the keep probability).

    `offset` places the op's elements in the step's counter space: each
    random op of a program takes a disjoint range. Where it is absent,
    `spmd-expand-random` allocates the ranges in program order. `seed` and
    `step` are 0-d i64 tensors, typically program arguments, so a training
    loop draws fresh values every step and stays reproducible from its seed.

    ```mlir
    %keep = spmd.random "bernoulli"(0.9, 0.0) seed %seed step %step : tensor<8x16xf32>
    %w = spmd.random "normal"(0.0, 0.02) seed %seed step %step {offset = 128 : i64} : tensor<16x4xf32>
    ```
  }];
  let arguments = (ins SPMD_I64Scalar:$seed, SPMD_I64Scalar:$step,
                       StrAttr:$distribution, F64Attr:$a, F64Attr:$b,
                       OptionalAttr<I64Attr>:$offset);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $distribution `(` $a `,` $b `)` `seed` $seed `step` $step attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

#endif // SPMD_OPS_TD
