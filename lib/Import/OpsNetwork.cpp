//===- OpsNetwork.cpp - ONNX linear algebra, normalisation, pooling -*- C++
//-*-===//
#include "ImportContext.h"
#include "KnownFolding.h"

#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/Dialect/NN/IR/ShapeUtils.h"

#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

/// Dimensions [from, rank), as reduction axes.
DenseI64ArrayAttr trailingAxes(ImportContext &ctx, int64_t from, int64_t rank) {
  return ctx.b.getDenseI64ArrayAttr(llvm::to_vector(llvm::seq(from, rank)));
}

/// sqrt(mean(d * d) + epsilon) over `axes` (kept), for `d` = x - mean(x):
/// the biased standard deviation the normalisations divide by.
Value stdDev(OpChain &c, Value d, DenseI64ArrayAttr axes, double epsilon) {
  Value d2 = c.make<nn::MulOp>(d, d);
  Value var = c.make<nn::ReduceMeanOp>(d2, axes, c.ctx.b.getUnitAttr());
  Value ve = c.make<nn::AddOp>(var, c.scalarLike(epsilon, var));
  return c.make<nn::SqrtOp>(ve);
}

} // namespace

LogicalResult distopt::onnximport::matmulOp(ImportContext &ctx) {
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b))
    return failure();
  OpChain c(ctx);
  return c.output(0, c.make<nn::MatMulOp>(*a, *b));
}

/// Gemm: alpha * op(A) @ op(B) + beta * C, op transposing on request.
LogicalResult distopt::onnximport::gemmOp(ImportContext &ctx) {
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b))
    return failure();
  auto ta = cast<RankedTensorType>(a->getType());
  auto tb = cast<RankedTensorType>(b->getType());
  if (ta.getRank() != 2 || tb.getRank() != 2)
    return ctx.error() << "needs 2-D A and B, got " << ta << " and " << tb;
  OpChain c(ctx);
  auto transposed = [&](Value x, StringRef attr) {
    if (!ctx.attrInt(attr, 0))
      return x;
    return c.make<nn::TransposeOp>(x, ctx.b.getDenseI64ArrayAttr({1, 0}));
  };
  Value A = transposed(*a, "transA");
  Value B = transposed(*b, "transB");
  Value y = c.make<nn::MatMulOp>(A, B);
  double alpha = ctx.attrFloat("alpha", 1.0), beta = ctx.attrFloat("beta", 1.0);
  if (alpha != 1.0)
    y = c.make<nn::MulOp>(y, c.scalarLike(alpha, y));
  // C is checked against the product's type, so only after a product.
  if (!ctx.hasInput(2) || beta == 0.0 || c.failed())
    return c.output(0, y);
  FailureOr<Value> cv = ctx.value(2);
  if (failed(cv))
    return failure();
  auto ty = cast<RankedTensorType>(y.getType());
  auto tc = cast<RankedTensorType>(cv->getType());
  auto shape = broadcast(tc.getShape(), ty.getShape());
  if (!shape || ArrayRef<int64_t>(*shape) != ty.getShape())
    return ctx.error() << "C of type " << tc
                       << " does not broadcast to the product " << ty;
  Value cs = *cv;
  if (beta != 1.0)
    cs = c.make<nn::MulOp>(cs, c.scalarLike(beta, y));
  return c.output(0, c.make<nn::AddOp>(y, cs));
}

/// Softmax, LogSoftmax and Hardmax. Before opset 13 the input is coerced to
/// 2-D at `axis` (default 1) and normalised over the whole second part.
/// Hardmax is a one-hot of the first maximum: ArgMax, then OneHot.
LogicalResult distopt::onnximport::softmaxOp(ImportContext &ctx) {
  bool log = ctx.node.op_type() == "LogSoftmax";
  bool hard = ctx.node.op_type() == "Hardmax";
  FailureOr<Value> x = ctx.floatValue(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  if (t.getRank() == 0)
    return ctx.error() << "needs an input of rank 1 or more";
  int64_t dflt = ctx.opset >= 13 ? -1 : 1;
  int64_t rank = t.getRank();
  int64_t a = ctx.attrInt("axis", dflt);
  // Before 13, axis may equal the rank when coercing (an empty second part).
  FailureOr<int64_t> axis = ctx.axis(a, rank, "axis");
  if (failed(axis))
    return failure();
  OpChain c(ctx);
  auto make = [&](Value v, int64_t ax) {
    IntegerAttr attr = ctx.b.getI64IntegerAttr(ax);
    if (hard) {
      if (c.failed())
        return Value();
      auto vt = cast<RankedTensorType>(v.getType());
      Value first = c.make<nn::ArgMaxOp>(v, attr, UnitAttr());
      Known offOn = Known::ofFloats({2}, {0.0, 1.0});
      return c.make<nn::OneHotOp>(
          first, ctx.materialize(offOn, vt.getElementType()),
          ctx.b.getI64IntegerAttr(vt.getDimSize(ax)), attr);
    }
    return log ? c.make<nn::LogSoftmaxOp>(v, attr)
               : c.make<nn::SoftmaxOp>(v, attr);
  };
  if (ctx.opset >= 13 || *axis == rank - 1)
    return c.output(0, make(*x, *axis));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < *axis ? outer : inner) *= t.getDimSize(d);
  Value s = make(c.reshape(*x, {outer, inner}), 1);
  return c.output(0, c.reshape(s, t.getShape()));
}

LogicalResult distopt::onnximport::layerNormOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0), scale = ctx.value(1);
  if (failed(x) || failed(scale))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis = ctx.normalizationAxis(t.getRank());
  if (failed(axis))
    return failure();
  FailureOr<Value> bias = ctx.optionalValue(2);
  if (failed(bias))
    return failure();
  double epsilon = ctx.attrFloat("epsilon", 1e-5);
  OpChain c(ctx);
  LogicalResult r =
      c.output(0, c.make<nn::LayerNormOp>(*x, *scale, *bias,
                                          ctx.b.getI64IntegerAttr(*axis),
                                          ctx.b.getF64FloatAttr(epsilon)));
  if (failed(r) || (!ctx.wantsOutput(1) && !ctx.wantsOutput(2)))
    return r;
  // The statistics (for training graphs), in float32 (stash_type 1):
  // mean and 1 / sqrt(biased variance + epsilon) over axis.., kept dims.
  Value xs = *x;
  Type f32 = ctx.b.getF32Type();
  if (t.getElementType() != f32)
    xs = c.typed<nn::CastOp>(t.clone(f32), xs);
  DenseI64ArrayAttr axes = trailingAxes(ctx, *axis, t.getRank());
  Value mean = c.make<nn::ReduceMeanOp>(xs, axes, ctx.b.getUnitAttr());
  r = c.output(1, mean);
  if (failed(r) || !ctx.wantsOutput(2))
    return r;
  Value sd = stdDev(c, c.make<nn::SubOp>(xs, mean), axes, epsilon);
  return c.output(2, c.make<nn::ReciprocalOp>(sd));
}

