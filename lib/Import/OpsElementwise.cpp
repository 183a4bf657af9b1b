//===- OpsElementwise.cpp - ONNX element-wise ops ---------------*- C++ -*-===//
#include "ImportContext.h"

#include "nn/IR/NNOps.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

template <typename OpT>
LogicalResult binaryOp(ImportContext &ctx) {
  if (ctx.opset < 7 && ctx.hasAttr("broadcast"))
    return ctx.error() << "the opset < 7 'broadcast' attribute is not supported";
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b))
    return failure();
  auto ta = cast<RankedTensorType>(a->getType());
  auto tb = cast<RankedTensorType>(b->getType());
  if (!broadcast(ta.getShape(), tb.getShape()))
    return ctx.error() << "operand shapes " << ta << " and " << tb
                       << " do not broadcast";
  if (ta.getElementType() != tb.getElementType())
    return ctx.error() << "operands have different element types "
                       << ta.getElementType() << " and " << tb.getElementType();
  ctx.setOutput(0, OpT::create(ctx.b, ctx.loc, *a, *b));
  return success();
}

LogicalResult powOp(ImportContext &ctx) {
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b))
    return failure();
  auto ta = cast<RankedTensorType>(a->getType());
  auto tb = cast<RankedTensorType>(b->getType());
  if (!broadcast(ta.getShape(), tb.getShape()))
    return ctx.error() << "operand shapes do not broadcast";
  Value exp = *b;
  if (tb.getElementType() != ta.getElementType())
    exp = nn::CastOp::create(ctx.b, ctx.loc, tb.clone(ta.getElementType()), exp);
  ctx.setOutput(0, nn::PowOp::create(ctx.b, ctx.loc, *a, exp));
  return success();
}

LogicalResult modOp(ImportContext &ctx) {
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b))
    return failure();
  bool fmod = ctx.attrInt("fmod", 0) != 0;
  if (!fmod && isa<FloatType>(cast<RankedTensorType>(a->getType()).getElementType()))
    return ctx.error() << "fmod=0 on floating-point operands is not allowed "
                          "by ONNX";
  ctx.setOutput(0, nn::ModOp::create(ctx.b, ctx.loc, *a, *b, ctx.b.getBoolAttr(fmod)));
  return success();
}

/// Max, Min, Sum, Mean: variadic, reduced pairwise.
template <typename OpT>
LogicalResult variadicOp(ImportContext &ctx) {
  FailureOr<Value> acc = ctx.value(0);
  if (failed(acc))
    return failure();
  for (unsigned i = 1; i < ctx.numInputs(); ++i) {
    FailureOr<Value> v = ctx.value(i);
    if (failed(v))
      return failure();
    auto ta = cast<RankedTensorType>(acc->getType());
    auto tb = cast<RankedTensorType>(v->getType());
    if (!broadcast(ta.getShape(), tb.getShape()))
      return ctx.error() << "input " << i << " does not broadcast";
    *acc = OpT::create(ctx.b, ctx.loc, *acc, *v);
  }
  ctx.setOutput(0, *acc);
  return success();
}

LogicalResult meanOp(ImportContext &ctx) {
  if (failed(variadicOp<nn::AddOp>(ctx)))
    return failure();
  Value sum = ctx.values[ctx.node.output(0)].value;
  auto t = cast<RankedTensorType>(sum.getType());
  Value n = ctx.scalar(ctx.numInputs(), t.getElementType());
  ctx.setOutput(0, nn::DivOp::create(ctx.b, ctx.loc, sum, n));
  return success();
}

template <typename OpT>
LogicalResult unaryOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  ctx.setOutput(0, OpT::create(ctx.b, ctx.loc, *x));
  return success();
}

LogicalResult geluOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  std::string approx = ctx.attrString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return ctx.error() << "approximate must be none or tanh, got " << approx;
  ctx.setOutput(0, nn::GeluOp::create(ctx.b, ctx.loc, *x,
                                      ctx.b.getStringAttr(approx)));
  return success();
}

