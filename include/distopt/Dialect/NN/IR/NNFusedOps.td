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

def NN_FusedSoftmaxGradOp : Op<NN_Dialect, "fused_softmax_grad",
                                [Pure, AllTypesMatch<["y", "dy", "result"]>]> {
  let summary = "softmax's gradient, y * (dy - sum(dy * y)) along one axis, in one pass";
  let description = [{
    The gradient of a softmax with respect to its input, from the softmax's
    output `y` and the gradient `dy` of its output: `y * (dy - sum(dy * y,
    axis))`, the sum kept along `axis`. The gradient rule writes it as two
    products, a sum and a difference, four passes over a tensor as large as
    attention's scores; `dist-fuse-for-target` writes this op where the
    target's kernels compute it in one (reading `y` and `dy` once, the sum
    accumulated in the compute type). The exporter writes it as one
    `softmax_grad` instruction (inputs `y`, `dy`; `axis`).

    ```mlir
    %dx = nn.fused_softmax_grad %y, %dy axis 3 : tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$y, AnyRankedTensor:$dy, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $y `,` $dy `axis` $axis attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // NN_FUSED_OPS_TD