LogicalResult distopt::onnximport::batchNormOp(ImportContext &ctx) {
  if (ctx.attrInt("training_mode", 0))
    return ctx.error() << "training-mode batch normalisation is not supported";
  if (ctx.numOutputs() > 1)
    for (unsigned i = 1; i < ctx.numOutputs(); ++i)
      if (ctx.wantsOutput(i))
        return ctx.error() << "the running statistics outputs (for training) "
                              "are not supported";
  if (ctx.attrInt("spatial", 1) != 1)
    return ctx.error() << "spatial=0 (statistics per element) is not supported";
  SmallVector<Value> in;
  for (unsigned i = 0; i < 5; ++i) {
    FailureOr<Value> v = ctx.value(i);
    if (failed(v))
      return failure();
    in.push_back(*v);
  }
  OpChain c(ctx);
  return c.output(0,
                  c.make<nn::BatchNormOp>(
                      in[0], in[1], in[2], in[3], in[4],
                      ctx.b.getF64FloatAttr(ctx.attrFloat("epsilon", 1e-5))));
}

/// InstanceNormalization: per (sample, channel) over the spatial
/// dimensions, (x - mean) / sqrt(var + epsilon) * scale + bias.
LogicalResult distopt::onnximport::instanceNormOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0), scale = ctx.value(1), bias = ctx.value(2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  if (t.getRank() < 3 || !isa<FloatType>(t.getElementType()))
    return ctx.error() << "needs a floating-point input [N, C, spatial...], "
                          "got "
                       << t;
  int64_t channels = t.getDimSize(1);
  std::vector<int64_t> perChannel(t.getRank() - 1, 1);
  perChannel[0] = channels;
  for (Value p : {*scale, *bias}) {
    auto pt = cast<RankedTensorType>(p.getType());
    if (pt.getRank() != 1 || pt.getDimSize(0) != channels ||
        pt.getElementType() != t.getElementType())
      return ctx.error() << "scale and bias must be [" << channels
                         << "] of the input's element type, got " << pt;
  }
  DenseI64ArrayAttr axes = trailingAxes(ctx, 2, t.getRank());
  OpChain c(ctx);
  Value mean = c.make<nn::ReduceMeanOp>(*x, axes, ctx.b.getUnitAttr());
  Value d = c.make<nn::SubOp>(*x, mean);
  Value norm =
      c.make<nn::DivOp>(d, stdDev(c, d, axes, ctx.attrFloat("epsilon", 1e-5)));
  Value s = c.reshape(*scale, perChannel);
  Value b = c.reshape(*bias, perChannel);
  Value scaled = c.make<nn::MulOp>(norm, s);
  return c.output(0, c.make<nn::AddOp>(scaled, b));
}

namespace {

template <typename OpT>
Value makeReduce(OpChain &c, Value x, ArrayRef<int64_t> axes, bool keep) {
  return c.make<OpT>(x, c.ctx.b.getDenseI64ArrayAttr(axes),
                     keep ? c.ctx.b.getUnitAttr() : UnitAttr());
}

using ReduceBuilder = Value (*)(OpChain &, Value, ArrayRef<int64_t>, bool);

} // namespace

/// Reductions: `axes` moved from attribute to input at opset 13 (ReduceSum)
/// or 18 (the others). ReduceL1/L2/LogSum/LogSumExp/SumSquare decompose into
/// element-wise ops around reduce_sum.
LogicalResult distopt::onnximport::reduceOp(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  RankedTensorType t = ctx.type(0);
  int64_t inputFrom = op == "ReduceSum" ? 13 : 18;
  std::vector<int64_t> axes;
  if (ctx.opset >= inputFrom) {
    if (ctx.hasInput(1)) {
      FailureOr<std::vector<int64_t>> k = ctx.knownInts(1, "axes");
      if (failed(k))
        return failure();
      axes = *k;
    }
  } else {
    axes = ctx.attrInts("axes");
  }
  bool keep = ctx.attrInt("keepdims", 1) != 0;
  bool composite = op == "ReduceL1" || op == "ReduceL2" ||
                   op == "ReduceLogSum" || op == "ReduceLogSumExp" ||
                   op == "ReduceSumSquare";
  if (axes.empty()) {
    if (ctx.attrInt("noop_with_empty_axes", 0)) {
      if (composite)
        return ctx.error() << "noop_with_empty_axes with no axes is not "
                              "supported for "
                           << op;
      FailureOr<Tensor *> in = ctx.input(0);
      if (failed(in))
        return failure();
      ctx.values[ctx.node.output(0)] = **in;
      return success();
    }
    for (int64_t d = 0; d < t.getRank(); ++d)
      axes.push_back(d);
  }
  for (int64_t &a : axes) {
    FailureOr<int64_t> n = ctx.axis(a, t.getRank(), "axis");
    if (failed(n))
      return failure();
    a = *n;
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (!composite)
    if (const Known *k = ctx.known(0))
      if (t.getNumElements() <= kMaxFoldElements)
        if (std::optional<Known> r =
                knownReduce(*k, axes, keep, op, t.getElementType())) {
          ctx.setKnownOutput(0, std::move(*r), t.getElementType());
          return success();
        }
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  bool isFloat = isa<FloatType>(t.getElementType());
  if (composite && !isFloat && op != "ReduceL1" && op != "ReduceSumSquare")
    return ctx.error() << op << " needs a floating-point input, got " << t;
  ReduceBuilder make = llvm::StringSwitch<ReduceBuilder>(op)
                           .Case("ReduceMean", makeReduce<nn::ReduceMeanOp>)
                           .Case("ReduceMax", makeReduce<nn::ReduceMaxOp>)
                           .Case("ReduceMin", makeReduce<nn::ReduceMinOp>)
                           .Case("ReduceProd", makeReduce<nn::ReduceProdOp>)
                           .Default(makeReduce<nn::ReduceSumOp>);
  OpChain c(ctx);
  Value in = *x, maxKept;
  if (op == "ReduceL1") {
    in = c.make<nn::AbsOp>(*x);
  } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
    in = c.make<nn::MulOp>(*x, *x);
  } else if (op == "ReduceLogSumExp") {
    // log(sum(exp(x - m))) + m with m the maximum, for stability.
    maxKept = makeReduce<nn::ReduceMaxOp>(c, *x, axes, /*keep=*/true);
    in = c.make<nn::ExpOp>(c.make<nn::SubOp>(*x, maxKept));
  }
  Value r = make(c, in, axes, keep);
  if (op == "ReduceL2")
    r = c.make<nn::SqrtOp>(r);
  else if (op == "ReduceLogSum" || op == "ReduceLogSumExp")
    r = c.make<nn::LogOp>(r);
  if (op == "ReduceLogSumExp")
    r = c.make<nn::AddOp>(
        r, c.reshape(maxKept, nn::reducedShape(t.getShape(), axes, keep)));
  return c.output(0, r);
}

