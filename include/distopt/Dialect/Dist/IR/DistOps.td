//===- DistOps.td - dist dialect operations ------------------*- tablegen -*-===//
#ifndef DIST_OPS_TD
#define DIST_OPS_TD

include "distopt/Dialect/Dist/IR/DistBase.td"
include "distopt/Dialect/Dist/IR/DistAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

def Dist_MeshOp : Dist_Op<"mesh", [Symbol]> {
  let summary = "a named device mesh";
  let description = [{
    Declares a logical mesh of devices with named axes, outer to inner. The
    number of devices is the product of the axis sizes; device (rank) `r` has
    coordinates given by `r` in row-major order over the axes.

    ```mlir
    dist.mesh @mesh [dp = 2, tp = 4]
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    StrArrayAttr:$axis_names,
    DenseI64ArrayAttr:$axis_sizes
  );
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumAxes() { return getAxisSizes().size(); }
    int64_t getNumDevices();
    /// Index of the axis called `name`, or -1.
    int64_t getAxisIndex(::llvm::StringRef name);
    ::llvm::StringRef getAxisName(int64_t axis);
    /// Coordinates of rank `rank` on every axis.
    ::llvm::SmallVector<int64_t> getCoords(int64_t rank);
    /// Rank of the device at `coords`.
    int64_t getRank(::llvm::ArrayRef<int64_t> coords);
  }];
}

//===----------------------------------------------------------------------===//
// Constraints and resharding (global view)
//===----------------------------------------------------------------------===//

def Dist_AnnotateOp : Dist_Op<"annotate", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "constrain the sharding of a tensor";
  let description = [{
    States that `input` should have sharding `sharding` from here on. The
    result is the same tensor. Propagation treats the annotation as a source
    of placements; `priority` orders conflicting sources (0 is the strongest,
    as in Shardy). Open (`?`) axes leave the choice to propagation. `source`
    records where the constraint came from (a plan line, a preset) so reports
    can explain the collectives it causes.

    The sharding is written without its `#dist.sharding` prefix (the op
    knows its kind), as Shardy does.

    ```mlir
    %w1 = dist.annotate %w to <@mesh, [R, S(1)]> priority 0
        source "blocks.*.mlp.fc1: colwise" : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    Dist_ShardingAttr:$sharding,
    DefaultValuedAttr<I64Attr, "0">:$priority,
    OptionalAttr<StrAttr>:$source
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `to` $sharding (`priority` $priority^)? (`source` $source^)?
    attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Dist_ReshardOp : Dist_Op<"reshard", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "change the sharding of a tensor";
  let description = [{
    Inserted by `dist-insert-reshards` where a value's sharding differs from
    what a user of it needs. Before partitioning both types are the global
    tensor type; after partitioning they are the local types of the source and
    target shardings and `global_type` keeps the global type so that
    `dist-reshard-to-collectives` can plan the collectives. `reason` says why
    the reshard exists (the annotation, op or conflict that caused it).

    ```mlir
    %1 = dist.reshard %0 from <@mesh, [P(sum)]> to <@mesh, [R]> reason "operand 0 of nn.add (blocks.0/attn/Add)"
        : tensor<4x64xf32> -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    Dist_ShardingAttr:$from,
    Dist_ShardingAttr:$to,
    OptionalAttr<StrAttr>:$reason,
    OptionalAttr<TypeAttr>:$global_type
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `from` $from `to` $to (`reason` $reason^)? attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives (local view: operands and results are per-device tensors)
//===----------------------------------------------------------------------===//

class Dist_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  code commonExtraClassDeclaration = [{
    /// The mesh axes (indices) the collective runs over.
    ::llvm::SmallVector<int64_t> getAxisIndices(::distopt::dist::MeshOp mesh);
  }];
  let extraClassDeclaration = commonExtraClassDeclaration;
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather", [Pure]> {
  let summary = "gather pieces of a dimension from the devices of a group";
  let description = [{
    The devices that differ only in their coordinates on `axes` form a group.
    Each contributes its local tensor; every member receives the pieces
    concatenated along `gather_dim` in group order (row-major over `axes`).
    `sizes`, when present, lists each member's extent along `gather_dim`
    (uneven pieces); absent means every member has the input's extent.

    ```mlir
    %1 = dist.all_gather %0 on @mesh axes ["tp"] dim 1
        : tensor<4x16xf32> -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$mesh,
    StrArrayAttr:$axes,
    I64Attr:$gather_dim,
    OptionalAttr<DenseI64ArrayAttr>:$sizes
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes `dim` $gather_dim (`sizes` $sizes^)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce", [Pure,
    SameOperandsAndResultType]> {
  let summary = "reduce partial values over a group; every member gets the result";
  let description = [{
    ```mlir
    %1 = dist.all_reduce %0 on @mesh axes ["tp"] sum : tensor<4x64xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$mesh,
    StrArrayAttr:$axes,
    Dist_ReductionKind:$reduction
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes $reduction attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter", [Pure]> {
  let summary = "reduce partial values and leave each member one piece";
  let description = [{
    Reduces the members' inputs element-wise and splits the result along
    `scatter_dim`; member `i` (in group order) keeps piece `i`. `sizes`, when
    present, lists every member's piece extent.

    ```mlir
    %1 = dist.reduce_scatter %0 on @mesh axes ["tp"] dim 1 sum
        : tensor<4x64xf32> -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$mesh,
    StrArrayAttr:$axes,
    I64Attr:$scatter_dim,
    Dist_ReductionKind:$reduction,
    OptionalAttr<DenseI64ArrayAttr>:$sizes
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes `dim` $scatter_dim $reduction
    (`sizes` $sizes^)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all", [Pure]> {
  let summary = "exchange pieces: split one dimension, concatenate another";
  let description = [{
    Each member cuts its input along `split_dim` into one piece per member and
    sends piece `j` to member `j`; the pieces received are concatenated along
    `concat_dim` in group order. Moves a sharding from `concat_dim` to
    `split_dim`. `split_sizes` / `concat_sizes`, when present, give the
    per-member extents for uneven pieces.

    ```mlir
    %1 = dist.all_to_all %0 on @mesh axes ["tp"] split 1 concat 0
        : tensor<4x64xf32> -> tensor<16x16xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$mesh,
    StrArrayAttr:$axes,
    I64Attr:$split_dim,
    I64Attr:$concat_dim,
    OptionalAttr<DenseI64ArrayAttr>:$split_sizes,
    OptionalAttr<DenseI64ArrayAttr>:$concat_sizes
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes `split` $split_dim `concat` $concat_dim
    (`split_sizes` $split_sizes^)? (`concat_sizes` $concat_sizes^)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_LocalSliceOp : Dist_CollectiveOp<"local_slice", [Pure]> {
  let summary = "keep this device's piece of a replicated dimension (no communication)";
  let description = [{
    The input is the same on every member of the group; each member keeps its
    own piece along `dim` (member `i` keeps piece `i`). No data moves between
    devices. `sizes`, when present, lists every member's piece extent.

    ```mlir
    %1 = dist.local_slice %0 on @mesh axes ["tp"] dim 0
        : tensor<64x16xf32> -> tensor<16x16xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$mesh,
    StrArrayAttr:$axes,
    I64Attr:$dim,
    OptionalAttr<DenseI64ArrayAttr>:$sizes
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes `dim` $dim (`sizes` $sizes^)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_CollectivePermuteOp : Dist_CollectiveOp<"collective_permute", [Pure,
    SameOperandsAndResultType]> {
  let summary = "send the local tensor to another member of the group";
  let description = [{
    `pairs` lists (source, target) positions within the group, flattened:
    `[s0, t0, s1, t1, ...]`; positions are row-major over `axes`. Each source
    sends its tensor to its target. A member that is no target receives zeros.

    ```mlir
    // swap the two halves of a tp=2 group
    %1 = dist.collective_permute %0 on @mesh axes ["tp"] pairs [0, 1, 1, 0]
        : tensor<4x16xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$mesh,
    StrArrayAttr:$axes,
    DenseI64ArrayAttr:$pairs
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes `pairs` $pairs attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Dist_ToPartialOp : Dist_CollectiveOp<"to_partial", [Pure,
    SameOperandsAndResultType]> {
  let summary = "turn a replicated value into a partial one (no communication)";
  let description = [{
    The group's first member keeps its value and every other member holds
    the reduction's identity (zeros for `sum`), so the members' values now
    reduce to the original. For `max`, `min` and `avg` every member keeps
    its value. Lets a replicated operand join a partial sum without a
    collective.

    ```mlir
    %1 = dist.to_partial %0 on @mesh axes ["tp"] sum : tensor<4x64xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$mesh,
    StrArrayAttr:$axes,
    Dist_ReductionKind:$reduction
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes $reduction attr-dict `:` type($input)
  }];
}

def Dist_PieceOffsetOp : Dist_Op<"piece_offset", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "where this device's piece of a split dimension starts";
  let description = [{
    The offset, within dimension `dim` of extent `extent`, of the piece this
    device holds under `sharding`. Appears in SPMD programs where a local
    computation depends on the device (an embedding lookup into a split
    table); partitioning for one rank folds it to a constant.

    ```mlir
    %off = dist.piece_offset <@mesh, [S(0)]> dim 0 extent 96 : tensor<i64>
    ```
  }];
  let arguments = (ins Dist_ShardingAttr:$sharding, I64Attr:$dim,
                       I64Attr:$extent);
  let results = (outs 0DTensorOf<[I32, I64]>:$result);
  let assemblyFormat = [{
    $sharding `dim` $dim `extent` $extent attr-dict `:` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Point to point (pipeline stages)
//===----------------------------------------------------------------------===//

def Dist_SendOp : Dist_Op<"send", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "send a tensor to the device at another position on a mesh axis";
  let description = [{
    Sends `input` to the device whose coordinates equal this device's except
    on `axis`, where it is `peer`. Used between pipeline stages (`axis` is the
    pipeline axis). `tag` matches a `dist.recv` on the peer.

    ```mlir
    dist.send %0 on @mesh axis "pp" to 1 tag 0 : tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$mesh,
    StrAttr:$axis,
    I64Attr:$peer,
    I64Attr:$tag
  );
  let assemblyFormat = [{
    $input `on` $mesh `axis` $axis `to` $peer `tag` $tag attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Dist_RecvOp : Dist_Op<"recv", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "receive a tensor from the device at another position on a mesh axis";
  let description = [{
    The counterpart of `dist.send`: receives the tensor that the device at
    position `peer` on `axis` sent with the same `tag`.

    ```mlir
    %0 = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins
    FlatSymbolRefAttr:$mesh,
    StrAttr:$axis,
    I64Attr:$peer,
    I64Attr:$tag
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `on` $mesh `axis` $axis `from` $peer `tag` $tag attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // DIST_OPS_TD
