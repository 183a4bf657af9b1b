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
                                [Pure, AllShapesMatch<["y", "dy", "result"]>]> {
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

    `y`'s element type is the compute type. `dy` and the result have it
    too, or, when it is f32, may be bf16 or f16: `dy` is read widened and
    the result rounded once (a target whose kernels read and write 16-bit
    floats as stored folds the casts of a bf16 policy's f32 softmax in).

    With attention's mask and scale (the gradients of the mask and scale
    that `nn.fused_softmax` applies on its way in): where `mask` hides an
    element (an i1 value broadcast from x's trailing dims; true hides it,
    or false with `mask_keeps`) the result is 0, and every element is then
    multiplied by `scale` (divided with `divide`), as `where(mask, 0, g)`
    and a product (quotient) by a scalar constant would, rounding `g` to
    the result's type first.

    ```mlir
    %dx = nn.fused_softmax_grad %y, %dy axis 3 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xbf16>
    %dz = nn.fused_softmax_grad %y, %dy mask %m axis 3 {scale = 1.25e-01 : f64}
        : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<1x1x8x8xi1> -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$y, AnyRankedTensor:$dy,
                       Optional<AnyRankedTensor>:$mask, I64Attr:$axis,
                       OptionalAttr<F64Attr>:$scale, UnitAttr:$divide,
                       UnitAttr:$mask_keeps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $y `,` $dy (`mask` $mask^)? `axis` $axis attr-dict `:` type($y) `,` type($dy)
    (`,` type($mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_FusedGeluGradOp : Op<NN_Dialect, "fused_gelu_grad",
                             [Pure, AllTypesMatch<["x", "dy", "result"]>]> {
  let summary = "the exact GELU's gradient, dy * (Phi(x) + x phi(x)), in one pass";
  let description = [{
    The gradient of `nn.gelu` (approximate "none") with respect to its
    input `x`, from the gradient `dy` of its output: `dy * (0.5 * (1 +
    erf(x / sqrt(2))) + x * exp(-x^2 / 2) / sqrt(2 pi))`. The gradient rule
    writes it as eleven element-wise ops over a tensor as large as the MLP's
    hidden activations; `dist-fuse-for-target` writes this op where the
    target's kernels compute it in one pass (in the compute type: f32 for
    bf16 and f16, rounded once; the rule's ops round each step). The
    exporter writes it as one `gelu_grad` instruction (inputs `x`, `dy`).

    ```mlir
    %dx = nn.fused_gelu_grad %x, %dy : tensor<8x3072xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$x, AnyRankedTensor:$dy);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $x `,` $dy attr-dict `:` type($result)
  }];
}