/// ArgMax/ArgMin; select_last_index=1 takes the first extreme of the input
/// reversed along the axis and maps the index back.
LogicalResult distopt::onnximport::argReduceOp(ImportContext &ctx) {
  bool isMax = ctx.node.op_type() == "ArgMax";
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis =
      ctx.axis(ctx.attrInt("axis", 0), t.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t extent = t.getDimSize(*axis);
  if (extent == 0)
    return ctx.error() << "cannot take the index of an extreme over an empty "
                          "dimension";
  bool keep = ctx.attrInt("keepdims", 1) != 0;
  bool last = ctx.attrInt("select_last_index", 0) != 0;
  OpChain c(ctx);
  Value in = *x;
  if (last) {
    SmallVector<int64_t> lo(t.getRank(), 0), hi(t.getShape()),
        st(t.getRank(), 1);
    lo[*axis] = extent - 1;
    hi[*axis] = -1;
    st[*axis] = -1;
    in = c.slice(in, lo, hi, st);
  }
  IntegerAttr axisAttr = ctx.b.getI64IntegerAttr(*axis);
  UnitAttr keepAttr = keep ? ctx.b.getUnitAttr() : UnitAttr();
  Value r = isMax ? c.make<nn::ArgMaxOp>(in, axisAttr, keepAttr)
                  : c.make<nn::ArgMinOp>(in, axisAttr, keepAttr);
  if (last)
    r = c.make<nn::SubOp>(c.scalarLike(extent - 1, r), r);
  return c.output(0, r);
}

namespace {

/// Window attributes shared by Conv and pooling, with auto_pad resolved.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};

FailureOr<Window> windowOf(ImportContext &ctx, RankedTensorType x,
                           ArrayRef<int64_t> kernel) {
  int64_t spatial = x.getRank() - 2;
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  auto get = [&](StringRef name, int64_t n, int64_t dflt) {
    std::vector<int64_t> v = ctx.attrInts(name);
    if (!ctx.hasAttr(name))
      v.assign(n, dflt);
    return SmallVector<int64_t>(v.begin(), v.end());
  };
  w.strides = get("strides", spatial, 1);
  w.dilations = get("dilations", spatial, 1);
  w.pads = get("pads", 2 * spatial, 0);
  if (static_cast<int64_t>(w.kernel.size()) != spatial ||
      static_cast<int64_t>(w.strides.size()) != spatial ||
      static_cast<int64_t>(w.dilations.size()) != spatial ||
      static_cast<int64_t>(w.pads.size()) != 2 * spatial)
    return ctx.error() << "kernel_shape, strides and dilations need " << spatial
                       << " entries and pads " << 2 * spatial
                       << " for an input of rank " << x.getRank();
  for (int64_t i = 0; i < spatial; ++i)
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0)
      return ctx.error() << "kernel_shape, strides and dilations must be "
                            "positive";
  for (int64_t p : w.pads)
    if (p < 0)
      return ctx.error() << "pads must not be negative";
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  auto checkExtents = [&]() -> LogicalResult {
    for (int64_t i = 0; i < spatial; ++i)
      if (nn::windowExtent(x.getDimSize(i + 2), w.kernel[i], w.strides[i],
                           w.pads[i], w.pads[i + spatial], w.dilations[i],
                           ctx.attrInt("ceil_mode", 0) != 0) < 1)
        return ctx.error() << "the window of spatial dimension " << i
                           << " does not fit the padded input "
                           << x.getDimSize(i + 2);
    return success();
  };
  if (autoPad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t in = x.getDimSize(i + 2);
      int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      int64_t span = w.dilations[i] * (w.kernel[i] - 1) + 1;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + span - in);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[i + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return ctx.error() << "auto_pad '" << autoPad << "' is not supported";
  }
  if (failed(checkExtents()))
    return failure();
  return w;
}

} // namespace

LogicalResult distopt::onnximport::convOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0), w = ctx.value(1);
  if (failed(x) || failed(w))
    return failure();
  FailureOr<Value> bias = ctx.optionalValue(2);
  if (failed(bias))
    return failure();
  FailureOr<Value> y = buildConv(ctx, *x, *w, *bias);
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}

FailureOr<Value> distopt::onnximport::buildConv(ImportContext &ctx, Value x,
                                                Value w, Value bias) {
  auto tx = cast<RankedTensorType>(x.getType());
  auto tw = cast<RankedTensorType>(w.getType());
  if (tx.getRank() < 3 || tw.getRank() != tx.getRank())
    return ctx.error() << "needs input [N, C, spatial...] and a weight of the "
                          "same rank, got "
                       << tx << " and " << tw;
  ArrayRef<int64_t> kernel = tw.getShape().drop_front(2);
  if (ctx.hasAttr("kernel_shape") &&
      ArrayRef<int64_t>(ctx.attrInts("kernel_shape")) != kernel)
    return ctx.error() << "kernel_shape does not match the weight " << tw;
  FailureOr<Window> win = windowOf(ctx, tx, kernel);
  if (failed(win))
    return failure();
  int64_t group = ctx.attrInt("group", 1);
  if (group <= 0 || tx.getDimSize(1) != tw.getDimSize(1) * group ||
      tw.getDimSize(0) % group != 0)
    return ctx.error() << "channels do not match: input " << tx << ", weight "
                       << tw << ", group " << group;
  return ctx.create<nn::ConvOp>(x, w, bias,
                                ctx.b.getDenseI64ArrayAttr(win->strides),
                                ctx.b.getDenseI64ArrayAttr(win->pads),
                                ctx.b.getDenseI64ArrayAttr(win->dilations),
                                ctx.b.getI64IntegerAttr(group));
}

