//===- OpsNetwork.cpp - ONNX linear algebra, normalisation, pooling -*- C++ -*-===//
#include "ImportContext.h"

#include "nn/IR/NNOps.h"
#include "nn/IR/ShapeUtils.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

Value reshapeTo(ImportContext &ctx, Value x, ArrayRef<int64_t> shape) {
  auto t = cast<RankedTensorType>(x.getType());
  if (t.getShape() == shape)
    return x;
  return nn::ReshapeOp::create(ctx.b, ctx.loc, t.clone(shape), x);
}

Value transpose2d(ImportContext &ctx, Value x) {
  return nn::TransposeOp::create(ctx.b, ctx.loc, x,
                                 ctx.b.getDenseI64ArrayAttr({1, 0}));
}

LogicalResult matmulOp(ImportContext &ctx) {
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b))
    return failure();
  auto ta = cast<RankedTensorType>(a->getType());
  auto tb = cast<RankedTensorType>(b->getType());
  if (failed(nn::matmulShape(ta.getShape(), tb.getShape())))
    return ctx.error() << "cannot multiply " << ta << " by " << tb;
  if (ta.getElementType() != tb.getElementType())
    return ctx.error() << "operands have different element types";
  ctx.setOutput(0, nn::MatMulOp::create(ctx.b, ctx.loc, *a, *b));
  return success();
}

/// Gemm: alpha * op(A) @ op(B) + beta * C, with op transposing on request.
LogicalResult gemmOp(ImportContext &ctx) {
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b))
    return failure();
  if (cast<RankedTensorType>(a->getType()).getRank() != 2 ||
      cast<RankedTensorType>(b->getType()).getRank() != 2)
    return ctx.error() << "Gemm needs 2-D operands";
  Value A = ctx.attrInt("transA", 0) ? transpose2d(ctx, *a) : *a;
  Value B = ctx.attrInt("transB", 0) ? transpose2d(ctx, *b) : *b;
  auto ta = cast<RankedTensorType>(A.getType());
  auto tb = cast<RankedTensorType>(B.getType());
  if (ta.getDimSize(1) != tb.getDimSize(0))
    return ctx.error() << "cannot multiply " << ta << " by " << tb;
  Type et = ta.getElementType();
  Value y = nn::MatMulOp::create(ctx.b, ctx.loc, A, B);
  double alpha = ctx.attrFloat("alpha", 1.0), beta = ctx.attrFloat("beta", 1.0);
  if (alpha != 1.0)
    y = nn::MulOp::create(ctx.b, ctx.loc, y, ctx.scalar(alpha, et));
  if (ctx.hasInput(2) && beta != 0.0) {
    FailureOr<Value> c = ctx.value(2);
    if (failed(c))
      return failure();
    Value C = *c;
    auto tc = cast<RankedTensorType>(C.getType());
    if (!broadcast(tc.getShape(), cast<RankedTensorType>(y.getType()).getShape()))
      return ctx.error() << "C of type " << tc << " does not broadcast to the product";
    if (beta != 1.0)
      C = nn::MulOp::create(ctx.b, ctx.loc, C, ctx.scalar(beta, et));
    y = nn::AddOp::create(ctx.b, ctx.loc, y, C);
  }
  ctx.setOutput(0, y);
  return success();
}

template <typename OpT>
LogicalResult softmaxOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  int64_t dflt = ctx.opset >= 13 ? -1 : 1;
  FailureOr<int64_t> axis = ctx.axis(ctx.attrInt("axis", dflt), t.getRank(), "axis");
  if (failed(axis))
    return failure();
  if (ctx.opset >= 13 || *axis == t.getRank() - 1) {
    ctx.setOutput(0, OpT::create(ctx.b, ctx.loc, *x, ctx.b.getI64IntegerAttr(*axis)));
    return success();
  }
  // Before opset 13 the input is flattened to 2-D at `axis`.
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < t.getRank(); ++d)
    (d < *axis ? a : b) *= t.getDimSize(d);
  Value flat = reshapeTo(ctx, *x, {a, b});
  Value s = OpT::create(ctx.b, ctx.loc, flat, ctx.b.getI64IntegerAttr(1));
  ctx.setOutput(0, reshapeTo(ctx, s, t.getShape()));
  return success();
}

