//===- Passes.td - fusion for a target's kernels -------------*- tablegen -*-===//
#ifndef DISTOPT_FUSION_PASSES_TD
#define DISTOPT_FUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistFuseForTarget : Pass<"dist-fuse-for-target", "mlir::ModuleOp"> {
  let summary = "Rewrite a per-rank program into the fused forms its target's kernels run";
  let description = [{
    Runs after partitioning, on the program a rank runs (or the SPMD
    program), and before export: the exporter translates the fused ops as
    they are. `target` names a target description
    (`include/distopt/Fusion/TargetDescription.h`): `cpu` (the host
    kernels), `cuda` (the CUDA kernels) or `none` (nothing fused). The
    tools take it from `--device`.

    An `nn.matmul` becomes an `nn.fused_matmul` where it can take one of
    these forms and the target's description accepts it (others stay):

    - reads a 2-D transpose's input as stored (`transposed`), where every
      reader of the transpose (`perm [1, 0]`) is a matmul that can: a
      transposed rhs, or a transposed lhs of a product of two matrices. The
      transpose then has no reader and goes.
    - adds a rank-1 bias of one value per column (an `nn.add` that is the
      product's only reader, whose other operand is defined before the
      matmul) and applies an exact `nn.gelu` that is the only reader of what
      comes before it, on a product with a matrix rhs whose element type
      the description's epilogues take (f32 and f64 for cpu and cuda).

    A value another op reads stays: a training step's backward reads a
    GELU's input, so that GELU runs on its own. The fused op stands where
    the matmul stood.

    Where the description has `softmaxGrad` (cpu and cuda), softmax's
    gradient as its rule writes it, `y * (dy - reduce_sum(dy * y))` with
    the sum kept along one axis and y, dy and the products of one type,
    becomes one `nn.fused_softmax_grad %y, %dy axis A`, when nothing else
    reads the product, the sum or the difference.

    Where the description has `crossEntropy` (cpu and cuda), cross-entropy
    over the last dim as the training step builds it (logits L, row max m,
    labels reshaped to `[..., 1]`, the class ids a constant of consecutive
    integers): `z = L - m`, `e = exp(z)`, `reduce_sum(e)`,
    `oh = equal(labels, ids)`, `reduce_sum(where(oh, z, 0))`, and for the
    gradient `sc = e * f`, `where(oh, sc - w, sc)`, every intermediate read
    only there, becomes `nn.fused_cross_entropy_sums` (where the first sum
    stood; a labels reshape that comes later moves before it) and
    `nn.fused_cross_entropy_grad` (where the gradient stood).

    Where the description has `foldHalfCasts` (cuda), the casts a bf16
    policy puts around its f32 softmax and loss fold into the kernels,
    which read and write 16-bit floats as stored: `nn.softmax` of an f32
    value widened from bf16/f16 that nothing else reads becomes
    `nn.fused_softmax` of the stored value; `nn.fused_softmax_grad` reads
    a widened `dy` that nothing else reads as stored and writes the
    narrowed result its only reader (a cast) wants; cross-entropy reads
    logits widened by a cast that only the pattern and the row's
    `reduce_max` read as stored (that `reduce_max` takes the stored logits
    and is widened after: the same value) and writes a gradient narrowed
    by its only reader as stored.

    Where the description has `softmaxScaleMask` (cpu and cuda),
    attention's scale and mask fold into the softmax and its gradient:
    a softmax (or `nn.fused_softmax`) of `where(mask, fill, x * c)` (or
    `x / c`, or the where's branches swapped), with c and fill scalar
    constants, the mask i1 of the scores' trailing dims after leading 1s
    and each op the only reader of the one before, becomes
    `nn.fused_softmax %x mask %mask` with `scale`, `divide`, `fill` and
    `mask_keeps`; a `nn.fused_softmax_grad` whose only reader is
    `where(mask, 0, g)` and whose result's only reader is a product or
    quotient by a scalar constant takes them in. Either part alone folds
    too. 16-bit scores only where the kernels read them as stored (cuda,
    after the casts fold): they round the scaled scores to the stored type
    as the mul did.

    Where the description has `geluGrad` (cpu and cuda), the exact GELU's
    gradient as its rule writes it, `dy * (0.5 * (1 + erf(x * c1)) + x *
    (exp((x * x) * -0.5) * c2))` with c1 and c2 scalar constants within a
    16-bit rounding of 1/sqrt(2) and 1/sqrt(2 pi), every op of one type
    and each the only reader of the one before, becomes
    `nn.fused_gelu_grad %x, %dy`.

    Where the description has `sumSquares` (cpu), `nn.reduce_sum` over
    every axis, without keepdims, of `nn.mul %x, %x` (f32 or f64, the mul
    read by nothing else), a gradient norm's term, becomes
    `nn.fused_sum_squares %x`.

    Example, with `target=cpu`: a linear layer and its GELU,

    ```mlir
    %wt = nn.transpose %w perm [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32>
    %m = nn.matmul %x, %wt : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
    %h = nn.add %m, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
    %g = nn.gelu %h : tensor<8x64xf32>
    ```

    becomes

    ```mlir
    %g = nn.fused_matmul %x, %w transposed bias %b gelu
        : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
    ```

    and with `target=none` stays as it is.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "the target whose fused forms to write: cpu, cuda or none">
  ];
  let dependentDialects = ["::distopt::nn::NNDialect"];
}

#endif // DISTOPT_FUSION_PASSES_TD