LogicalResult distopt::onnximport::poolOp(ImportContext &ctx) {
  bool isMax = ctx.node.op_type() == "MaxPool";
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto tx = cast<RankedTensorType>(x->getType());
  if (tx.getRank() < 3)
    return ctx.error() << "needs input [N, C, spatial...], got " << tx;
  FailureOr<Window> win = windowOf(ctx, tx, ctx.attrInts("kernel_shape"));
  if (failed(win))
    return failure();
  UnitAttr ceil =
      ctx.attrInt("ceil_mode", 0) ? ctx.b.getUnitAttr() : UnitAttr();
  UnitAttr countPad =
      ctx.attrInt("count_include_pad", 0) ? ctx.b.getUnitAttr() : UnitAttr();
  auto k = ctx.b.getDenseI64ArrayAttr(win->kernel);
  auto s = ctx.b.getDenseI64ArrayAttr(win->strides);
  auto p = ctx.b.getDenseI64ArrayAttr(win->pads);
  auto d = ctx.b.getDenseI64ArrayAttr(win->dilations);
  OpChain c(ctx);
  if (isMax && ctx.wantsOutput(1)) {
    int64_t order = ctx.attrInt("storage_order", 0);
    if (order != 0 && order != 1)
      return ctx.error() << "storage_order must be 0 or 1, got " << order;
    Value indices = c.make<nn::MaxPoolIndicesOp>(
        *x, k, s, p, d, ceil, order ? ctx.b.getUnitAttr() : UnitAttr());
    if (failed(c.output(1, indices)))
      return failure();
  }
  return c.output(
      0, isMax ? c.make<nn::MaxPoolOp>(*x, k, s, p, d, ceil, UnitAttr())
               : c.make<nn::AvgPoolOp>(*x, k, s, p, d, ceil, countPad));
}

LogicalResult distopt::onnximport::globalPoolOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  if (cast<RankedTensorType>(x->getType()).getRank() < 3)
    return ctx.error() << "needs input [N, C, spatial...], got "
                       << x->getType();
  OpChain c(ctx);
  return c.output(0, ctx.node.op_type() == "GlobalMaxPool"
                         ? c.make<nn::GlobalMaxPoolOp>(*x)
                         : c.make<nn::GlobalAvgPoolOp>(*x));
}

/// TopK: nn.top_k gives the indices; the values are the input gathered at
/// them (so they have GatherElements' gradient).
LogicalResult distopt::onnximport::topKOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  int64_t k;
  if (ctx.opset < 10) {
    k = ctx.attrInt("k", -1);
  } else {
    FailureOr<std::vector<int64_t>> kv = ctx.knownInts(1, "K");
    if (failed(kv))
      return failure();
    if (kv->size() != 1)
      return ctx.error() << "K must hold one value, got " << kv->size();
    k = (*kv)[0];
  }
  FailureOr<int64_t> axis =
      ctx.axis(ctx.attrInt("axis", -1), t.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t extent = t.getDimSize(*axis);
  if (k < 0 || (!ShapedType::isDynamic(extent) && k > extent))
    return ctx.error() << "K " << k << " is not in [0, " << extent
                       << "] (the extent of axis " << *axis << ")";
  bool smallest = ctx.attrInt("largest", 1) == 0;
  OpChain c(ctx);
  Value x = c.input(0);
  IntegerAttr axisAttr = ctx.b.getI64IntegerAttr(*axis);
  Value idx = c.make<nn::TopKOp>(x, ctx.b.getI64IntegerAttr(k), axisAttr,
                                 smallest ? ctx.b.getUnitAttr() : UnitAttr());
  if (ctx.wantsOutput(0) &&
      failed(c.output(0, c.make<nn::GatherElementsOp>(x, idx, axisAttr))))
    return failure();
  return ctx.wantsOutput(1) ? c.output(1, idx) : success();
}

