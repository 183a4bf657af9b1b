//===- NNOps.td - nn dialect operations ----------------------*- tablegen -*-===//
#ifndef NN_OPS_TD
#define NN_OPS_TD

include "distopt/Dialect/NN/IR/NNBase.td"
include "distopt/Dialect/Dist/IR/ShardingRuleInterface.td"
include "distopt/Dialect/NN/IR/GradientOpInterface.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/OpAsmInterface.td"

// `localForm` lists the ShardingRuleOpInterface methods an op implements
// beyond its rule (["partitionOp"] when its local form is not a clone).
class NN_Op<string mnemonic, list<Trait> traits = [],
            list<string> localForm = []>
    : Op<NN_Dialect, mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<Dist_ShardingRuleOpInterface, localForm>])>;

// An op with a gradient rule (GradientOpInterface).
def NN_Differentiable : DeclareOpInterfaceMethods<NN_GradientOpInterface>;

// An op whose result type follows from its operands and attributes.
class NN_InferredOp<string mnemonic, list<Trait> traits = [],
                    list<string> localForm = []>
    : NN_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<InferTypeOpInterface>]), localForm>;

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

def NN_WeightOp : NN_Op<"weight"> {
  let summary = "a reference to a weight stored in the model file";
  let description = [{
    A model parameter (an ONNX initializer). The IR holds where its bytes are,
    not the bytes: `file` (relative to the model's directory; empty when
    unknown) and the byte `offset` of its first element, stored row-major in
    the result's element type. `name` is the initializer name that plans
    match against. After partitioning, each rank reads only its own slice.

    A weight may be a window of a larger stored tensor (`stored_shape`,
    `window_offsets`): one of Q, K and V cut out of a fused QKV matrix, say.
    The result type is the window's shape.

    `stored_type` is the element type of the stored bytes when it differs
    from the result's: a bf16 or f16 model's parameter trained from an f32
    master is stored in 16 bits and widened when it is loaded.

    ```mlir
    %w = nn.weight "blocks.0.mlp.fc1.weight" file "model.onnx" offset 4096
        : tensor<64x256xf32>
    %q = nn.weight "qkv" file "model.onnx" offset 0
        {stored_shape = array<i64: 64, 192>, window_offsets = array<i64: 0, 64>}
        : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, DefaultValuedStrAttr<StrAttr, "">:$file,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       OptionalAttr<DenseI64ArrayAttr>:$stored_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$window_offsets,
                       OptionalAttr<TypeAttr>:$stored_type);
  let results = (outs AnyRankedTensor:$result);
  let extraClassDeclaration = [{
    /// The element type of the bytes in the file.
    mlir::Type getStoredElementType() {
      if (auto t = getStoredType())
        return *t;
      return getResult().getType().getElementType();
    }
  }];
  let assemblyFormat = [{
    $name (`file` $file^)? (`offset` $offset^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def NN_ConstantOp : NN_Op<"constant", [ConstantLike,
    AllTypesMatch<["value", "result"]>], ["partitionOp"]> {
  let summary = "a small constant tensor held in the IR";
  let description = [{
    ```mlir
    %c = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class NN_BinaryOp<string mnemonic, string what, list<Trait> traits = []>
    : NN_InferredOp<mnemonic, traits> {
  let summary = what # " (numpy broadcasting)";
  let description = [{
    Element-wise, with numpy broadcasting of the two operands.
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def NN_AddOp : NN_BinaryOp<"add", "addition", [NN_Differentiable]>;
def NN_SubOp : NN_BinaryOp<"sub", "subtraction", [NN_Differentiable]>;
def NN_MulOp : NN_BinaryOp<"mul", "multiplication", [NN_Differentiable]>;
def NN_DivOp : NN_BinaryOp<"div", "division (integers truncate toward zero)", [NN_Differentiable]>;
def NN_PowOp : NN_BinaryOp<"pow", "power", [NN_Differentiable]>;
def NN_MaxOp : NN_BinaryOp<"max", "maximum", [NN_Differentiable]>;
def NN_MinOp : NN_BinaryOp<"min", "minimum", [NN_Differentiable]>;
def NN_ModOp : NN_BinaryOp<"mod", "remainder"> {
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$fmod);
}
def NN_EqualOp : NN_BinaryOp<"equal", "equality test">;
def NN_LessOp : NN_BinaryOp<"less", "less-than test">;
def NN_LessEqualOp : NN_BinaryOp<"less_equal", "less-or-equal test">;
def NN_GreaterOp : NN_BinaryOp<"greater", "greater-than test">;
def NN_GreaterEqualOp : NN_BinaryOp<"greater_equal", "greater-or-equal test">;
def NN_AndOp : NN_BinaryOp<"and", "logical and">;
def NN_OrOp : NN_BinaryOp<"or", "logical or">;
def NN_XorOp : NN_BinaryOp<"xor", "logical xor">;
def NN_ShiftLeftOp : NN_BinaryOp<"shift_left", "bit shift of unsigned integers to the left"> {
  let description = [{
    `lhs << rhs`, element-wise with numpy broadcasting, on unsigned integer
    operands of one type; a shift by the width or more gives 0.
  }];
  let hasVerifier = 1;
}
def NN_ShiftRightOp : NN_BinaryOp<"shift_right", "bit shift of unsigned integers to the right"> {
  let description = [{
    `lhs >> rhs` (logical), element-wise with numpy broadcasting, on unsigned
    integer operands of one type; a shift by the width or more gives 0.
  }];
  let hasVerifier = 1;
}

def NN_WhereOp : NN_InferredOp<"where", [NN_Differentiable]> {
  let summary = "select between two tensors (numpy broadcasting)";
  let description = [{
    `result = condition ? lhs : rhs`, element-wise, all three broadcast.
  }];
  let arguments = (ins AnyRankedTensor:$condition, AnyRankedTensor:$lhs,
                       AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs)
    `,` type($rhs) `->` type($result)
  }];
}

class NN_UnaryOp<string mnemonic, string what, list<Trait> traits = []>
    : NN_InferredOp<mnemonic, !listconcat(traits, [SameOperandsAndResultType])> {
  let summary = what # " (element-wise)";
  let description = [{
    Element-wise; the result has the operand's type.
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def NN_NegOp : NN_UnaryOp<"neg", "negation", [NN_Differentiable]>;
def NN_AbsOp : NN_UnaryOp<"abs", "absolute value", [NN_Differentiable]>;
def NN_ExpOp : NN_UnaryOp<"exp", "exponential", [NN_Differentiable]>;
def NN_LogOp : NN_UnaryOp<"log", "natural logarithm", [NN_Differentiable]>;
def NN_SqrtOp : NN_UnaryOp<"sqrt", "square root", [NN_Differentiable]>;
def NN_ReciprocalOp : NN_UnaryOp<"reciprocal", "1/x", [NN_Differentiable]>;
def NN_TanhOp : NN_UnaryOp<"tanh", "hyperbolic tangent", [NN_Differentiable]>;
def NN_SigmoidOp : NN_UnaryOp<"sigmoid", "logistic sigmoid", [NN_Differentiable]>;
def NN_ErfOp : NN_UnaryOp<"erf", "error function", [NN_Differentiable]>;
def NN_ReluOp : NN_UnaryOp<"relu", "max(x, 0)", [NN_Differentiable]>;
def NN_NotOp : NN_UnaryOp<"not", "logical not">;
def NN_SinOp : NN_UnaryOp<"sin", "sine", [NN_Differentiable]>;
def NN_CosOp : NN_UnaryOp<"cos", "cosine", [NN_Differentiable]>;
def NN_AcosOp : NN_UnaryOp<"acos", "arccosine">;
def NN_AsinOp : NN_UnaryOp<"asin", "arcsine">;
def NN_AtanOp : NN_UnaryOp<"atan", "arctangent">;
def NN_FloorOp : NN_UnaryOp<"floor", "round down", [NN_Differentiable]>;
def NN_CeilOp : NN_UnaryOp<"ceil", "round up", [NN_Differentiable]>;
def NN_RoundOp : NN_UnaryOp<"round", "round half to even", [NN_Differentiable]>;
def NN_SignOp : NN_UnaryOp<"sign", "sign", [NN_Differentiable]>;
def NN_IdentityOp : NN_UnaryOp<"identity", "copy", [NN_Differentiable]>;

def NN_GeluOp : NN_UnaryOp<"gelu", "Gaussian error linear unit", [NN_Differentiable]> {
  let description = [{
    `x * Phi(x)`; `approximate = "tanh"` uses the tanh approximation.
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let hasVerifier = 1;
}

def NN_LeakyReluOp : NN_UnaryOp<"leaky_relu", "x if x >= 0 else alpha * x", [NN_Differentiable]> {
  let arguments = (ins AnyRankedTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.01">:$alpha);
}

def NN_ClipOp : NN_UnaryOp<"clip", "clamp to [min, max]", [NN_Differentiable]> {
  let description = [{
    Clamps to `[min, max]`; a missing bound is unbounded.
  }];
  let arguments = (ins AnyRankedTensor:$input, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
}

def NN_CastOp : NN_Op<"cast", [NN_Differentiable]> {
  let summary = "convert the element type";
  let description = [{
    ```mlir
    %1 = nn.cast %0 : tensor<4xi64> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and normalisation
//===----------------------------------------------------------------------===//

class NN_ReduceOp<string mnemonic, string what, list<string> localForm = [],
                  list<Trait> traits = []>
    : NN_InferredOp<mnemonic, traits, localForm> {
  let summary = what # " over `axes`";
  let description = [{
    Reduces over the listed `axes` (non-negative, sorted, unique). With
    `keepdims` the reduced dimensions stay with extent 1.

    ```mlir
    %1 = nn.}] # mnemonic # [{ %0 axes [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdims);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `axes` $axes (`keepdims` $keepdims^)? attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum", "sum", [], [NN_Differentiable]>;
def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean", "mean", ["partitionOp"],
                                   [NN_Differentiable]>;
def NN_ReduceMaxOp : NN_ReduceOp<"reduce_max", "maximum", [], [NN_Differentiable]>;
def NN_ReduceMinOp : NN_ReduceOp<"reduce_min", "minimum", [], [NN_Differentiable]>;
def NN_ReduceProdOp : NN_ReduceOp<"reduce_prod", "product">;

def NN_CumSumOp : NN_InferredOp<"cumsum", [SameOperandsAndResultType,
                                          NN_Differentiable]> {
  let summary = "running sum along `axis`";
  let description = [{
    As ONNX CumSum: `result[.., j, ..]` is the sum of `input[.., i, ..]` over
    `i <= j` along `axis`; `exclusive` leaves out `i == j`, `reverse` sums
    from the end (`i >= j`).

    ```mlir
    %c = nn.cumsum %x axis 1 exclusive : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis,
                       UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis (`exclusive` $exclusive^)? (`reverse` $reverse^)?
    attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def NN_OneHotOp : NN_InferredOp<"one_hot"> {
  let summary = "one-hot encoding of integer `indices` along a new `axis`";
  let description = [{
    As ONNX OneHot: the result has the shape of `indices` with a new
    dimension of extent `depth` at `axis`, and the element type of `values`
    (`[off, on]`): `on` where the position along `axis` equals the index
    (a negative index counts from the end, `index + depth`), `off` elsewhere;
    an index outside `[-depth, depth)` gives a row of `off`.

    ```mlir
    %h = nn.one_hot %ids, %vals depth 10 axis 1
        : tensor<4xi64>, tensor<2xf32> -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$indices, AnyRankedTensor:$values,
                       I64Attr:$depth, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $indices `,` $values `depth` $depth `axis` $axis attr-dict `:`
    type($indices) `,` type($values) `->` type($result)
  }];
}

class NN_ArgReduceOp<string mnemonic, string what> : NN_InferredOp<mnemonic> {
  let summary = "index of the " # what # " along `axis`";
  let description = [{
    Returns int64 indices (first occurrence).
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis, UnitAttr:$keepdims);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis (`keepdims` $keepdims^)? attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_ArgMaxOp : NN_ArgReduceOp<"argmax", "maximum">;
def NN_ArgMinOp : NN_ArgReduceOp<"argmin", "minimum">;

def NN_TopKOp : NN_InferredOp<"top_k"> {
  let summary = "indices of the `k` largest (or smallest) elements along `axis`";
  let description = [{
    As ONNX TopK's second result: int64 indices along `axis` of the `k`
    largest elements (`smallest`: the `k` smallest), in order from the
    largest (smallest) on; of equal elements the lower index comes first.
    The result has the input's shape with extent `k` at `axis`. ONNX TopK's
    values are `nn.gather_elements` of the input at these indices, which
    also gives them their gradient.

    ```mlir
    %i = nn.top_k %gates k 2 axis 1 : tensor<16x4xf32> -> tensor<16x2xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$k, I64Attr:$axis,
                       UnitAttr:$smallest);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `k` $k `axis` $axis (`smallest` $smallest^)? attr-dict `:`
    type($input) `->` type($result)
  }];
}

class NN_SoftmaxLikeOp<string mnemonic, string what>
    : NN_InferredOp<mnemonic, [SameOperandsAndResultType, NN_Differentiable]> {
  let summary = what # " along `axis`";
  let description = [{
    ```mlir
    %1 = nn.}] # mnemonic # [{ %0 axis 1 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `axis` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def NN_SoftmaxOp : NN_SoftmaxLikeOp<"softmax", "softmax">;
def NN_LogSoftmaxOp : NN_SoftmaxLikeOp<"log_softmax", "log of softmax">;

def NN_LayerNormOp : NN_InferredOp<"layer_norm", [NN_Differentiable]> {
  let summary = "layer normalisation over the trailing dimensions";
  let description = [{
    Normalises over dimensions `axis` .. rank-1 (biased variance, as ONNX
    LayerNormalization), then multiplies by `scale` and adds `bias`
    (optional), both broadcast against the normalised dimensions.

    ```mlir
    %1 = nn.layer_norm %x, %g, %b axis 2 epsilon 1.0e-05
        : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                       Optional<AnyRankedTensor>:$bias, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? `axis` $axis `epsilon` $epsilon attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_BatchNormOp : NN_InferredOp<"batch_norm", [NN_Differentiable]> {
  let summary = "batch normalisation with fixed statistics (inference)";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias`, per channel (dim 1).
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                       AnyRankedTensor:$bias, AnyRankedTensor:$mean,
                       AnyRankedTensor:$variance,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance `epsilon` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and data movement
//===----------------------------------------------------------------------===//

def NN_MatMulOp : NN_InferredOp<"matmul", [NN_Differentiable]> {
  let summary = "matrix product with numpy semantics";
  let description = [{
    As numpy `matmul`: the last two dimensions multiply, leading (batch)
    dimensions broadcast; a 1-D operand is promoted and its dimension dropped.

    ```mlir
    %2 = nn.matmul %x, %w : tensor<2x16x64xf32>, tensor<64x256xf32> -> tensor<2x16x256xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def NN_EinsumOp : NN_InferredOp<"einsum", [NN_Differentiable]> {
  let summary = "Einstein summation over the operands' index letters";
  let description = [{
    As ONNX Einsum, in explicit form: `equation` names each operand's
    dimensions by a letter (`a`-`z`, `A`-`Z`), terms separated by `,`, then
    `->` and the result's letters. Each result element is the sum, over the
    letters missing from the result, of the product of the operands'
    elements; a letter repeated within one operand takes its diagonal. All
    dimensions one letter names have one extent; the result's letters are
    distinct and each names an operand dimension. The importer writes
    ONNX's implicit form and `...` out into this form.

    ```mlir
    %d = nn.einsum "tec,td->ecd" %mask, %x
        : (tensor<16x4x8xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
    ```

    Canonicalization (run after partitioning) turns a static two-operand
    einsum that is one matrix product without batch letters, each term's
    letters in two contiguous groups (`xyk,xyn->kn`: rows `xy` summed),
    into `nn.matmul` of the operands reshaped (and transposed) to matrices,
    so it runs on the GEMM kernels.
  }];
  let arguments = (ins StrAttr:$equation, Variadic<AnyRankedTensor>:$inputs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $equation $inputs attr-dict `:` functional-type($inputs, results)
  }];
  let hasCanonicalizer = 1;
}

def NN_TransposeOp : NN_InferredOp<"transpose", [NN_Differentiable]> {
  let summary = "permute dimensions";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`.

    ```mlir
    %1 = nn.transpose %0 perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `perm` $perm attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NN_ReshapeOp : NN_Op<"reshape", [NN_Differentiable]> {
  let summary = "reinterpret the elements with a new shape";
  let description = [{
    Row-major order is kept; the result type is the new shape.

    ```mlir
    %1 = nn.reshape %0 : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NN_ExpandOp : NN_Op<"expand", [NN_Differentiable]> {
  let summary = "broadcast to a larger shape";
  let description = [{
    Numpy-broadcasts the input to the result type's shape.

    ```mlir
    %1 = nn.expand %0 : tensor<1x16xf32> -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NN_ConcatOp : NN_InferredOp<"concat", [NN_Differentiable]> {
  let summary = "join tensors along a dimension";
  let description = [{
    ```mlir
    %2 = nn.concat %0, %1 axis 1 : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $inputs `axis` $axis attr-dict `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

def NN_SliceOp : NN_InferredOp<"slice", [NN_Differentiable], ["partitionOp"]> {
  let summary = "strided slice with one start/end/step per dimension";
  let description = [{
    For every dimension `d`, takes indices `starts[d], starts[d] + steps[d], ...`
    up to (excluding) `ends[d]`. Starts are within the dimension; a negative
    step walks backwards and `ends[d]` may then be -1 (past index 0).

    ```mlir
    %1 = nn.slice %0 starts [0, 64] ends [4, 128] steps [1, 1]
        : tensor<4x192xf32> -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `starts` $starts `ends` $ends `steps` $steps attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_GatherOp : NN_InferredOp<"gather", [NN_Differentiable], ["partitionOp"]> {
  let summary = "take slices of `data` along `axis` at `indices` (embedding lookup)";
  let description = [{
    As ONNX Gather: the result shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`; negative indices count from the end.

    ```mlir
    %e = nn.gather %wte, %ids axis 0 : tensor<96x64xf32>, tensor<2x16xi64> -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `axis` $axis attr-dict `:` type($data) `,` type($indices)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_GatherElementsOp : NN_InferredOp<"gather_elements", [NN_Differentiable]> {
  let summary = "pick one element of `data` along `axis` per index (torch.gather)";
  let description = [{
    As ONNX GatherElements: `indices` has the rank of `data` and the result
    has the shape of `indices`;
    `result[i0, .., ik, ..] = data[i0, .., indices[i0, .., ik, ..], ..]` with
    the index in position `axis` (negative indices count from the end).
    Outside `axis`, `indices` may be smaller than `data`.

    ```mlir
    %lp = nn.gather_elements %logp, %ids axis 2
        : tensor<2x16x96xf32>, tensor<2x16x1xi64> -> tensor<2x16x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `axis` $axis attr-dict `:` type($data) `,` type($indices)
    `->` type($result)
  }];
}

def NN_GatherNDOp : NN_InferredOp<"gather_nd", [NN_Differentiable]> {
  let summary = "pick slices of `data` at index tuples (ONNX GatherND)";
  let description = [{
    As ONNX GatherND: the last dimension of `indices` (extent k) holds
    index tuples into `data`'s dimensions `batch_dims` .. `batch_dims + k`
    (negative indices count from the end); the first `batch_dims`
    dimensions of both are shared. The result has the shape
    `indices.shape[:-1] + data.shape[batch_dims + k:]`.

    ```mlir
    %r = nn.gather_nd %data, %idx batch_dims 0
        : tensor<2x2xf32>, tensor<2x2xi64> -> tensor<2xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `batch_dims` $batch_dims attr-dict `:` type($data) `,`
    type($indices) `->` type($result)
  }];
}

def NN_ScatterNDOp : NN_InferredOp<"scatter_nd", [NN_Differentiable]> {
  let summary = "write (or combine) slices of `updates` into a copy of `data` at index tuples";
  let description = [{
    As ONNX ScatterND: the last dimension of `indices` (extent k) holds
    index tuples into `data`'s first k dimensions (negative indices count
    from the end); `updates` has the shape
    `indices.shape[:-1] + data.shape[k:]`. The result is `data` with each
    slice replaced (`reduction` `none`; which of repeated indices wins is
    unspecified, as in ONNX) or combined with the value there (`add`,
    `mul`, `max`, `min`, in index order).

    ```mlir
    %r = nn.scatter_nd %data, %idx, %upd reduction "add"
        : (tensor<8xf32>, tensor<4x1xi64>, tensor<4xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       AnyRankedTensor:$updates,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates (`reduction` $reduction^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_DetOp : NN_InferredOp<"det"> {
  let summary = "determinant of square matrices";
  let description = [{
    The determinant of each `[M, M]` matrix in the last two dimensions of a
    floating-point tensor `[*, M, M]`; the result is `[*]`.

    ```mlir
    %d = nn.det %a : tensor<3x2x2xf32> -> tensor<3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def NN_ScatterElementsOp : NN_InferredOp<"scatter_elements", [NN_Differentiable]> {
  let summary = "write (or combine) `updates` into a copy of `data` along `axis`";
  let description = [{
    As ONNX ScatterElements: `indices` and `updates` have one shape, of the
    rank of `data`; the result is `data` with
    `result[i0, .., indices[i0, .., ik, ..], ..] = updates[i0, .., ik, ..]`
    (index in position `axis`, negative indices counting from the end).
    `reduction` is `none` (replace; which of repeated indices wins is
    unspecified, as in ONNX), `add`, `mul`, `max` or `min` (combine with the
    value there, in index order).

    ```mlir
    %r = nn.scatter_elements %data, %ids, %upd axis 1 reduction "add"
        : (tensor<3x3xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       AnyRankedTensor:$updates, I64Attr:$axis,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates `axis` $axis (`reduction` $reduction^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_PadOp : NN_InferredOp<"pad", [NN_Differentiable]> {
  let summary = "pad (or crop, with negative amounts) every dimension";
  let description = [{
    `pads` holds the amounts before each dimension, then after each.
    `mode` is `constant` (fill with `value`), `reflect` or `edge`.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$pads,
                       DefaultValuedStrAttr<StrAttr, "constant">:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `pads` $pads attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_RangeOp : NN_Op<"range"> {
  let summary = "arithmetic sequence from scalar start, limit, delta";
  let arguments = (ins AnyRankedTensor:$start, AnyRankedTensor:$limit,
                       AnyRankedTensor:$delta);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $start `,` $limit `,` $delta attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW)
//===----------------------------------------------------------------------===//

def NN_ConvOp : NN_InferredOp<"conv", [NN_Differentiable]> {
  let summary = "N-d convolution, channels first";
  let description = [{
    As ONNX Conv: input `[N, C, spatial...]`, weight `[M, C/group, kernel...]`,
    optional bias `[M]`. `pads` holds begin amounts then end amounts.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$weight,
                       Optional<AnyRankedTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

class NN_PoolOp<string mnemonic, string what>
    : NN_InferredOp<mnemonic, [NN_Differentiable]> {
  let summary = what # " pooling over the spatial dimensions";
  let description = [{
    As ONNX pooling: input `[N, C, spatial...]`; `pads` holds begin then end
    amounts; `ceil_mode` rounds the output extent up.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, UnitAttr:$ceil_mode,
                       UnitAttr:$count_include_pad);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_MaxPoolOp : NN_PoolOp<"max_pool", "maximum">;
def NN_AvgPoolOp : NN_PoolOp<"avg_pool", "average">;

def NN_MaxPoolIndicesOp : NN_InferredOp<"max_pool_indices"> {
  let summary = "where each maximum pooling window has its maximum";
  let description = [{
    ONNX MaxPool's Indices output: for each window of `nn.max_pool` with
    the same attributes, the position of its (first) maximum in the whole
    input, flattened row-major, or with the spatial dimensions column-major
    when `storage_order` is set. The result is i64 in the pooled shape. The
    positions count the batch and channel offsets, so nothing is split.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, UnitAttr:$ceil_mode,
                       UnitAttr:$storage_order);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

class NN_GlobalPoolOp<string mnemonic, string what>
    : NN_InferredOp<mnemonic, [NN_Differentiable]> {
  let summary = what # " over all spatial dimensions";
  let description = [{
    Input `[N, C, spatial...]`, result `[N, C, 1, ...]`.
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NN_GlobalAvgPoolOp : NN_GlobalPoolOp<"global_avg_pool", "average">;
def NN_GlobalMaxPoolOp : NN_GlobalPoolOp<"global_max_pool", "maximum">;

def NN_ResizeOp : NN_InferredOp<"resize"> {
  let summary = "resize by interpolation (ONNX Resize)";
  let description = [{
    Each output element is interpolated from the input, separably per
    dimension, as ONNX Resize: `mode` is `nearest` (rounded by
    `nearest_mode`), `linear` or `cubic` (`cubic_coeff_a`; `exclude_outside`
    drops and renormalises taps outside the input). An output coordinate maps
    to an input coordinate by `coordinate_transformation_mode` (`half_pixel`,
    `pytorch_half_pixel`, `align_corners`, `asymmetric`,
    `tf_half_pixel_for_nn`, `tf_crop_and_resize`) using the dimension's
    `scales` entry; `tf_crop_and_resize` reads `roi` (starts, then ends, as
    fractions of the input) and writes `extrapolation_value` where the
    coordinate falls outside the input.

    `sizes` holds the output's extent in every dimension whose scale is not
    1. A dimension of scale 1 keeps the input's extent (its `sizes` entry is
    not read), so it may be split when the transformation leaves it
    unchanged.

    ```mlir
    %y = nn.resize %x {mode = "linear", scales = array<f64: 1.0, 1.0, 2.0, 2.0>,
                       sizes = array<i64: 1, 3, 8, 8>}
        : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseF64ArrayAttr:$scales,
                       DenseI64ArrayAttr:$sizes,
                       DefaultValuedStrAttr<StrAttr, "nearest">:$mode,
                       DefaultValuedStrAttr<StrAttr, "half_pixel">:
                           $coordinate_transformation_mode,
                       DefaultValuedStrAttr<StrAttr, "round_prefer_floor">:
                           $nearest_mode,
                       DefaultValuedAttr<F64Attr, "-0.75">:$cubic_coeff_a,
                       UnitAttr:$exclude_outside,
                       DefaultValuedAttr<F64Attr, "0.0">:$extrapolation_value,
                       OptionalAttr<DenseF64ArrayAttr>:$roi);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether dimension `d` passes through unchanged (scale 1 and a
    /// transformation that maps every index to itself there).
    bool keepsDimension(int64_t d);
  }];
}

def NN_GridSampleOp : NN_InferredOp<"grid_sample"> {
  let summary = "sample an image at grid points (ONNX GridSample, 2-D)";
  let description = [{
    Input `[N, C, H, W]`, grid `[N, Ho, Wo, 2]` of (x, y) points normalised
    to [-1, 1]; result `[N, C, Ho, Wo]`. `mode` is `bilinear`, `nearest` or
    `bicubic`; points outside the image read zeros, the border or the
    reflection (`padding_mode` `zeros`, `border`, `reflection`);
    `align_corners` puts -1 and 1 at the centres of the corner pixels
    instead of their outer edges.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$grid,
                       DefaultValuedStrAttr<StrAttr, "bilinear">:$mode,
                       DefaultValuedStrAttr<StrAttr, "zeros">:$padding_mode,
                       UnitAttr:$align_corners);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $grid attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Training: persistent state and the ops gradients need
//===----------------------------------------------------------------------===//

def NN_VariableOp : NN_Op<"variable"> {
  let summary = "persistent state that starts as zeros (optimizer state)";
  let description = [{
    A tensor that lives across runs of a training step, like a weight, but
    created as zeros instead of read from the model file: Adam's moments,
    SGD's momentum buffer. The step's new value is a function result whose
    `nn.updates` names the variable (see dist-build-training-step).

    ```mlir
    %m = nn.variable "fc1.weight/exp_avg" : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_ScatterAddOp : NN_InferredOp<"scatter_add", [], ["partitionOp"]> {
  let summary = "add slices of `updates` into `base` along `axis` at `indices`";
  let description = [{
    The gradient of `nn.gather`: for every index position `j`,
    `result[..., indices[j], ...] += updates[..., j, ...]` along `axis`
    (repeated indices accumulate; negative indices count from the end).
    `updates` has the shape `nn.gather` would produce for `base` and
    `indices`.

    ```mlir
    %g = nn.scatter_add %zeros, %ids, %dy axis 0
        : (tensor<96x64xf32>, tensor<2x16xi64>, tensor<2x16x64xf32>) -> tensor<96x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$base, AnyRankedTensor:$indices,
                       AnyRankedTensor:$updates, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $base `,` $indices `,` $updates `axis` $axis attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_ConvGradInputOp : NN_Op<"conv_grad_input", [NN_Differentiable]> {
  let summary = "gradient of a convolution with respect to its input";
  let description = [{
    Given the gradient of a convolution's result and its weight, the gradient
    of its input (a transposed convolution). The result type is the input's.
    Attributes are the forward convolution's. ONNX ConvTranspose imports as
    this op, so it has a gradient of its own: a convolution for its
    operand, `nn.conv_grad_weight` for the weight.
  }];
  let arguments = (ins AnyRankedTensor:$result_grad, AnyRankedTensor:$weight,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $result_grad `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_ConvGradWeightOp : NN_Op<"conv_grad_weight"> {
  let summary = "gradient of a convolution with respect to its weight";
  let description = [{
    Given a convolution's input and the gradient of its result, the gradient
    of its weight (summed over the batch). The result type is the weight's.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$result_grad,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

class NN_PoolGradOp<string mnemonic, string what> : NN_Op<mnemonic> {
  let summary = "gradient of " # what # " pooling with respect to its input";
  let description = [{
    Given the pooling's input and the gradient of its result, the gradient of
    its input. Attributes are the forward pooling's.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$result_grad,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_MaxPoolGradOp : NN_PoolGradOp<"max_pool_grad", "maximum">;
def NN_AvgPoolGradOp : NN_PoolGradOp<"avg_pool_grad", "average">;

//===----------------------------------------------------------------------===//
// Microbatches: one copy of the work, run once per microbatch
//===----------------------------------------------------------------------===//

def NN_MicrobatchLoopOp : Op<NN_Dialect, "microbatch_loop", [
    RecursiveMemoryEffects, SingleBlock,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "run the body once per microbatch and sum what it yields";
  let description = [{
    A training step's gradient accumulation: the body is the forward, loss
    and backward of one microbatch, and it runs `microbatches` times. Its
    block argument is the microbatch's index (an `i64` scalar, 0 to
    `microbatches` - 1), with which the body picks its own inputs from the
    step's (`nn.microbatch_select`). Each result is the sum, over the
    microbatches in index order, of the value the body yields in its place
    (in the value's own element type): the gradients and the loss.

    A pipeline stage's loop has a `schedule`: its body is cut into
    actions by `nn.microbatch_action` markers (a forward, backward or
    weight-gradient pass of one model chunk), and the schedule lists the
    actions to run as (microbatch, pass, chunk) triples (pass 0 forward, 1
    backward, 2 weight gradients), in order. Each microbatch runs its
    actions in body order, but the microbatches interleave as the schedule
    says (GPipe, 1F1B, interleaved, zero-bubble: docs/pipeline.md). Each
    value the body yields joins its running sum as soon as it is made, in
    whichever action (the rank program's add follows its op). Sends and
    receives in the body use tag + microbatch * `tag_stride`.

    Values defined before the loop (weights, optimizer states, constants,
    the transposes of weights) are read by every microbatch and computed
    once. The body's own values belong to one microbatch: the runtime frees
    them after their last use in it, so one microbatch's activations are
    live at a time, and the program holds the body once whatever the count
    (docs/training.md, docs/rank-program.md).

    ```mlir
    %dw, %loss = nn.microbatch_loop (%mb) count 2 : tensor<8x2xf32>, tensor<f32> {
      %x = nn.microbatch_select %mb, %x0, %x1 : tensor<2x8xf32>
      ...
      nn.microbatch_yield %dw_mb, %loss_mb : tensor<8x2xf32>, tensor<f32>
    }
    ```
  }];
  let arguments = (ins I64Attr:$microbatches,
                       OptionalAttr<DenseI64ArrayAttr>:$schedule,
                       OptionalAttr<I64Attr>:$tag_stride);
  let results = (outs Variadic<AnyRankedTensor>:$sums);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The microbatch index the body reads (an i64 scalar).
    mlir::BlockArgument getIndex() { return getBody().front().getArgument(0); }
    /// The values the body yields, one per result.
    mlir::Operation::operand_range getYielded() {
      return getBody().front().getTerminator()->getOperands();
    }
  }];
}

def NN_MicrobatchSelectOp : NN_Op<"microbatch_select"> {
  let summary = "the input of the running microbatch";
  let description = [{
    Inside an `nn.microbatch_loop`: candidate `index` of the candidates (one
    per microbatch, each the step input of that microbatch), read as is.

    ```mlir
    %x = nn.microbatch_select %mb, %x0, %x1 : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$index,
                       Variadic<AnyRankedTensor>:$candidates);
  let results = (outs AnyRankedTensor:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def NN_MicrobatchActionOp : Op<NN_Dialect, "microbatch_action", [
    HasParent<"MicrobatchLoopOp">]> {
  let summary = "where one action of a pipeline stage's loop body starts";
  let description = [{
    Inside an `nn.microbatch_loop` with a `schedule`: the ops from here to
    the next marker (or the yield) are the action `pass` (0 forward, 1
    backward, 2 weight gradients) of model chunk `chunk`.

    ```mlir
    nn.microbatch_action pass 1 chunk 0
    ```
  }];
  let arguments = (ins I64Attr:$pass, I64Attr:$chunk);
  let assemblyFormat = "`pass` $pass `chunk` $chunk attr-dict";
}

def NN_MicrobatchYieldOp : Op<NN_Dialect, "microbatch_yield", [
    Pure, Terminator, HasParent<"MicrobatchLoopOp">]> {
  let summary = "what one microbatch adds to the loop's sums";
  let description = [{
    Ends an `nn.microbatch_loop` body: operand i is the microbatch's
    contribution to the loop's result i, of the same type.

    ```mlir
    nn.microbatch_yield %dw, %loss : tensor<8x2xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

//===----------------------------------------------------------------------===//
// Optimizer updates: one op per parameter, element by element
//===----------------------------------------------------------------------===//

def NN_AdamUpdateOp : NN_Op<"adam_update"> {
  let summary = "one Adam or AdamW step of a parameter and its two moments";
  let description = [{
    Element by element, in the element type, in this order (PyTorch's
    single-tensor Adam/AdamW):

    ```
    g  = grad * grad_scale                    (the clipping coefficient, or 1)
    g  = g + param * weight_decay             (Adam's L2 decay; 0 for AdamW)
    p  = param * param_scale                  (AdamW's 1 - lr * wd, or 1)
    m' = exp_avg * beta1 + g * (1 - beta1)
    v' = exp_avg_sq * beta2 + (g * (1 - beta2)) * g
    p' = p + (-step_size) * (m' / (sqrt(v') / bias_correction2_sqrt + eps))
    ```

    The attributes are rounded to the element type as they are used
    (`1 - beta1` computed in f64 first). The scalar operands change per step
    (learning-rate schedule, bias corrections, clipping) and are rank-0
    tensors. Results: the new parameter and moments, typed as `param`.
    The gradient of an f32 parameter may be bf16 or f16 (a bf16 policy's,
    whose cast to f32 `dist-fuse-for-target` folded in); it is widened
    exactly as it is read, so the update is the one of its f32 cast.
    An f32 parameter's update may have a fourth result, bf16 or f16: the
    new parameter rounded to nearest even (a compute copy kept as state,
    whose `nn.cast` of the new parameter `dist-fuse-for-target` folded in).

    ```mlir
    %p2, %m2, %v2 = nn.adam_update %p, %g, %m, %v, %scale, %pscale, %step, %bc2
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64,
         weight_decay = 0.0 : f64}
        : (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>,
           tensor<64x32xf32>, tensor<f32>, tensor<f32>, tensor<f32>,
           tensor<f32>) -> (tensor<64x32xf32>, tensor<64x32xf32>,
           tensor<64x32xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$param, AnyRankedTensor:$grad,
                       AnyRankedTensor:$exp_avg, AnyRankedTensor:$exp_avg_sq,
                       AnyRankedTensor:$grad_scale,
                       AnyRankedTensor:$param_scale,
                       AnyRankedTensor:$step_size,
                       AnyRankedTensor:$bias_correction2_sqrt,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay);
  let results = (outs AnyRankedTensor:$new_param,
                      AnyRankedTensor:$new_exp_avg,
                      AnyRankedTensor:$new_exp_avg_sq,
                      Optional<AnyRankedTensor>:$new_param_copy);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $grad_scale `,`
    $param_scale `,` $step_size `,` $bias_correction2_sqrt attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_SgdUpdateOp : NN_Op<"sgd_update"> {
  let summary = "one SGD step with momentum of a parameter and its buffer";
  let description = [{
    Element by element, in the element type (PyTorch's single-tensor SGD,
    dampening 0; the buffer starts at zero, so the first step sets it to
    the gradient):

    ```
    g    = grad * grad_scale                  (the clipping coefficient, or 1)
    g    = g + param * weight_decay
    buf' = momentum_buffer * momentum + g
    step = nesterov ? g + buf' * momentum : buf'
    p'   = param + (-lr) * step
    ```

    As for `nn.adam_update`, an f32 parameter's gradient may be bf16 or f16.

    ```mlir
    %p2, %b2 = nn.sgd_update %p, %g, %buf, %scale, %lr
        {momentum = 0.9 : f64, weight_decay = 0.0 : f64, nesterov = false}
        : (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>,
           tensor<f32>, tensor<f32>) -> (tensor<64x32xf32>, tensor<64x32xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$param, AnyRankedTensor:$grad,
                       AnyRankedTensor:$momentum_buffer,
                       AnyRankedTensor:$grad_scale, AnyRankedTensor:$lr,
                       F64Attr:$momentum, F64Attr:$weight_decay,
                       BoolAttr:$nesterov);
  let results = (outs AnyRankedTensor:$new_param,
                      AnyRankedTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `,` $grad_scale `,` $lr attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // NN_OPS_TD