LogicalResult layerNormOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0), scale = ctx.value(1);
  if (failed(x) || failed(scale))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis = ctx.axis(ctx.attrInt("axis", -1), t.getRank(), "axis");
  if (failed(axis))
    return failure();
  for (unsigned i = 1; i < ctx.numOutputs(); ++i)
    if (!ctx.node.output(i).empty())
      return ctx.error() << "the Mean and InvStdDev outputs (training) are not "
                            "supported";
  if (ctx.attrInt("stash_type", 1) != 1)
    return ctx.error() << "stash_type other than float is not supported";
  Value bias;
  if (ctx.hasInput(2)) {
    FailureOr<Value> b = ctx.value(2);
    if (failed(b))
      return failure();
    bias = *b;
  }
  ctx.setOutput(0, nn::LayerNormOp::create(
                       ctx.b, ctx.loc, *x, *scale, bias,
                       ctx.b.getI64IntegerAttr(*axis),
                       ctx.b.getF64FloatAttr(ctx.attrFloat("epsilon", 1e-5))));
  return success();
}

/// Reductions: axes moved from attribute to input at opset 13 (ReduceSum) or
/// 18 (the others).
template <typename OpT>
LogicalResult reduceOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  bool isSum = ctx.node.op_type() == "ReduceSum";
  int64_t inputFrom = isSum ? 13 : 18;
  std::vector<int64_t> axes;
  if (ctx.opset >= inputFrom) {
    if (ctx.hasInput(1)) {
      auto k = ctx.knownInts(1, "axes");
      if (failed(k))
        return failure();
      axes = *k;
    }
  } else {
    axes = ctx.attrInts("axes");
  }
  if (axes.empty()) {
    if (ctx.attrInt("noop_with_empty_axes", 0)) {
      ctx.setOutput(0, *x);
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
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  bool keep = ctx.attrInt("keepdims", 1) != 0;
  ctx.setOutput(0, OpT::create(ctx.b, ctx.loc, *x, ctx.b.getDenseI64ArrayAttr(axes),
                               keep ? ctx.b.getUnitAttr() : UnitAttr()));
  return success();
}

template <typename OpT>
LogicalResult argReduceOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis = ctx.axis(ctx.attrInt("axis", 0), t.getRank(), "axis");
  if (failed(axis))
    return failure();
  if (ctx.attrInt("select_last_index", 0))
    return ctx.error() << "select_last_index=1 is not supported";
  bool keep = ctx.attrInt("keepdims", 1) != 0;
  ctx.setOutput(0, OpT::create(ctx.b, ctx.loc, *x, ctx.b.getI64IntegerAttr(*axis),
                               keep ? ctx.b.getUnitAttr() : UnitAttr()));
  return success();
}

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
    if (v.empty())
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
    return ctx.error() << "kernel/strides/dilations need " << spatial
                       << " entries and pads " << 2 * spatial;
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t in = x.getDimSize(i + 2);
      int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      int64_t span = w.dilations[i] * (w.kernel[i] - 1) + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + span - in);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[i + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return ctx.error() << "auto_pad '" << autoPad << "' is not supported";
  }
  return w;
}

LogicalResult convOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0), w = ctx.value(1);
  if (failed(x) || failed(w))
    return failure();
  auto tx = cast<RankedTensorType>(x->getType());
  auto tw = cast<RankedTensorType>(w->getType());
  if (tx.getRank() < 3 || tw.getRank() != tx.getRank())
    return ctx.error() << "Conv needs input [N, C, spatial...] and a weight of "
                          "the same rank";
  FailureOr<Window> win = windowOf(ctx, tx, tw.getShape().drop_front(2));
  if (failed(win))
    return failure();
  Value bias;
  if (ctx.hasInput(2)) {
    FailureOr<Value> b = ctx.value(2);
    if (failed(b))
      return failure();
    bias = *b;
  }
  int64_t group = ctx.attrInt("group", 1);
  if (group <= 0 || tx.getDimSize(1) != tw.getDimSize(1) * group ||
      tw.getDimSize(0) % group != 0)
    return ctx.error() << "channels do not match: input " << tx << ", weight "
                       << tw << ", group " << group;
  ctx.setOutput(0, nn::ConvOp::create(ctx.b, ctx.loc, *x, *w, bias,
                                      ctx.b.getDenseI64ArrayAttr(win->strides),
                                      ctx.b.getDenseI64ArrayAttr(win->pads),
                                      ctx.b.getDenseI64ArrayAttr(win->dilations),
                                      ctx.b.getI64IntegerAttr(group)));
  return success();
}