static bool isEinsumLetter(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/// Einsum: the equation is written out in nn.einsum's explicit form. `...`
/// becomes letters the equation does not use (aligned from the right, as
/// numpy broadcasts), an operand whose `...` dimension has extent 1 where
/// another's is larger is expanded first, and an implicit result is the
/// `...` letters then the letters used once, in alphabetical order.
LogicalResult distopt::onnximport::einsumOp(ImportContext &ctx) {
  std::string text;
  for (char ch : ctx.attrString("equation", ""))
    if (ch != ' ')
      text += ch;
  for (char ch : text)
    if (!isEinsumLetter(ch) && ch != ',' && ch != '.' && ch != '-' &&
        ch != '>')
      return ctx.error() << "equation '" << text << "': '" << ch
                         << "' is not an index letter";
  size_t arrow = text.find("->");
  bool implicit = arrow == std::string::npos;
  std::string lhs = implicit ? text : text.substr(0, arrow);
  std::string rhs = implicit ? "" : text.substr(arrow + 2);
  SmallVector<StringRef> termRefs;
  StringRef(lhs).split(termRefs, ',');
  unsigned n = ctx.numInputs();
  if (termRefs.size() != n)
    return ctx.error() << "equation '" << text << "' has " << termRefs.size()
                       << " terms for " << n << " inputs";
  // Letters standing for `...`: unused ones, as many as the widest needs.
  std::string unused;
  for (char ch = 'a'; ch <= 'z'; ++ch)
    if (text.find(ch) == std::string::npos)
      unused += ch;
  for (char ch = 'A'; ch <= 'Z'; ++ch)
    if (text.find(ch) == std::string::npos)
      unused += ch;
  SmallVector<std::string> terms;
  SmallVector<int64_t> ellipsisRank(n, 0);
  int64_t widest = 0;
  for (unsigned i = 0; i < n; ++i) {
    std::string term = termRefs[i].str();
    RankedTensorType t = ctx.type(i);
    if (!t)
      return failure();
    size_t dots = term.find("...");
    size_t letters = llvm::count_if(term, isEinsumLetter);
    if (dots == std::string::npos ? term.size() != letters
                                  : term.size() != letters + 3)
      return ctx.error() << "equation '" << text << "': term '" << term
                         << "' is not letters with at most one '...'";
    if (dots != std::string::npos) {
      if (static_cast<int64_t>(letters) > t.getRank())
        return ctx.error() << "equation '" << text << "': term '" << term
                           << "' has more letters than input " << i
                           << "'s rank (" << t.getRank() << ")";
      ellipsisRank[i] = t.getRank() - letters;
      widest = std::max(widest, ellipsisRank[i]);
    }
    terms.push_back(term);
  }
  if (widest > static_cast<int64_t>(unused.size()))
    return ctx.error() << "equation '" << text
                       << "': too few unused letters to write out '...'";
  std::string dotLetters = unused.substr(0, widest);
  for (unsigned i = 0; i < n; ++i) {
    size_t dots = terms[i].find("...");
    if (dots != std::string::npos)
      terms[i].replace(dots, 3, dotLetters.substr(widest - ellipsisRank[i]));
  }
  std::string out;
  if (implicit) {
    out = dotLetters;
    std::string once;
    for (char ch : lhs)
      if (isEinsumLetter(ch) && llvm::count(lhs, ch) == 1)
        once += ch;
    llvm::sort(once);
    out += once;
  } else {
    size_t dots = rhs.find("...");
    if (dots != std::string::npos)
      rhs.replace(dots, 3, dotLetters);
    if (rhs.find('.') != std::string::npos)
      return ctx.error() << "equation '" << text << "': malformed '...'";
    out = rhs;
  }
  // `...` extents broadcast: 1 stretches to the others' extent.
  llvm::StringMap<int64_t> dotExtent;
  for (unsigned i = 0; i < n; ++i)
    for (auto [d, ch] : llvm::enumerate(terms[i]))
      if (dotLetters.find(ch) != std::string::npos) {
        int64_t &e = dotExtent[StringRef(&ch, 1)];
        e = std::max(e, ctx.type(i).getDimSize(d));
      }
  OpChain c(ctx);
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < n; ++i) {
    Value v = c.input(i);
    RankedTensorType t = ctx.type(i);
    SmallVector<int64_t> shape(t.getShape());
    for (auto [d, ch] : llvm::enumerate(terms[i]))
      if (dotLetters.find(ch) != std::string::npos && shape[d] == 1)
        shape[d] = dotExtent[StringRef(&ch, 1)];
    if (!c.failed() && ArrayRef<int64_t>(shape) != t.getShape())
      v = c.typed<nn::ExpandOp>(t.clone(shape), v);
    inputs.push_back(v);
  }
  std::string equation = llvm::join(terms, ",") + "->" + out;
  return c.output(0, c.make<nn::EinsumOp>(ctx.b.getStringAttr(equation),
                                          ValueRange(inputs)));
}