LogicalResult leakyReluOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  ctx.setOutput(0, nn::LeakyReluOp::create(
                       ctx.b, ctx.loc, *x,
                       ctx.b.getF64FloatAttr(ctx.attrFloat("alpha", 0.01))));
  return success();
}

LogicalResult clipOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  FloatAttr lo, hi;
  if (ctx.opset < 11) {
    if (ctx.hasAttr("min"))
      lo = ctx.b.getF64FloatAttr(ctx.attrFloat("min", 0));
    if (ctx.hasAttr("max"))
      hi = ctx.b.getF64FloatAttr(ctx.attrFloat("max", 0));
  } else {
    Value result = *x;
    // Bounds are inputs: known ones become attributes, others max/min ops.
    for (unsigned i : {1u, 2u}) {
      if (!ctx.hasInput(i))
        continue;
      if (const Known *k = ctx.known(i)) {
        (i == 1 ? lo : hi) = ctx.b.getF64FloatAttr(k->at(0));
        continue;
      }
      FailureOr<Value> bound = ctx.value(i);
      if (failed(bound))
        return failure();
      result = i == 1 ? Value(nn::MaxOp::create(ctx.b, ctx.loc, result, *bound))
                      : Value(nn::MinOp::create(ctx.b, ctx.loc, result, *bound));
    }
    if (result != *x && !lo && !hi) {
      ctx.setOutput(0, result);
      return success();
    }
    *x = result;
  }
  ctx.setOutput(0, nn::ClipOp::create(ctx.b, ctx.loc, *x, lo, hi));
  return success();
}

LogicalResult castOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  int64_t to = ctx.attrInt("to", 0);
  Type et = elementTypeOf(ctx.b.getContext(), to);
  if (!et)
    return ctx.error() << "casting to ONNX element type " << to
                       << " is not supported";
  auto t = cast<RankedTensorType>(x->getType());
  if (t.getElementType() == et) {
    ctx.setOutput(0, *x);
    return success();
  }
  ctx.setOutput(0, nn::CastOp::create(ctx.b, ctx.loc, t.clone(et), *x));
  return success();
}

LogicalResult whereOp(ImportContext &ctx) {
  FailureOr<Value> c = ctx.value(0), a = ctx.value(1), b = ctx.value(2);
  if (failed(c) || failed(a) || failed(b))
    return failure();
  ctx.setOutput(0, nn::WhereOp::create(ctx.b, ctx.loc, *c, *a, *b));
  return success();
}

LogicalResult dropoutOp(ImportContext &ctx) {
  // Inference: the identity; the mask, if requested, is all true.
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  if (ctx.opset >= 12 && ctx.hasInput(2)) {
    const Known *training = ctx.known(2);
    if (!training || training->at(0) != 0)
      return ctx.error() << "training-mode dropout is not supported; "
                            "distopt compiles inference graphs";
  }
  ctx.setOutput(0, *x);
  if (ctx.numOutputs() > 1 && !ctx.node.output(1).empty()) {
    auto t = cast<RankedTensorType>(x->getType());
    Known k = Known::ofInts(std::vector<int64_t>(t.getShape().begin(), t.getShape().end()),
                            std::vector<int64_t>(t.getNumElements(), 1));
    if (t.getNumElements() > kMaxFoldElements)
      return ctx.error() << "the dropout mask output is too large to materialise";
    ctx.setKnownOutput(1, k, ctx.b.getI1Type());
  }
  return success();
}

/// Softplus / HardSigmoid / Elu written with nn ops.
LogicalResult softplusOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  Value e = nn::ExpOp::create(ctx.b, ctx.loc, *x);
  Value one = ctx.scalar(1.0, t.getElementType());
  Value s = nn::AddOp::create(ctx.b, ctx.loc, e, one);
  ctx.setOutput(0, nn::LogOp::create(ctx.b, ctx.loc, s));
  return success();
}

