//===- DistBase.td - the dist dialect, its enums and attributes -*- tablegen -*-===//
#ifndef DIST_BASE_TD
#define DIST_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::distopt::dist";
  let summary = "Device meshes, tensor placements, resharding and collectives";
  let description = [{
    The `dist` dialect describes how the tensors of a single-device program are
    laid out over a named device mesh, and the communication that moves them.

    * `dist.mesh` declares a mesh: named axes with sizes, outer to inner.
    * `#dist.sharding` gives, for every mesh axis, the placement of a tensor on
      that axis: `S(d)` (shard dimension `d`), `R` (replicate), `P(sum|max|min|avg)`
      (each device holds a partial value; the true value is their reduction), or
      `?` (open: not decided yet, propagation may fill it).
    * `dist.annotate` is a user constraint (a sharding with a priority);
      `dist.reshard` is a compiler-inserted change of sharding.
    * The collectives (`all_gather`, `all_reduce`, `reduce_scatter`, `all_to_all`,
      `collective_permute`), the communication-free `local_slice`, and
      `send`/`recv` appear after partitioning and operate on per-device (local)
      tensors.

    When several mesh axes shard the same tensor dimension, the axis listed
    earlier in the mesh is the major one: the dimension is first split over it,
    and each of its pieces is split again over the next axis. Dimensions that do
    not divide evenly are split into pieces whose sizes differ by at most one,
    larger pieces first.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how partial values combine", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Max", 1, "max">,
  I32EnumAttrCase<"Min", 2, "min">,
  I32EnumAttrCase<"Avg", 3, "avg">
]> {
  let cppNamespace = "::distopt::dist";
}


#endif // DIST_BASE_TD