/// Resize (10+) and Upsample (7, 9): one nn.resize. Scales, sizes and roi
/// must be known at import; the output extents follow from them as ONNX
/// defines (floor(extent * scale), or the sizes, whose scales are then
/// size / extent). Before opset 11 coordinates are asymmetric and nearest
/// rounds down.
/// A float for a diagnostic, as a person writes it (0.1, not 1.000000e-01).
static std::string shortFloat(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

LogicalResult distopt::onnximport::resizeOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto tx = cast<RankedTensorType>(x->getType());
  int64_t rank = tx.getRank();
  bool legacy = ctx.node.op_type() == "Upsample" || ctx.opset < 11;
  std::string mode = ctx.attrString("mode", "nearest");
  if (legacy && mode == "bilinear")
    mode = "linear";
  std::string ctm = legacy ? "asymmetric"
                           : ctx.attrString("coordinate_transformation_mode",
                                            "half_pixel");
  std::string nearest =
      legacy ? "floor" : ctx.attrString("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return ctx.error() << "mode '" << mode
                       << "' is not one of nearest, linear, cubic";
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn",
                           "tf_crop_and_resize", "half_pixel_symmetric"},
                          ctm))
    return ctx.error() << "unknown coordinate_transformation_mode '" << ctm
                       << "'";
  if (ctm == "half_pixel_symmetric")
    return ctx.error()
           << "coordinate_transformation_mode half_pixel_symmetric is not "
              "supported";
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          nearest))
    return ctx.error() << "unknown nearest_mode '" << nearest << "'";
  if (ctx.attrInt("antialias", 0) != 0)
    return ctx.error() << "antialias is not supported";

  // The resized axes (all unless `axes` names some).
  SmallVector<int64_t> axes;
  if (ctx.hasAttr("axes")) {
    for (int64_t a : ctx.attrInts("axes")) {
      FailureOr<int64_t> axis = ctx.axis(a, rank, "axes");
      if (failed(axis))
        return failure();
      if (llvm::is_contained(axes, *axis))
        return ctx.error() << "axes repeats axis " << a;
      axes.push_back(*axis);
    }
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  int64_t n = axes.size();

  // An input that is absent or empty is not given.
  auto given = [&](unsigned i) {
    return ctx.hasInput(i) && ctx.type(i) && ctx.type(i).getNumElements() != 0;
  };
  unsigned scalesInput = legacy ? 1 : 2, sizesInput = 3;
  SmallVector<double> scales(rank, 1.0);
  SmallVector<int64_t> sizes(tx.getShape());
  auto staticExtent = [&](int64_t d) -> FailureOr<int64_t> {
    if (tx.isDynamicDim(d))
      return ctx.error() << "resized dimension " << d
                         << " must have a static extent";
    return tx.getDimSize(d);
  };
  bool hasScales = ctx.node.op_type() == "Upsample" && ctx.opset < 9
                       ? ctx.hasAttr("scales")
                       : given(scalesInput);
  bool hasSizes = !legacy && given(sizesInput);
  if (hasScales == hasSizes)
    return ctx.error() << "needs exactly one of scales and sizes";
  if (hasScales) {
    std::vector<double> values;
    if (ctx.node.op_type() == "Upsample" && ctx.opset < 9) {
      const onnx::AttributeProto *a = ctx.attr("scales");
      values.assign(a->floats().begin(), a->floats().end());
    } else {
      FailureOr<const Known *> k = ctx.requireKnown(scalesInput, "scales");
      if (failed(k))
        return failure();
      for (int64_t i = 0; i < (*k)->numElements(); ++i)
        values.push_back((*k)->at(i));
    }
    if (static_cast<int64_t>(values.size()) != n)
      return ctx.error() << "scales has " << values.size() << " entries, "
                         << "expected " << n;
    for (int64_t i = 0; i < n; ++i) {
      if (!(values[i] > 0))
        return ctx.error() << "scales must be positive, got "
                           << shortFloat(values[i]);
      int64_t d = axes[i];
      scales[d] = values[i];
      if (values[i] == 1.0)
        continue;
      FailureOr<int64_t> in = staticExtent(d);
      if (failed(in))
        return failure();
      sizes[d] = static_cast<int64_t>(std::floor(double(*in) * values[i]));
      if (sizes[d] < 1)
        return ctx.error() << "scale " << shortFloat(values[i])
                           << " leaves dimension "
                           << d << " empty";
    }
  } else {
    FailureOr<std::vector<int64_t>> values = ctx.knownInts(sizesInput, "sizes");
    if (failed(values))
      return failure();
    if (static_cast<int64_t>(values->size()) != n)
      return ctx.error() << "sizes has " << values->size() << " entries, "
                         << "expected " << n;
    SmallVector<int64_t> in;
    for (int64_t i = 0; i < n; ++i) {
      FailureOr<int64_t> e = staticExtent(axes[i]);
      if (failed(e))
        return failure();
      if ((*values)[i] < 1 || *e < 1)
        return ctx.error() << "sizes and the resized extents must be "
                              "positive, got "
                           << (*values)[i] << " for dimension " << axes[i];
      in.push_back(*e);
    }
    std::string policy = ctx.attrString("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (int64_t i = 0; i < n; ++i) {
        sizes[axes[i]] = (*values)[i];
        scales[axes[i]] = double((*values)[i]) / double(in[i]);
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      // One scale for every resized axis: the smallest (largest) ratio.
      double s = double((*values)[0]) / double(in[0]);
      for (int64_t i = 1; i < n; ++i) {
        double r = double((*values)[i]) / double(in[i]);
        s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
      }
      for (int64_t i = 0; i < n; ++i) {
        sizes[axes[i]] = static_cast<int64_t>(std::nearbyint(s * in[i]));
        scales[axes[i]] = s;
      }
    } else {
      return ctx.error() << "keep_aspect_ratio_policy '" << policy
                         << "' is not one of stretch, not_larger, not_smaller";
    }
  }

  // The crop box of tf_crop_and_resize: starts then ends, per resized axis.
  DenseF64ArrayAttr roi;
  if (ctm == "tf_crop_and_resize") {
    if (!given(1))
      return ctx.error() << "tf_crop_and_resize needs roi";
    FailureOr<const Known *> k = ctx.requireKnown(1, "roi");
    if (failed(k))
      return failure();
    if ((*k)->numElements() != 2 * n)
      return ctx.error() << "roi has " << (*k)->numElements()
                         << " entries, expected " << 2 * n;
    SmallVector<double> box(2 * rank);
    for (int64_t d = 0; d < rank; ++d)
      box[d + rank] = 1.0;
    for (int64_t i = 0; i < n; ++i) {
      box[axes[i]] = (*k)->at(i);
      box[axes[i] + rank] = (*k)->at(i + n);
    }
    roi = ctx.b.getDenseF64ArrayAttr(box);
  }
  if (mode != "nearest" && !isa<FloatType>(tx.getElementType()))
    return ctx.error() << mode << " mode needs a floating-point input, got "
                       << tx;
  OpChain c(ctx);
  return c.output(
      0, c.make<nn::ResizeOp>(
             *x, ctx.b.getDenseF64ArrayAttr(scales),
             ctx.b.getDenseI64ArrayAttr(sizes), ctx.b.getStringAttr(mode),
             ctx.b.getStringAttr(ctm), ctx.b.getStringAttr(nearest),
             ctx.b.getF64FloatAttr(ctx.attrFloat("cubic_coeff_a", -0.75)),
             ctx.attrInt("exclude_outside", 0) ? ctx.b.getUnitAttr()
                                               : UnitAttr(),
             ctx.b.getF64FloatAttr(ctx.attrFloat("extrapolation_value", 0.0)),
             roi));
}