def NN_FusedSumSquaresOp : Op<NN_Dialect, "fused_sum_squares", [Pure]> {
  let summary = "the sum of the squares of every element, in one pass";
  let description = [{
    `nn.reduce_sum` over every axis of `nn.mul %x, %x`: a gradient norm's
    term. The training step writes it as the two ops, which write and read
    back a tensor as large as the gradient; `dist-fuse-for-target` writes
    this op where the target's kernel reads `x` once (accumulating in
    double). The exporter writes it as one `sum_squares` instruction. The
    result has `x`'s element type, or f32 for a bf16 or f16 `x` (a bf16
    policy's gradient, whose cast to f32 folded in: the sum of its cast).

    ```mlir
    %s = nn.fused_sum_squares %g : tensor<300x32xf32> -> tensor<f32>
    %t = nn.fused_sum_squares %h : tensor<300x32xbf16> -> tensor<f32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$x);
  let results = (outs 0DTensorOf<[AnyFloat]>:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $x attr-dict `:` type($x) `->` type($result)
  }];
}

def NN_FusedSoftmaxOp : Op<NN_Dialect, "fused_softmax",
                           [Pure, AllShapesMatch<["input", "result"]>]> {
  let summary = "softmax along one axis of an input read as stored, scaled and masked on its way in";
  let description = [{
    `nn.softmax` of `input` as attention computes it before: multiplied by
    `scale` (divided with `divide`) and rounded to the input's type, then
    replaced by `fill` where `mask` hides it (an i1 value broadcast from the
    input's trailing dims; true hides, or false with `mask_keeps`), each
    only when present: `softmax(where(mask, fill, x * scale))` in one pass
    instead of three over a tensor as large as attention's scores. The
    result has the input's type, or f32 for a bf16 or f16 input: what a
    bf16 policy's f32 softmax computes from its widening cast, reading the
    16-bit input as stored. `dist-fuse-for-target` writes it for a target
    whose kernels do; the exporter writes it as a `softmax` instruction
    (the mask as a second input; `scale`, `divide`, `fill`, `mask_keeps`).

    ```mlir
    %y = nn.fused_softmax %x axis 3 : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
    %p = nn.fused_softmax %s mask %m axis 3 {scale = 1.25e-01 : f64, fill = 0xFFF0000000000000 : f64}
        : tensor<2x4x8x8xf32>, tensor<1x1x8x8xi1> -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Optional<AnyRankedTensor>:$mask,
                       I64Attr:$axis, OptionalAttr<F64Attr>:$scale,
                       UnitAttr:$divide, OptionalAttr<F64Attr>:$fill,
                       UnitAttr:$mask_keeps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input (`mask` $mask^)? `axis` $axis attr-dict `:` type($input)
    (`,` type($mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_FusedCrossEntropySumsOp : Op<NN_Dialect, "fused_cross_entropy_sums",
    [Pure, AllTypesMatch<["max", "sum_exp", "label_logit"]>]> {
  let summary = "cross-entropy's two sums over each row's classes, in one pass over the logits";
  let description = [{
    For each row of `logits` (the classes along the last dim; this
    program's classes are `first_class`, `first_class + 1`, ...) with the
    row's max `max` (the logits' shape with the last dim 1):
    `sum_exp = sum_j exp(x_j - max)` and `label_logit = x_l - max` for the
    row's label `l`, 0 where the label is not one of the program's classes
    (an ignored position, or a class another rank holds). `x` is `logits`
    widened to `max`'s element type, the compute type: f32 or f64; logits
    may be stored as bf16 or f16 when it is f32. The cross-entropy the
    training step builds writes both as `sub`, `exp`, `equal`, `where` and
    two `reduce_sum`s over the logits; `dist-fuse-for-target` writes this
    op where the target computes them in one pass. The exporter writes it
    as one `cross_entropy_sums` instruction.

    ```mlir
    %s, %zl = nn.fused_cross_entropy_sums %logits, %max, %labels first_class 0
        : tensor<4x16x300xbf16>, tensor<4x16x1xf32>, tensor<4x16x1xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$logits, AnyRankedTensor:$max,
                       AnyRankedTensor:$labels, I64Attr:$first_class);
  let results = (outs AnyRankedTensor:$sum_exp, AnyRankedTensor:$label_logit);
  let assemblyFormat = [{
    $logits `,` $max `,` $labels `first_class` $first_class attr-dict `:`
    type($logits) `,` type($max) `,` type($labels)
  }];
  let hasVerifier = 1;
}

def NN_FusedCrossEntropyGradOp : Op<NN_Dialect, "fused_cross_entropy_grad",
    [Pure, AllTypesMatch<["max", "scale", "weight"]>]> {
  let summary = "cross-entropy's gradient with respect to the logits, in one pass";
  let description = [{
    `result_j = exp(x_j - max) * scale - (j == label ? weight : 0)` for
    each row of `logits` (classes last, this program's from `first_class`
    on, as in `nn.fused_cross_entropy_sums`), with `max`, `scale` and
    `weight` one value per row: softmax times `scale = weight / sum_exp`,
    less `weight` at the label. `x` is `logits` widened to the compute type
    (`max`'s: f32 or f64); the result is rounded to its element type (the
    compute type, or bf16 / f16 when it is f32). The training step's rule
    writes it as `mul`, `sub` and `where` over the logits (and `exp` before
    them); `dist-fuse-for-target` writes this op where the target computes
    it in one pass, reading the logits as stored. The exporter writes it as
    one `cross_entropy_grad` instruction.

    ```mlir
    %g = nn.fused_cross_entropy_grad %logits, %max, %scale, %weight, %labels first_class 0
        : tensor<4x16x300xbf16>, tensor<4x16x1xf32>, tensor<4x16x1xi64> -> tensor<4x16x300xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$logits, AnyRankedTensor:$max,
                       AnyRankedTensor:$scale, AnyRankedTensor:$weight,
                       AnyRankedTensor:$labels, I64Attr:$first_class);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $logits `,` $max `,` $scale `,` $weight `,` $labels `first_class` $first_class attr-dict `:`
    type($logits) `,` type($max) `,` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // NN_FUSED_OPS_TD