template <typename OpT>
LogicalResult poolOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto tx = cast<RankedTensorType>(x->getType());
  if (tx.getRank() < 3)
    return ctx.error() << "pooling needs input [N, C, spatial...]";
  if (ctx.numOutputs() > 1 && !ctx.node.output(1).empty())
    return ctx.error() << "the Indices output of MaxPool is not supported";
  if (ctx.attrInt("storage_order", 0))
    return ctx.error() << "storage_order=1 is not supported";
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  FailureOr<Window> win = windowOf(ctx, tx, kernel);
  if (failed(win))
    return failure();
  bool ceil = ctx.attrInt("ceil_mode", 0) != 0;
  bool countPad = ctx.attrInt("count_include_pad", 0) != 0;
  ctx.setOutput(0, OpT::create(ctx.b, ctx.loc, *x,
                               ctx.b.getDenseI64ArrayAttr(win->kernel),
                               ctx.b.getDenseI64ArrayAttr(win->strides),
                               ctx.b.getDenseI64ArrayAttr(win->pads),
                               ctx.b.getDenseI64ArrayAttr(win->dilations),
                               ceil ? ctx.b.getUnitAttr() : UnitAttr(),
                               countPad ? ctx.b.getUnitAttr() : UnitAttr()));
  return success();
}

template <typename OpT>
LogicalResult globalPoolOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  if (cast<RankedTensorType>(x->getType()).getRank() < 3)
    return ctx.error() << "pooling needs input [N, C, spatial...]";
  ctx.setOutput(0, OpT::create(ctx.b, ctx.loc, *x));
  return success();
}

LogicalResult batchNormOp(ImportContext &ctx) {
  SmallVector<Value> in;
  for (unsigned i = 0; i < 5; ++i) {
    FailureOr<Value> v = ctx.value(i);
    if (failed(v))
      return failure();
    in.push_back(*v);
  }
  if (ctx.attrInt("training_mode", 0))
    return ctx.error() << "training-mode batch normalisation is not supported";
  ctx.setOutput(0, nn::BatchNormOp::create(
                       ctx.b, ctx.loc, in[0], in[1], in[2], in[3], in[4],
                       ctx.b.getF64FloatAttr(ctx.attrFloat("epsilon", 1e-5))));
  return success();
}

} // namespace

void distopt::onnximport::addNetworkHandlers(llvm::StringMap<Handler> &t) {
  t["MatMul"] = matmulOp;
  t["Gemm"] = gemmOp;
  t["Softmax"] = softmaxOp<nn::SoftmaxOp>;
  t["LogSoftmax"] = softmaxOp<nn::LogSoftmaxOp>;
  t["LayerNormalization"] = layerNormOp;
  t["ReduceSum"] = reduceOp<nn::ReduceSumOp>;
  t["ReduceMean"] = reduceOp<nn::ReduceMeanOp>;
  t["ReduceMax"] = reduceOp<nn::ReduceMaxOp>;
  t["ReduceMin"] = reduceOp<nn::ReduceMinOp>;
  t["ReduceProd"] = reduceOp<nn::ReduceProdOp>;
  t["ArgMax"] = argReduceOp<nn::ArgMaxOp>;
  t["ArgMin"] = argReduceOp<nn::ArgMinOp>;
  t["Conv"] = convOp;
  t["MaxPool"] = poolOp<nn::MaxPoolOp>;
  t["AveragePool"] = poolOp<nn::AvgPoolOp>;
  t["GlobalAveragePool"] = globalPoolOp<nn::GlobalAvgPoolOp>;
  t["GlobalMaxPool"] = globalPoolOp<nn::GlobalMaxPoolOp>;
  t["BatchNormalization"] = batchNormOp;
}