/// ConvTranspose: the gradient of a convolution with respect to its input
/// (nn.conv_grad_input) with the weight read as the convolution's
/// ([C, M/group, kernel...]), plus the bias. Output padding and an
/// output_shape beyond what the convolution covers are zeros appended at
/// the end.
LogicalResult distopt::onnximport::convTransposeOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0), w = ctx.value(1);
  if (failed(x) || failed(w))
    return failure();
  FailureOr<Value> bias = ctx.optionalValue(2);
  if (failed(bias))
    return failure();
  auto tx = cast<RankedTensorType>(x->getType());
  auto tw = cast<RankedTensorType>(w->getType());
  int64_t rank = tx.getRank(), spatial = rank - 2;
  if (rank < 3 || tw.getRank() != rank || !tx.hasStaticShape() ||
      !tw.hasStaticShape())
    return ctx.error() << "needs a static input [N, C, spatial...] and a "
                          "weight of the same rank, got "
                       << tx << " and " << tw;
  int64_t group = ctx.attrInt("group", 1);
  if (group <= 0 || tw.getDimSize(0) != tx.getDimSize(1) ||
      tx.getDimSize(1) % group != 0)
    return ctx.error() << "channels do not match: input " << tx << ", weight "
                       << tw << ", group " << group;
  int64_t outChannels = tw.getDimSize(1) * group;
  ArrayRef<int64_t> kernel = tw.getShape().drop_front(2);
  if (ctx.hasAttr("kernel_shape") &&
      ArrayRef<int64_t>(ctx.attrInts("kernel_shape")) != kernel)
    return ctx.error() << "kernel_shape does not match the weight " << tw;
  auto get = [&](StringRef name, int64_t n, int64_t dflt) {
    std::vector<int64_t> v = ctx.attrInts(name);
    if (!ctx.hasAttr(name))
      v.assign(n, dflt);
    return SmallVector<int64_t>(v.begin(), v.end());
  };
  SmallVector<int64_t> strides = get("strides", spatial, 1),
                       dilations = get("dilations", spatial, 1),
                       pads = get("pads", 2 * spatial, 0),
                       outPad = get("output_padding", spatial, 0),
                       outShape = get("output_shape", 0, 0);
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(dilations.size()) != spatial ||
      static_cast<int64_t>(outPad.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return ctx.error() << "strides, dilations and output_padding need "
                       << spatial << " entries and pads " << 2 * spatial
                       << " for an input of rank " << rank;
  // output_shape may name the spatial extents or the whole shape.
  if (static_cast<int64_t>(outShape.size()) == rank)
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (!outShape.empty() && static_cast<int64_t>(outShape.size()) != spatial)
    return ctx.error() << "output_shape needs " << spatial << " entries";
  for (int64_t i = 0; i < spatial; ++i)
    if (strides[i] <= 0 || dilations[i] <= 0 || outPad[i] < 0 ||
        pads[i] < 0 || pads[i + spatial] < 0)
      return ctx.error() << "strides and dilations must be positive, pads "
                            "and output_padding not negative";
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  if (!llvm::is_contained({"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"},
                          autoPad))
    return ctx.error() << "auto_pad '" << autoPad << "' is not supported";
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (autoPad == "VALID")
    std::fill(pads.begin(), pads.end(), 0);
  // Per spatial dimension: the extent the convolution covers (`fit`) and
  // the zeros appended after it.
  SmallVector<int64_t> outShapeFull{tx.getDimSize(0), outChannels},
      fitShape{tx.getDimSize(0), outChannels}, tail(2 * rank, 0);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = tx.getDimSize(i + 2), s = strides[i];
    int64_t span = (kernel[i] - 1) * dilations[i] + 1;
    int64_t full = s * (in - 1) + outPad[i] + span; // before any padding
    int64_t out;
    if (!outShape.empty() || same) {
      out = outShape.empty() ? in * s : outShape[i];
      // The padding that gives that extent; negative: zeros appended.
      int64_t total = full - out;
      int64_t small = std::max<int64_t>(total, 0) / 2,
              large = std::max<int64_t>(total, 0) - small;
      pads[i] = autoPad == "SAME_UPPER" ? small : large;
      pads[i + spatial] = autoPad == "SAME_UPPER" ? large : small;
    } else {
      out = full - pads[i] - pads[i + spatial];
    }
    if (out < 1)
      return ctx.error() << "spatial dimension " << i
                         << " of the output would be " << out;
    // The convolution of an input of extent `fit` gives `in` again only
    // while the extra extent stays below the stride.
    int64_t core = s * (in - 1) + span - pads[i] - pads[i + spatial];
    int64_t fit = std::min(out, core + s - 1);
    if (fit < out && pads[i + spatial] > s - 1)
      return ctx.error() << "output_padding beyond the stride together with "
                            "end padding is not supported";
    outShapeFull.push_back(out);
    fitShape.push_back(fit);
    tail[i + 2 + rank] = out - fit;
  }
  OpChain c(ctx);
  Value y = c.typed<nn::ConvGradInputOp>(
      tx.clone(fitShape), *x, *w, ctx.b.getDenseI64ArrayAttr(strides),
      ctx.b.getDenseI64ArrayAttr(pads), ctx.b.getDenseI64ArrayAttr(dilations),
      ctx.b.getI64IntegerAttr(group));
  if (fitShape != outShapeFull)
    y = c.make<nn::PadOp>(y, ctx.b.getDenseI64ArrayAttr(tail),
                          ctx.b.getStringAttr("constant"),
                          ctx.b.getF64FloatAttr(0.0));
  if (*bias) {
    auto tb = cast<RankedTensorType>(bias->getType());
    if (tb.getRank() != 1 || tb.getDimSize(0) != outChannels)
      return ctx.error() << "bias must be [" << outChannels << "], got "
                         << tb;
    SmallVector<int64_t> perChannel(rank - 1, 1);
    perChannel[0] = outChannels;
    y = c.make<nn::AddOp>(y, c.reshape(*bias, perChannel));
  }
  return c.output(0, y);
}

/// MeanVarianceNormalization: (x - mean) / (std + 1e-9) over `axes`, as
/// ONNX's function body (the standard deviation is biased).
LogicalResult distopt::onnximport::meanVarianceNormOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.floatValue(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  SmallVector<int64_t> axes;
  std::vector<int64_t> given =
      ctx.hasAttr("axes") ? ctx.attrInts("axes") : std::vector<int64_t>{0, 2, 3};
  for (int64_t a : given) {
    FailureOr<int64_t> axis = ctx.axis(a, t.getRank(), "axes");
    if (failed(axis))
      return failure();
    axes.push_back(*axis);
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return ctx.error() << "axes repeats an axis";
  auto axesAttr = ctx.b.getDenseI64ArrayAttr(axes);
  OpChain c(ctx);
  Value mean = c.make<nn::ReduceMeanOp>(*x, axesAttr, ctx.b.getUnitAttr());
  Value d = c.make<nn::SubOp>(*x, mean);
  Value dev = stdDev(c, d, axesAttr, 0.0);
  Value denom = c.make<nn::AddOp>(dev, c.scalarLike(1e-9, dev));
  return c.output(0, c.make<nn::DivOp>(d, denom));
}

/// LRN: x / (bias + alpha / size * sum of x^2 over the `size` channels
/// around each)^beta. The channel window sum is an average pool of x^2
/// viewed as [N, 1, C, rest] (zero padding counted, times `size`).
LogicalResult distopt::onnximport::lrnOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  if (t.getRank() < 2 || !t.hasStaticShape() ||
      !isa<FloatType>(t.getElementType()))
    return ctx.error() << "needs a static floating-point input [N, C, ...], "
                          "got "
                       << t;
  int64_t size = ctx.attrInt("size", 0);
  if (size < 1)
    return ctx.error() << "size must be positive, got " << size;
  double alpha = ctx.attrFloat("alpha", 1e-4), beta = ctx.attrFloat("beta", 0.75),
         bias = ctx.attrFloat("bias", 1.0);
  int64_t rest = 1;
  for (int64_t d = 2; d < t.getRank(); ++d)
    rest *= t.getDimSize(d);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  OpChain c(ctx);
  Value sq = c.make<nn::MulOp>(*x, *x);
  Value planes = c.reshape(sq, {t.getDimSize(0), 1, t.getDimSize(1), rest});
  Value avg = c.make<nn::AvgPoolOp>(
      planes, ctx.b.getDenseI64ArrayAttr({size, 1}),
      ctx.b.getDenseI64ArrayAttr({1, 1}),
      ctx.b.getDenseI64ArrayAttr({before, 0, after, 0}),
      ctx.b.getDenseI64ArrayAttr({1, 1}), UnitAttr(), ctx.b.getUnitAttr());
  Value back = c.reshape(avg, t.getShape());
  Value scaled = c.make<nn::MulOp>(back, c.scalarLike(alpha, back));
  Value base = c.make<nn::AddOp>(scaled, c.scalarLike(bias, scaled));
  Value denom = c.make<nn::PowOp>(base, c.scalarLike(beta, base));
  return c.output(0, c.make<nn::DivOp>(*x, denom));
}

