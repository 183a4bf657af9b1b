//===- NNFusedOps.td - nn ops in a target's fused forms ------*- tablegen -*-===//
//
// Ops only dist-fuse-for-target writes, after partitioning: the forms a
// target's kernels run in one call. The sharding passes never see them, so
// they have no sharding rule or gradient.
//
//===----------------------------------------------------------------------===//
#ifndef NN_FUSED_OPS_TD
#define NN_FUSED_OPS_TD

include "distopt/Dialect/NN/IR/NNBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NN_FusedMatMulOp : Op<NN_Dialect, "fused_matmul", [Pure]> {
  let summary = "matrix product with operands read transposed and a bias and GELU on its way out";
  let description = [{
    `nn.matmul` of `lhs` and `rhs`, an operand marked `transposed` read as
    its transpose (it is a matrix; for the lhs, both operands are), then
    `bias` (rank 1, one value per column of the product) added to every
    row, then the exact GELU (`gelu`): each only when present. Only
    `dist-fuse-for-target` writes it, after partitioning, in the forms the
    target's kernels accept; the exporter writes it as one `matmul`
    instruction (`transpose_lhs`, `transpose_rhs`, the bias as a third
    input, `epilogue = "gelu"`).

    ```mlir
    %y = nn.fused_matmul %x, %w transposed bias %b gelu
        : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs,
                       Optional<AnyRankedTensor>:$bias,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       UnitAttr:$gelu);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $lhs (`transposed` $transpose_lhs^)? `,` $rhs (`transposed` $transpose_rhs^)?
    (`bias` $bias^)? (`gelu` $gelu^)? attr-dict `:` type($lhs) `,` type($rhs)
    (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // NN_FUSED_OPS_TD
