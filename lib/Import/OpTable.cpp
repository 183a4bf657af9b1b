//===- OpTable.cpp - the ONNX ops the importer knows, by opset --*- C++ -*-===//
//
// One entry per ONNX op type: the opset versions in which the op (or its
// signature) changed, its input/output counts per version, and its
// attributes with the opset range in which each exists. A node is checked
// against the entry for the model's default-domain opset before its handler
// runs, so handlers see only well-formed nodes; anything else is an error
// naming the node, op type and opset.
//
//===----------------------------------------------------------------------===//
#include "ImportContext.h"
#include "distopt/Import/OnnxImporter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <climits>

using namespace mlir;
using namespace distopt::onnximport;

namespace {

using AP = onnx::AttributeProto;
constexpr int kMany = INT_MAX;

/// An attribute valid for opsets [from, until).
struct AttrSpec {
  const char *name;
  AP::AttributeType type;
  int from = 1;
  int until = INT_MAX;
  bool required = false;
};

/// Input/output counts from opset `from` on.
struct Arity {
  int from;
  int minIn, maxIn;
  int minOut = 1, maxOut = 1;
};

struct OpSpec {
  const char *type;
  Handler handler;
  /// Opsets in which the op changed; the first is where it appeared (or the
  /// oldest version the importer supports).
  std::vector<int> versions;
  std::vector<Arity> arity;
  std::vector<AttrSpec> attrs;
  const char *notes = "";
};

AttrSpec req(AttrSpec a) {
  a.required = true;
  return a;
}

const std::vector<OpSpec> &opSpecs() {
  static const std::vector<OpSpec> specs = [] {
    std::vector<OpSpec> s;
    auto op = [&](const char *type, Handler h, std::vector<int> versions,
                  std::vector<Arity> arity, std::vector<AttrSpec> attrs = {},
                  const char *notes = "") {
      s.push_back({type, h, std::move(versions), std::move(arity),
                   std::move(attrs), notes});
    };
    // Before opset 7 binary ops broadcast only on request (`broadcast`,
    // `axis`: the second operand aligned at `axis` of the first).
    auto binary = [&](const char *type, std::vector<int> versions,
                      Handler h = binaryOp) {
      op(type, h, versions, {{1, 2, 2}},
         {{"broadcast", AP::INT, 1, 7}, {"axis", AP::INT, 1, 7}});
    };
    auto unary = [&](const char *type, std::vector<int> versions,
                     std::vector<AttrSpec> attrs = {}, Handler h = unaryOp) {
      op(type, h, versions, {{1, 1, 1}}, attrs);
    };
    // Element-wise arithmetic, comparison and logic (numpy broadcasting).
    binary("Add", {6, 7, 13, 14});
    binary("Sub", {6, 7, 13, 14});
    binary("Mul", {6, 7, 13, 14});
    binary("Div", {6, 7, 13, 14});
    binary("Pow", {1, 7, 12, 13, 15}, powOp);
    op("Mod", modOp, {10, 13}, {{1, 2, 2}}, {{"fmod", AP::INT}},
       "fmod=0 needs integer operands");
    binary("Equal", {1, 7, 11, 13, 19});
    binary("Less", {1, 7, 9, 13});
    binary("Greater", {1, 7, 9, 13});
    binary("LessOrEqual", {12, 16});
    binary("GreaterOrEqual", {12, 16});
    binary("And", {1, 7});
    binary("Or", {1, 7});
    binary("Xor", {1, 7});
    op("BitShift", bitShiftOp, {11}, {{11, 2, 2}},
       {req({"direction", AP::STRING})}, "unsigned integers; LEFT or RIGHT");
    for (const char *v : {"Max", "Min"})
      op(v, variadicOp, {6, 8, 12, 13}, {{1, 1, kMany}}, {},
         "variadic: a chain of binary ops");
    op("Sum", variadicOp, {6, 8, 13}, {{1, 1, kMany}}, {},
       "variadic: a chain of binary ops");
    op("Mean", variadicOp, {6, 8, 13}, {{1, 1, kMany}}, {},
       "sum chain divided by the input count");
    // Element-wise unary.
    unary("Neg", {6, 13});
    unary("Abs", {6, 13});
    unary("Exp", {6, 13});
    unary("Log", {6, 13});
    unary("Sqrt", {6, 13});
    unary("Reciprocal", {6, 13});
    unary("Tanh", {6, 13});
    unary("Sigmoid", {6, 13});
    unary("Relu", {6, 13, 14});
    unary("Floor", {6, 13});
    unary("Ceil", {6, 13});
    unary("Erf", {9, 13});
    unary("Sign", {9, 13});
    unary("Sin", {7, 22});
    unary("Cos", {7, 22});
    unary("Acos", {7, 22});
    unary("Asin", {7, 22});
    unary("Atan", {7, 22});
    unary("Round", {11, 22});
    unary("Not", {1});
    unary("Identity", {1, 13, 14, 16, 19, 21, 23}, {}, identityOp);
    unary("Gelu", {20}, {{"approximate", AP::STRING}}, geluOp);
    unary("LeakyRelu", {6, 16}, {{"alpha", AP::FLOAT}}, leakyReluOp);
    // Short chains of nn ops (mathOp in OpsElementwise.cpp).
    unary("Softplus", {1, 22}, {}, mathOp);
    unary("HardSigmoid", {6, 22}, {{"alpha", AP::FLOAT}, {"beta", AP::FLOAT}},
          mathOp);
    unary("Elu", {6, 22}, {{"alpha", AP::FLOAT}}, mathOp);
    unary("HardSwish", {14, 22}, {}, mathOp);
    unary("Tan", {7, 22}, {}, mathOp);
    for (const char *v : {"Sinh", "Cosh", "Asinh", "Acosh", "Atanh"})
      unary(v, {9, 22}, {}, mathOp);
    unary("Softsign", {1, 22}, {}, mathOp);
    unary("Mish", {18, 22}, {}, mathOp);
    unary("Selu", {6, 22}, {{"alpha", AP::FLOAT}, {"gamma", AP::FLOAT}}, mathOp);
    unary("Celu", {12}, {{"alpha", AP::FLOAT}}, mathOp);
    unary("Shrink", {9}, {{"bias", AP::FLOAT}, {"lambd", AP::FLOAT}}, mathOp);
    unary("IsNaN", {9, 13, 20}, {}, mathOp);
    unary("IsInf", {10, 20},
          {{"detect_negative", AP::INT}, {"detect_positive", AP::INT}}, mathOp);
    unary("ThresholdedRelu", {10, 22}, {{"alpha", AP::FLOAT}}, mathOp);
    op("PRelu", preluOp, {6, 7, 9, 16}, {{1, 2, 2}}, {},
       "x < 0 ? slope * x : x");
    op("Trilu", triluOp, {14}, {{1, 1, 2}}, {{"upper", AP::INT}},
       "a where with a constant mask; k must be known");
    op("Clip", clipOp, {6, 11, 12, 13}, {{1, 1, 1}, {11, 1, 3}},
       {{"min", AP::FLOAT, 1, 11}, {"max", AP::FLOAT, 1, 11}},
       "bounds: attributes before 11, inputs from 11");
    op("Cast", castOp, {6, 9, 13, 19, 21, 23}, {{1, 1, 1}},
       {req({"to", AP::INT}), {"saturate", AP::INT, 19}});
    op("CastLike", castOp, {15, 19, 21, 23}, {{1, 2, 2}},
       {{"saturate", AP::INT, 19}}, "a Cast to input 1's type");
    op("Where", whereOp, {9, 16}, {{1, 3, 3}}, {});
    op("Dropout", dropoutOp, {6, 7, 10, 12, 13, 22},
       {{1, 1, 1, 1, 2}, {12, 1, 3, 1, 2}},
       {{"ratio", AP::FLOAT, 1, 12},
        {"is_test", AP::INT, 1, 7},
        {"seed", AP::INT, 12}},
       "inference: identity, mask all true");

    // Constants and shapes.
    op("Constant", constantOp, {1, 9, 11, 12, 13, 19, 21, 23}, {{1, 0, 0}},
       {{"value", AP::TENSOR},
        {"sparse_value", AP::SPARSE_TENSOR, 11},
        {"value_float", AP::FLOAT, 12},
        {"value_floats", AP::FLOATS, 12},
        {"value_int", AP::INT, 12},
        {"value_ints", AP::INTS, 12},
        {"value_string", AP::STRING, 12},
        {"value_strings", AP::STRINGS, 12}},
       "all value forms but strings");
    op("ConstantOfShape", constantOfShapeOp, {9, 20, 21, 23}, {{1, 1, 1}},
       {{"value", AP::TENSOR}});
    op("Shape", shapeOp, {1, 13, 15, 19, 21, 23}, {{1, 1, 1}},
       {{"start", AP::INT, 15}, {"end", AP::INT, 15}}, "evaluated at import");
    op("Size", sizeOp, {1, 13, 19, 21, 23}, {{1, 1, 1}}, {}, "evaluated at import");
    op("Range", rangeOp, {11}, {{1, 3, 3}}, {},
       "inputs must be known at import");

    // Data movement.
    op("Transpose", transposeOp, {1, 13, 21, 23}, {{1, 1, 1}},
       {{"perm", AP::INTS}});
    op("Reshape", reshapeOp, {5, 13, 14, 19, 21, 23}, {{1, 2, 2}},
       {{"allowzero", AP::INT, 14}}, "shape must be known at import");
    op("Flatten", flattenOp, {1, 9, 11, 13, 21, 23}, {{1, 1, 1}},
       {{"axis", AP::INT}});
    op("Squeeze", squeezeOp, {1, 11, 13, 21, 23}, {{1, 1, 1}, {13, 1, 2}},
       {{"axes", AP::INTS, 1, 13}}, "axes: attribute before 13");
    op("Unsqueeze", unsqueezeOp, {1, 11, 13, 21, 23}, {{1, 1, 1}, {13, 2, 2}},
       {{"axes", AP::INTS, 1, 13, /*required=*/true}},
       "axes: attribute before 13");
    op("Concat", concatOp, {4, 11, 13}, {{1, 1, kMany}},
       {req({"axis", AP::INT})});
    op("Split", splitOp, {2, 11, 13, 18},
       {{1, 1, 1, 1, kMany}, {13, 1, 2, 1, kMany}},
       {{"axis", AP::INT},
        {"split", AP::INTS, 1, 13},
        {"num_outputs", AP::INT, 18}},
       "split: attribute before 13; num_outputs from 18");
    op("Slice", sliceOp, {1, 10, 11, 13}, {{1, 1, 1}, {10, 3, 5}},
       {req({"starts", AP::INTS, 1, 10}),
        req({"ends", AP::INTS, 1, 10}),
        {"axes", AP::INTS, 1, 10}},
       "attributes before 10; bounds clamped, negative steps");
    op("Gather", gatherOp, {1, 11, 13}, {{1, 2, 2}}, {{"axis", AP::INT}});
    op("GatherElements", gatherElementsOp, {11, 13}, {{1, 2, 2}},
       {{"axis", AP::INT}});
    op("ScatterElements", scatterElementsOp, {11, 13, 16, 18}, {{1, 3, 3}},
       {{"axis", AP::INT}, {"reduction", AP::STRING, 16}},
       "reduction none, add, mul (16); max, min (18)");
    op("Scatter", scatterElementsOp, {9}, {{1, 3, 3}}, {{"axis", AP::INT}},
       "as ScatterElements");
    op("GatherND", gatherNDOp, {11, 12, 13}, {{1, 2, 2}},
       {{"batch_dims", AP::INT, 12}}, "index tuples in the last dimension");
    op("ScatterND", scatterNDOp, {11, 13, 16, 18}, {{1, 3, 3}},
       {{"reduction", AP::STRING, 16}},
       "reduction none, add, mul (16); max, min (18)");
    op("ReverseSequence", reverseSequenceOp, {10}, {{1, 2, 2}},
       {{"batch_axis", AP::INT}, {"time_axis", AP::INT}},
       "gather_elements at an index table built from the lengths");
    for (const char *v : {"HannWindow", "HammingWindow", "BlackmanWindow"})
      op(v, windowOp, {17}, {{1, 1, 1}},
         {{"output_datatype", AP::INT}, {"periodic", AP::INT}},
         "size must be known at import; cosines computed in f64");
    op("OneHot", oneHotOp, {9, 11}, {{1, 3, 3}}, {{"axis", AP::INT}},
       "depth must be known at import");
    op("Expand", expandOp, {8, 13}, {{1, 2, 2}}, {});
    op("Tile", tileOp, {6, 13}, {{1, 2, 2}}, {}, "reshape + expand + reshape");
    op("Pad", padOp, {2, 11, 13, 18, 19, 21, 23},
       {{1, 1, 1}, {11, 2, 3}, {18, 2, 4}},
       {{"mode", AP::STRING},
        {"pads", AP::INTS, 1, 11, true},
        {"value", AP::FLOAT, 1, 11}},
       "constant, reflect, edge");

    // Linear algebra, normalisation, reductions.
    op("MatMul", matmulOp, {1, 9, 13}, {{1, 2, 2}}, {});
    op("Einsum", einsumOp, {12}, {{12, 1, kMany}},
       {req({"equation", AP::STRING})},
       "implicit output and ... written out; ... dims of extent 1 broadcast");
    op("Gemm", gemmOp, {6, 7, 9, 11, 13}, {{1, 3, 3}, {11, 2, 3}},
       {{"alpha", AP::FLOAT},
        {"beta", AP::FLOAT},
        {"broadcast", AP::INT, 1, 7},
        {"transA", AP::INT},
        {"transB", AP::INT}},
       "transpose/matmul/mul/add");
    for (const char *v : {"Softmax", "LogSoftmax"})
      op(v, softmaxOp, {1, 11, 13}, {{1, 1, 1}}, {{"axis", AP::INT}},
         "before 13: flattened to 2-D at axis");
    op("Hardmax", softmaxOp, {1, 11, 13}, {{1, 1, 1}}, {{"axis", AP::INT}},
       "arg_max then one_hot; before 13: flattened to 2-D at axis");
    op("DepthToSpace", depthToSpaceOp, {1, 11, 13}, {{1, 1, 1}},
       {req({"blocksize", AP::INT}), {"mode", AP::STRING, 11}},
       "reshape/transpose/reshape");
    op("SpaceToDepth", depthToSpaceOp, {1, 13}, {{1, 1, 1}},
       {req({"blocksize", AP::INT})}, "reshape/transpose/reshape");
    op("EyeLike", eyeLikeOp, {9, 22}, {{1, 1, 1}},
       {{"dtype", AP::INT}, {"k", AP::INT}}, "a constant at import");
    op("LayerNormalization", layerNormOp, {17}, {{1, 2, 3, 1, 3}},
       {{"axis", AP::INT}, {"epsilon", AP::FLOAT}, {"stash_type", AP::INT}},
       "Mean/InvStdDev outputs from reductions");
    // Opset 23's transformer blocks, as the chains their function bodies
    // describe (OpsTransformer.cpp).
    op("RMSNormalization", rmsNormOp, {23}, {{23, 2, 2}},
       {{"axis", AP::INT}, {"epsilon", AP::FLOAT}, {"stash_type", AP::INT}},
       "mul/reduce_mean/add/sqrt/div/mul");
    op("RotaryEmbedding", rotaryEmbeddingOp, {23}, {{23, 3, 4}},
       {{"interleaved", AP::INT},
        {"num_heads", AP::INT},
        {"rotary_embedding_dim", AP::INT}},
       "slices, mul/sub/add, concat; static shapes");
    op("Attention", attentionOp, {23}, {{23, 3, 6, 1, 4}},
       {{"is_causal", AP::INT},
        {"kv_num_heads", AP::INT},
        {"q_num_heads", AP::INT},
        {"qk_matmul_output_mode", AP::INT},
        {"scale", AP::FLOAT},
        {"softcap", AP::FLOAT},
        {"softmax_precision", AP::INT}},
       "matmul/softmax chain; GQA, masks, KV cache; no qk_matmul_output");
    op("Det", detOp, {11, 22}, {{1, 1, 1}}, {}, "LU with partial pivoting");
    op("BatchNormalization", batchNormOp, {6, 7, 9, 14, 15}, {{1, 5, 5, 1, 5}},
       {{"epsilon", AP::FLOAT},
        {"momentum", AP::FLOAT},
        {"is_test", AP::INT, 1, 7},
        {"spatial", AP::INT, 1, 9},
        {"training_mode", AP::INT, 14}},
       "inference form only");
    op("InstanceNormalization", instanceNormOp, {1, 6, 22}, {{1, 3, 3}},
       {{"epsilon", AP::FLOAT}},
       "reduce_mean over the spatial dimensions, then scale/bias");
    op("MeanVarianceNormalization", meanVarianceNormOp, {9, 13}, {{1, 1, 1}},
       {{"axes", AP::INTS}}, "reduce_mean/sub/mul/sqrt/div");
    op("LRN", lrnOp, {1, 13}, {{1, 1, 1}},
       {{"alpha", AP::FLOAT},
        {"beta", AP::FLOAT},
        {"bias", AP::FLOAT},
        req({"size", AP::INT})},
       "x^2 summed over channels by avg_pool, then add/pow/div");
    // `axes` moved from an attribute to an input at opset `axesInput`.
    auto reduce = [&](const char *type, std::vector<int> versions,
                      int axesInput, const char *notes) {
      op(type, reduceOp, versions, {{1, 1, 1}, {axesInput, 1, 2}},
         {{"axes", AP::INTS, 1, axesInput},
          {"keepdims", AP::INT},
          {"noop_with_empty_axes", AP::INT, axesInput}},
         notes);
    };
    reduce("ReduceSum", {1, 11, 13}, 13, "axes: attribute before 13");
    for (const char *v : {"ReduceMean", "ReduceProd"})
      reduce(v, {1, 11, 13, 18}, 18, "axes: attribute before 18");
    for (const char *v : {"ReduceMax", "ReduceMin"})
      reduce(v, {1, 11, 12, 13, 18, 20}, 18, "axes: attribute before 18");
    for (const char *v : {"ReduceL1", "ReduceL2", "ReduceLogSum",
                          "ReduceLogSumExp", "ReduceSumSquare"})
      reduce(v, {1, 11, 13, 18}, 18,
             "decomposed into abs/mul/exp/log/sqrt and reduce_sum "
             "(LogSumExp subtracts the max)");
    // Training losses (OpsLoss.cpp).
    op("NegativeLogLikelihoodLoss", lossOp, {12, 13, 22}, {{1, 2, 3}},
       {{"ignore_index", AP::INT}, {"reduction", AP::STRING}},
       "one-hot pick: equal/where/reduce_sum");
    op("SoftmaxCrossEntropyLoss", lossOp, {12, 13}, {{1, 2, 3, 1, 2}},
       {{"ignore_index", AP::INT}, {"reduction", AP::STRING}},
       "log_softmax, then as NegativeLogLikelihoodLoss");
    op("CumSum", cumSumOp, {11, 14}, {{1, 2, 2}},
       {{"exclusive", AP::INT}, {"reverse", AP::INT}},
       "axis must be known at import");
    op("TopK", topKOp, {1, 10, 11}, {{1, 1, 1, 1, 2}, {10, 2, 2, 1, 2}},
       {{"axis", AP::INT},
        {"k", AP::INT, 1, 10},
        {"largest", AP::INT, 11},
        {"sorted", AP::INT, 11}},
       "K must be known at import; indices, values gathered at them; "
       "always sorted");
    for (const char *v : {"ArgMax", "ArgMin"})
      op(v, argReduceOp, {1, 11, 12, 13}, {{1, 1, 1}},
         {{"axis", AP::INT},
          {"keepdims", AP::INT},
          {"select_last_index", AP::INT, 12}},
         "select_last_index via a reversed slice");

    // Convolution and pooling.
    op("Conv", convOp, {1, 11, 22}, {{1, 2, 3}},
       {{"auto_pad", AP::STRING},
        {"dilations", AP::INTS},
        {"group", AP::INT},
        {"kernel_shape", AP::INTS},
        {"pads", AP::INTS},
        {"strides", AP::INTS}});
    op("ConvTranspose", convTransposeOp, {1, 11, 22}, {{1, 2, 3}},
       {{"auto_pad", AP::STRING},
        {"dilations", AP::INTS},
        {"group", AP::INT},
        {"kernel_shape", AP::INTS},
        {"output_padding", AP::INTS},
        {"output_shape", AP::INTS},
        {"pads", AP::INTS},
        {"strides", AP::INTS}},
       "conv_grad_input (+ bias); output_shape and output_padding as zeros "
       "past the covered extent");
    op("MaxPool", poolOp, {1, 8, 10, 11, 12, 22}, {{1, 1, 1, 1, 2}},
       {{"auto_pad", AP::STRING},
        {"ceil_mode", AP::INT, 10},
        {"dilations", AP::INTS, 10},
        req({"kernel_shape", AP::INTS}),
        {"pads", AP::INTS},
        {"storage_order", AP::INT, 8},
        {"strides", AP::INTS}},
       "Indices from max_pool_indices");
    op("MaxUnpool", maxUnpoolOp, {9, 11, 22}, {{1, 2, 3}},
       {req({"kernel_shape", AP::INTS}), {"pads", AP::INTS},
        {"strides", AP::INTS}},
       "scatter_elements into zeros; output_shape known at import");
    op("AveragePool", poolOp, {1, 7, 10, 11, 19, 22}, {{1, 1, 1}},
       {{"auto_pad", AP::STRING},
        {"ceil_mode", AP::INT, 10},
        {"count_include_pad", AP::INT, 7},
        {"dilations", AP::INTS, 19},
        req({"kernel_shape", AP::INTS}),
        {"pads", AP::INTS},
        {"strides", AP::INTS}});
    // Recurrent ops, unrolled over a static sequence (OpsRecurrent.cpp).
    auto recurrent = [&](const char *type, int maxIn, int maxOut,
                         std::vector<AttrSpec> extra) {
      std::vector<AttrSpec> attrs{{"activation_alpha", AP::FLOATS},
                                  {"activation_beta", AP::FLOATS},
                                  {"activations", AP::STRINGS},
                                  {"clip", AP::FLOAT},
                                  {"direction", AP::STRING},
                                  req({"hidden_size", AP::INT}),
                                  {"layout", AP::INT, 14}};
      attrs.insert(attrs.end(), extra.begin(), extra.end());
      op(type, recurrentOp, {7, 14, 22}, {{1, 3, maxIn, 1, maxOut}}, attrs,
         "unrolled per time step; static sequence length, full "
         "sequence_lens; Tanh/Sigmoid/Relu activations");
    };
    recurrent("RNN", 6, 2, {});
    recurrent("GRU", 6, 2, {{"linear_before_reset", AP::INT}});
    recurrent("LSTM", 8, 3, {{"input_forget", AP::INT}});
    // Resizing (scales, sizes and roi known at import).
    op("Resize", resizeOp, {10, 11, 13, 18, 19},
       {{10, 2, 2}, {11, 3, 4}, {13, 1, 4}},
       {{"mode", AP::STRING},
        {"coordinate_transformation_mode", AP::STRING, 11},
        {"cubic_coeff_a", AP::FLOAT, 11},
        {"exclude_outside", AP::INT, 11},
        {"extrapolation_value", AP::FLOAT, 11},
        {"nearest_mode", AP::STRING, 11},
        {"antialias", AP::INT, 18},
        {"axes", AP::INTS, 18},
        {"keep_aspect_ratio_policy", AP::STRING, 18}},
       "nearest, linear, cubic; no antialias or half_pixel_symmetric");
    op("GridSample", gridSampleOp, {16, 20, 22}, {{1, 2, 2}},
       {{"align_corners", AP::INT},
        {"mode", AP::STRING},
        {"padding_mode", AP::STRING}},
       "4-D input only");
    op("Upsample", resizeOp, {7, 9}, {{7, 1, 1}, {9, 2, 2}},
       {{"mode", AP::STRING}, req({"scales", AP::FLOATS, 7, 9})},
       "as Resize with asymmetric coordinates");
    // Quantization (OpsQuantize.cpp).
    for (const char *v : {"QuantizeLinear", "DequantizeLinear"})
      op(v, StringRef(v) == "QuantizeLinear" ? quantizeLinearOp
                                              : dequantizeLinearOp,
         {10, 13, 19, 21, 23}, {{1, 2, 3}},
         {{"axis", AP::INT, 13},
          {"saturate", AP::INT, 19},
          {"block_size", AP::INT, 21},
          {"output_dtype", AP::INT, 21}},
         "8- and 16-bit integers, per tensor or per axis; no blocks");
    op("DynamicQuantizeLinear", dynamicQuantizeLinearOp, {11}, {{1, 1, 1, 1, 3}},
       {}, "reduce_min/reduce_max, then as QuantizeLinear");
    op("MatMulInteger", integerMatMulOp, {10}, {{1, 2, 4}}, {},
       "int8/uint8; exact int32 matmul");
    op("QLinearMatMul", integerMatMulOp, {10, 21}, {{1, 8, 8}}, {},
       "int32 matmul, requantized in f32");
    auto convAttrs = std::vector<AttrSpec>{
        {"auto_pad", AP::STRING}, {"dilations", AP::INTS}, {"group", AP::INT},
        {"kernel_shape", AP::INTS}, {"pads", AP::INTS}, {"strides", AP::INTS}};
    op("ConvInteger", integerMatMulOp, {10}, {{1, 2, 4}}, convAttrs,
       "int8/uint8; convolution in f64 (exact), cast to int32");
    op("QLinearConv", integerMatMulOp, {10}, {{1, 8, 9}}, convAttrs,
       "convolution in f64 (exact), requantized in f32");
    op("GlobalAveragePool", globalPoolOp, {1, 22}, {{1, 1, 1}}, {});
    op("GlobalMaxPool", globalPoolOp, {1, 22}, {{1, 1, 1}}, {});
    return s;
  }();
  return specs;
}

const llvm::StringMap<const OpSpec *> &specIndex() {
  static const llvm::StringMap<const OpSpec *> index = [] {
    llvm::StringMap<const OpSpec *> m;
    for (const OpSpec &o : opSpecs())
      m[o.type] = &o;
    return m;
  }();
  return index;
}

const char *typeName(AP::AttributeType t) {
  static const std::pair<AP::AttributeType, const char *> names[] = {
      {AP::FLOAT, "float"},     {AP::INT, "int"},
      {AP::STRING, "string"},   {AP::TENSOR, "tensor"},
      {AP::GRAPH, "graph"},     {AP::SPARSE_TENSOR, "sparse tensor"},
      {AP::FLOATS, "floats"},   {AP::INTS, "ints"},
      {AP::STRINGS, "strings"}, {AP::TENSORS, "tensors"},
      {AP::GRAPHS, "graphs"}};
  for (auto [type, name] : names)
    if (type == t)
      return name;
  return "unknown";
}

/// The attribute's type; for old models that leave `type` unset, guessed
/// from the field that holds a value.
AP::AttributeType attrType(const AP &a) {
  if (a.type() != AP::UNDEFINED)
    return a.type();
  if (a.has_f())
    return AP::FLOAT;
  if (a.has_i())
    return AP::INT;
  if (a.has_s())
    return AP::STRING;
  if (a.has_t())
    return AP::TENSOR;
  if (a.has_g())
    return AP::GRAPH;
  if (a.has_sparse_tensor())
    return AP::SPARSE_TENSOR;
  if (a.floats_size())
    return AP::FLOATS;
  if (a.ints_size())
    return AP::INTS;
  if (a.strings_size())
    return AP::STRINGS;
  return AP::UNDEFINED;
}

std::string count(int lo, int hi) {
  if (lo == hi)
    return std::to_string(lo);
  if (hi == kMany)
    return "at least " + std::to_string(lo);
  return std::to_string(lo) + " to " + std::to_string(hi);
}

} // namespace