/// GridSample: nn.grid_sample on a 4-D input (opset 20's N-d form and mode
/// names linear/cubic map onto the 2-D op).
LogicalResult distopt::onnximport::gridSampleOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0), grid = ctx.value(1);
  if (failed(x) || failed(grid))
    return failure();
  auto tx = cast<RankedTensorType>(x->getType());
  if (tx.getRank() != 4)
    return ctx.error() << "only 4-D inputs [N, C, H, W] are supported, got "
                       << tx;
  std::string mode = ctx.attrString("mode", "bilinear");
  if (mode == "linear")
    mode = "bilinear";
  else if (mode == "cubic")
    mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return ctx.error() << "mode '" << ctx.attrString("mode", "")
                       << "' is not one of bilinear, nearest, bicubic";
  std::string padding = ctx.attrString("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return ctx.error() << "padding_mode '" << padding
                       << "' is not one of zeros, border, reflection";
  OpChain c(ctx);
  return c.output(0, c.make<nn::GridSampleOp>(
                         *x, *grid, ctx.b.getStringAttr(mode),
                         ctx.b.getStringAttr(padding),
                         ctx.attrInt("align_corners", 0) ? ctx.b.getUnitAttr()
                                                         : UnitAttr()));
}

/// MaxUnpool: zeros of the output shape with X written at the flattened
/// positions I (MaxPool's Indices): a scatter_elements into the flattened
/// zeros. The default output shape inverts the pooling's extents.
LogicalResult distopt::onnximport::maxUnpoolOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0), indices = ctx.value(1);
  if (failed(x) || failed(indices))
    return failure();
  auto tx = cast<RankedTensorType>(x->getType());
  auto ti = cast<RankedTensorType>(indices->getType());
  int64_t rank = tx.getRank(), spatial = rank - 2;
  if (rank < 3 || !tx.hasStaticShape() || ti.getShape() != tx.getShape() ||
      !ti.getElementType().isInteger(64))
    return ctx.error() << "needs a static input [N, C, spatial...] and i64 "
                          "indices of its shape, got "
                       << tx << " and " << ti;
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  std::vector<int64_t> strides = ctx.hasAttr("strides")
                                     ? ctx.attrInts("strides")
                                     : std::vector<int64_t>(spatial, 1);
  std::vector<int64_t> pads = ctx.hasAttr("pads")
                                  ? ctx.attrInts("pads")
                                  : std::vector<int64_t>(2 * spatial, 0);
  if (static_cast<int64_t>(kernel.size()) != spatial ||
      static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return ctx.error() << "kernel_shape and strides need " << spatial
                       << " entries and pads " << 2 * spatial;
  // The indices number the positions of the shape the pooling inverts to;
  // a larger output_shape appends zeros after them.
  SmallVector<int64_t> shape{tx.getDimSize(0), tx.getDimSize(1)};
  for (int64_t i = 0; i < spatial; ++i)
    shape.push_back((tx.getDimSize(i + 2) - 1) * strides[i] + kernel[i] -
                    pads[i] - pads[i + spatial]);
  SmallVector<int64_t> tail(2 * rank, 0);
  if (ctx.hasInput(2)) {
    FailureOr<std::vector<int64_t>> given =
        ctx.knownInts(2, "output_shape");
    if (failed(given))
      return failure();
    bool fits = static_cast<int64_t>(given->size()) == rank &&
                (*given)[0] == shape[0] && (*given)[1] == shape[1];
    for (int64_t d = 2; fits && d < rank; ++d) {
      fits = (*given)[d] >= shape[d];
      tail[d + rank] = (*given)[d] - shape[d];
    }
    if (!fits)
      return ctx.error() << "output_shape must keep the input's batch and "
                            "channels and cover the unpooled extents";
  }
  int64_t total = 1;
  for (int64_t e : shape) {
    if (e < 1)
      return ctx.error() << "the output extents must be positive";
    total *= e;
  }
  OpChain c(ctx);
  Value zero = c.scalarLike(0.0, *x);
  Value zeros = c.typed<nn::ExpandOp>(tx.clone({total}), zero);
  Value flatIdx = c.reshape(*indices, {tx.getNumElements()});
  Value flatX = c.reshape(*x, {tx.getNumElements()});
  Value scattered = c.make<nn::ScatterElementsOp>(
      zeros, flatIdx, flatX, ctx.b.getI64IntegerAttr(0),
      ctx.b.getStringAttr("none"));
  Value y = c.reshape(scattered, shape);
  if (llvm::any_of(tail, [](int64_t t) { return t != 0; }))
    y = c.make<nn::PadOp>(y, ctx.b.getDenseI64ArrayAttr(tail),
                          ctx.b.getStringAttr("constant"),
                          ctx.b.getF64FloatAttr(0.0));
  return c.output(0, y);
}

LogicalResult distopt::onnximport::detOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.floatValue(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  int64_t r = t.getRank();
  if (r < 2 || t.getDimSize(r - 1) != t.getDimSize(r - 2) ||
      ShapedType::isDynamic(t.getDimSize(r - 1)))
    return ctx.error() << "needs square matrices [*, M, M], got " << t;
  OpChain c(ctx);
  return c.output(0, c.make<nn::DetOp>(*x));
}
