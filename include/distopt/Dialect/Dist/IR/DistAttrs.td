//===- DistAttrs.td - the sharding attribute ----------------*- tablegen -*-===//
#ifndef DIST_ATTRS_TD
#define DIST_ATTRS_TD

include "distopt/Dialect/Dist/IR/DistBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def Dist_ShardingAttr : AttrDef<Dist_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "placement of a tensor on every axis of a device mesh";
  let description = [{
    A sharding names a mesh and lists one placement per mesh axis, in the
    mesh's axis order:

    | placement | meaning |
    | --- | --- |
    | `S(d)` or `Shard(d)` | dimension `d` of the tensor is split over this axis |
    | `S(d, sizes=[a, b, ...])` | split into pieces of the given sizes, one per device along the axis (devices of unequal speed or memory) |
    | `R` or `Replicate` | every device along this axis holds the same data |
    | `P(sum)` or `Partial(sum)` | devices along this axis hold partial values whose sum (or `max`, `min`, `avg`) is the tensor |
    | `?` | open: not decided yet |

    Example, on `dist.mesh @mesh [dp = 2, tp = 4]`:

    ```mlir
    // batch split over dp, features split over tp
    #dist.sharding<@mesh, [S(0), S(1)]>
    // split dimension 0 over both axes (dp major), partial over nothing
    #dist.sharding<@mesh, [S(0), S(0)]>
    // a row-parallel matmul's result before its all-reduce
    #dist.sharding<@mesh, [R, P(sum)]>
    #dist.sharding<@mesh, [R, S(1, sizes=[96, 32, 64, 64])]>
    ```

    Without sizes a dimension of extent n splits into pieces that differ by
    at most one, larger first. Explicit sizes must add up to the dimension's
    extent, and no other axis may split the same dimension.
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    ArrayRefParameter<"::distopt::dist::Placement", "placement per mesh axis">:$placements
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The mesh axes (indices, in mesh order) that shard tensor dimension `dim`.
    ::llvm::SmallVector<int64_t> getAxesForDim(int64_t dim) const;
    /// True if no placement is open.
    bool isFullyDecided() const;
    /// True if every placement is Replicate (or open).
    bool isReplicated() const;
    /// True if some axis holds a partial value.
    bool hasPartial() const;
    /// A copy with placement `axis` replaced.
    ShardingAttr withPlacement(int64_t axis, ::distopt::dist::Placement p) const;
    /// Checks the sharding against a tensor rank and a mesh; reports through
    /// `emitError` and fails when they do not fit.
    /// Checks the sharding fits a tensor of rank `tensorRank` on `mesh`;
    /// with the tensor's global shape, also that explicit piece sizes add
    /// up to their dimension.
    ::llvm::LogicalResult verifyFor(
        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError,
        int64_t tensorRank, ::distopt::dist::MeshOp mesh,
        ::std::optional<::llvm::ArrayRef<int64_t>> globalShape =
            ::std::nullopt) const;
    static ShardingAttr getReplicated(::mlir::MLIRContext *ctx,
                                      ::mlir::FlatSymbolRefAttr mesh,
                                      int64_t numAxes);
    static ShardingAttr getOpen(::mlir::MLIRContext *ctx,
                                ::mlir::FlatSymbolRefAttr mesh,
                                int64_t numAxes);
  }];
}

#endif // DIST_ATTRS_TD