Handler distopt::onnximport::lookupHandler(ImportContext &ctx) {
  const onnx::NodeProto &node = ctx.node;
  auto it = specIndex().find(node.op_type());
  if (it == specIndex().end()) {
    ctx.error() << "operator '" << node.op_type()
                << "' is not supported by the importer";
    return nullptr;
  }
  const OpSpec &spec = *it->second;
  if (ctx.opset < spec.versions.front()) {
    if (spec.versions.front() <= kDescribedFromOpset)
      ctx.error() << "the importer supports operator '" << node.op_type()
                  << "' from opset " << spec.versions.front()
                  << " on (older versions have legacy attributes)";
    else
      ctx.error() << "operator '" << node.op_type() << "' needs opset "
                  << spec.versions.front() << " or newer";
    return nullptr;
  }
  const Arity *arity = nullptr;
  for (const Arity &a : spec.arity)
    if (a.from <= ctx.opset)
      arity = &a;
  int in = node.input_size();
  // Trailing omitted optional inputs do not count.
  while (in > 0 && node.input(in - 1).empty())
    --in;
  int out = node.output_size();
  for (int i = 0; i < std::min(in, arity->minIn); ++i)
    if (node.input(i).empty()) {
      ctx.error() << "input " << i << " is required but omitted";
      return nullptr;
    }
  if (in < arity->minIn || in > arity->maxIn) {
    ctx.error() << "has " << in << " inputs; this opset takes "
                << count(arity->minIn, arity->maxIn);
    return nullptr;
  }
  if (out < arity->minOut || out > arity->maxOut) {
    ctx.error() << "has " << out << " outputs; this opset gives "
                << count(arity->minOut, arity->maxOut);
    return nullptr;
  }
  llvm::StringMap<bool> seen;
  for (const AP &a : node.attribute()) {
    const AttrSpec *match = nullptr;
    for (const AttrSpec &s : spec.attrs)
      if (a.name() == s.name && s.from <= ctx.opset && ctx.opset < s.until)
        match = &s;
    if (!match) {
      ctx.error() << "attribute '" << a.name()
                  << "' is not supported for this op in this opset";
      return nullptr;
    }
    if (!a.ref_attr_name().empty()) {
      ctx.error() << "attribute '" << a.name()
                  << "' refers to a function attribute, which is not supported";
      return nullptr;
    }
    if (attrType(a) != match->type) {
      ctx.error() << "attribute '" << a.name() << "' must be of type "
                  << typeName(match->type) << ", not " << typeName(attrType(a));
      return nullptr;
    }
    if (seen[a.name()]) {
      ctx.error() << "attribute '" << a.name() << "' is given twice";
      return nullptr;
    }
    seen[a.name()] = true;
  }
  for (const AttrSpec &s : spec.attrs)
    if (s.required && s.from <= ctx.opset && ctx.opset < s.until &&
        !seen.count(s.name)) {
      ctx.error() << "required attribute '" << s.name << "' is missing";
      return nullptr;
    }
  return spec.handler;
}

void distopt::onnximport::printOpTable(llvm::raw_ostream &os) {
  std::vector<const OpSpec *> sorted;
  for (const OpSpec &o : opSpecs())
    sorted.push_back(&o);
  llvm::sort(sorted, [](const OpSpec *a, const OpSpec *b) {
    return StringRef(a->type) < StringRef(b->type);
  });
  os << "| op | versions | attributes | notes |\n| --- | --- | --- | --- |\n";
  for (const OpSpec *o : sorted) {
    os << "| " << o->type << " | ";
    llvm::interleave(o->versions, os, ", ");
    os << " | ";
    bool first = true;
    for (const AttrSpec &a : o->attrs) {
      os << (first ? "" : ", ") << a.name;
      first = false;
      if (a.from > o->versions.front() && a.until != INT_MAX)
        os << " (" << a.from << "–" << a.until - 1 << ")";
      else if (a.from > o->versions.front())
        os << " (" << a.from << "+)";
      else if (a.until != INT_MAX)
        os << " (<" << a.until << ")";
    }
    os << " | " << o->notes << " |\n";
  }
}

void distopt::printSupportedOnnxOps(llvm::raw_ostream &os) {
  onnximport::printOpTable(os);
}