LogicalResult hardSigmoidOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  Type et = cast<RankedTensorType>(x->getType()).getElementType();
  Value a = ctx.scalar(ctx.attrFloat("alpha", 0.2), et);
  Value b = ctx.scalar(ctx.attrFloat("beta", 0.5), et);
  Value y = nn::AddOp::create(ctx.b, ctx.loc, nn::MulOp::create(ctx.b, ctx.loc, *x, a), b);
  ctx.setOutput(0, nn::ClipOp::create(ctx.b, ctx.loc, y, ctx.b.getF64FloatAttr(0.0),
                                      ctx.b.getF64FloatAttr(1.0)));
  return success();
}

LogicalResult eluOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  Type et = cast<RankedTensorType>(x->getType()).getElementType();
  Value zero = ctx.scalar(0.0, et), one = ctx.scalar(1.0, et);
  Value alpha = ctx.scalar(ctx.attrFloat("alpha", 1.0), et);
  Value neg = nn::MulOp::create(
      ctx.b, ctx.loc, alpha,
      nn::SubOp::create(ctx.b, ctx.loc, nn::ExpOp::create(ctx.b, ctx.loc, *x), one));
  Value pos = nn::GreaterOp::create(ctx.b, ctx.loc, *x, zero);
  ctx.setOutput(0, nn::WhereOp::create(ctx.b, ctx.loc, pos, *x, neg));
  return success();
}

} // namespace

void distopt::onnximport::addElementwiseHandlers(llvm::StringMap<Handler> &t) {
  t["Add"] = binaryOp<nn::AddOp>;
  t["Sub"] = binaryOp<nn::SubOp>;
  t["Mul"] = binaryOp<nn::MulOp>;
  t["Div"] = binaryOp<nn::DivOp>;
  t["Pow"] = powOp;
  t["Mod"] = modOp;
  t["Equal"] = binaryOp<nn::EqualOp>;
  t["Less"] = binaryOp<nn::LessOp>;
  t["LessOrEqual"] = binaryOp<nn::LessEqualOp>;
  t["Greater"] = binaryOp<nn::GreaterOp>;
  t["GreaterOrEqual"] = binaryOp<nn::GreaterEqualOp>;
  t["And"] = binaryOp<nn::AndOp>;
  t["Or"] = binaryOp<nn::OrOp>;
  t["Xor"] = binaryOp<nn::XorOp>;
  t["Max"] = variadicOp<nn::MaxOp>;
  t["Min"] = variadicOp<nn::MinOp>;
  t["Sum"] = variadicOp<nn::AddOp>;
  t["Mean"] = meanOp;
  t["Neg"] = unaryOp<nn::NegOp>;
  t["Abs"] = unaryOp<nn::AbsOp>;
  t["Exp"] = unaryOp<nn::ExpOp>;
  t["Log"] = unaryOp<nn::LogOp>;
  t["Sqrt"] = unaryOp<nn::SqrtOp>;
  t["Reciprocal"] = unaryOp<nn::ReciprocalOp>;
  t["Tanh"] = unaryOp<nn::TanhOp>;
  t["Sigmoid"] = unaryOp<nn::SigmoidOp>;
  t["Erf"] = unaryOp<nn::ErfOp>;
  t["Relu"] = unaryOp<nn::ReluOp>;
  t["Not"] = unaryOp<nn::NotOp>;
  t["Sin"] = unaryOp<nn::SinOp>;
  t["Cos"] = unaryOp<nn::CosOp>;
  t["Floor"] = unaryOp<nn::FloorOp>;
  t["Ceil"] = unaryOp<nn::CeilOp>;
  t["Round"] = unaryOp<nn::RoundOp>;
  t["Sign"] = unaryOp<nn::SignOp>;
  t["Identity"] = unaryOp<nn::IdentityOp>;
  t["Gelu"] = geluOp;
  t["LeakyRelu"] = leakyReluOp;
  t["Clip"] = clipOp;
  t["Cast"] = castOp;
  t["Where"] = whereOp;
  t["Dropout"] = dropoutOp;
  t["Softplus"] = softplusOp;
  t["HardSigmoid"] = hardSigmoidOp;
  t["Elu"] = eluOp;
}
