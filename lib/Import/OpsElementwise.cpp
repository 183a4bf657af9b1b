//===- OpsElementwise.cpp - ONNX element-wise ops ---------------*- C++ -*-===//
#include "ImportContext.h"

#include "nn/IR/NNOps.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

template <typename OpT>
FailureOr<Value> makeBinary(ImportContext &ctx, Value a, Value b) {
  return ctx.create<OpT>(a, b);
}

using BinaryBuilder = FailureOr<Value> (*)(ImportContext &, Value, Value);

BinaryBuilder binaryBuilder(StringRef op) {
  return llvm::StringSwitch<BinaryBuilder>(op)
      .Cases({"Add", "Sum", "Mean"}, makeBinary<nn::AddOp>)
      .Case("Sub", makeBinary<nn::SubOp>)
      .Case("Mul", makeBinary<nn::MulOp>)
      .Case("Div", makeBinary<nn::DivOp>)
      .Case("Max", makeBinary<nn::MaxOp>)
      .Case("Min", makeBinary<nn::MinOp>)
      .Case("Equal", makeBinary<nn::EqualOp>)
      .Case("Less", makeBinary<nn::LessOp>)
      .Case("LessOrEqual", makeBinary<nn::LessEqualOp>)
      .Case("Greater", makeBinary<nn::GreaterOp>)
      .Case("GreaterOrEqual", makeBinary<nn::GreaterEqualOp>)
      .Case("And", makeBinary<nn::AndOp>)
      .Case("Or", makeBinary<nn::OrOp>)
      .Case("Xor", makeBinary<nn::XorOp>)
      .Default(nullptr);
}

/// Checks that two operands have one element type (ONNX's T for both).
LogicalResult sameElementType(ImportContext &ctx, Value a, Value b,
                              unsigned i = 1) {
  Type ea = cast<RankedTensorType>(a.getType()).getElementType();
  Type eb = cast<RankedTensorType>(b.getType()).getElementType();
  if (ea != eb)
    return ctx.error() << "input " << i << " has element type " << eb
                       << " but input 0 has " << ea;
  return success();
}

bool isBool(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType().isInteger(1);
}

template <typename OpT>
FailureOr<Value> makeUnary(ImportContext &ctx, Value x) {
  return ctx.create<OpT>(x);
}

using UnaryBuilder = FailureOr<Value> (*)(ImportContext &, Value);

UnaryBuilder unaryBuilder(StringRef op) {
  return llvm::StringSwitch<UnaryBuilder>(op)
      .Case("Neg", makeUnary<nn::NegOp>)
      .Case("Abs", makeUnary<nn::AbsOp>)
      .Case("Exp", makeUnary<nn::ExpOp>)
      .Case("Log", makeUnary<nn::LogOp>)
      .Case("Sqrt", makeUnary<nn::SqrtOp>)
      .Case("Reciprocal", makeUnary<nn::ReciprocalOp>)
      .Case("Tanh", makeUnary<nn::TanhOp>)
      .Case("Sigmoid", makeUnary<nn::SigmoidOp>)
      .Case("Erf", makeUnary<nn::ErfOp>)
      .Case("Relu", makeUnary<nn::ReluOp>)
      .Case("Not", makeUnary<nn::NotOp>)
      .Case("Sin", makeUnary<nn::SinOp>)
      .Case("Cos", makeUnary<nn::CosOp>)
      .Case("Floor", makeUnary<nn::FloorOp>)
      .Case("Ceil", makeUnary<nn::CeilOp>)
      .Case("Round", makeUnary<nn::RoundOp>)
      .Case("Sign", makeUnary<nn::SignOp>)
      .Default(nullptr);
}

/// Ops defined on floating-point tensors only.
bool floatOnly(StringRef op) {
  return llvm::is_contained({"Exp", "Log", "Sqrt", "Reciprocal", "Tanh",
                             "Sigmoid", "Erf", "Sin", "Cos", "Floor", "Ceil",
                             "Round", "Gelu", "LeakyRelu", "Softplus",
                             "HardSigmoid", "Elu", "HardSwish", "PRelu"},
                            op);
}

FailureOr<Value> floatInput(ImportContext &ctx, unsigned i) {
  FailureOr<Value> x = ctx.value(i);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(x->getType()).getElementType()))
    return ctx.error() << "needs a floating-point input, got "
                       << x->getType();
  return x;
}

} // namespace

LogicalResult distopt::onnximport::binaryOp(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b) || failed(sameElementType(ctx, *a, *b)))
    return failure();
  bool logic = op == "And" || op == "Or" || op == "Xor";
  if (logic && !isBool(*a))
    return ctx.error() << "needs bool operands, got " << a->getType();
  FailureOr<Value> r = binaryBuilder(op)(ctx, *a, *b);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

LogicalResult distopt::onnximport::powOp(ImportContext &ctx) {
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b))
    return failure();
  FailureOr<Value> r = ctx.create<nn::PowOp>(*a, *b);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

LogicalResult distopt::onnximport::modOp(ImportContext &ctx) {
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b) || failed(sameElementType(ctx, *a, *b)))
    return failure();
  bool fmod = ctx.attrInt("fmod", 0) != 0;
  if (!fmod &&
      isa<FloatType>(cast<RankedTensorType>(a->getType()).getElementType()))
    return ctx.error() << "fmod=0 on floating-point operands is not allowed "
                          "by ONNX";
  FailureOr<Value> r = ctx.create<nn::ModOp>(*a, *b, ctx.b.getBoolAttr(fmod));
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// Max, Min, Sum, Mean: a chain of binary ops (Mean then divides).
LogicalResult distopt::onnximport::variadicOp(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  FailureOr<Value> acc = ctx.value(0);
  if (failed(acc))
    return failure();
  for (unsigned i = 1; i < ctx.numInputs(); ++i) {
    FailureOr<Value> v = ctx.value(i);
    if (failed(v) || failed(sameElementType(ctx, *acc, *v, i)))
      return failure();
    acc = binaryBuilder(op)(ctx, *acc, *v);
    if (failed(acc))
      return failure();
  }
  if (op == "Mean" && ctx.numInputs() > 1) {
    Type et = cast<RankedTensorType>(acc->getType()).getElementType();
    acc = ctx.create<nn::DivOp>(*acc, ctx.scalar(ctx.numInputs(), et));
    if (failed(acc))
      return failure();
  }
  ctx.setOutput(0, *acc);
  return success();
}

LogicalResult distopt::onnximport::unaryOp(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  FailureOr<Value> x = floatOnly(op) ? floatInput(ctx, 0) : ctx.value(0);
  if (failed(x))
    return failure();
  if (op == "Not" && !isBool(*x))
    return ctx.error() << "needs a bool input, got " << x->getType();
  FailureOr<Value> r = unaryBuilder(op)(ctx, *x);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// Identity passes its input through, known values included.
LogicalResult distopt::onnximport::identityOp(ImportContext &ctx) {
  FailureOr<Tensor *> t = ctx.input(0);
  if (failed(t))
    return failure();
  Tensor copy = **t;
  ctx.values[ctx.node.output(0)] = copy;
  return success();
}

LogicalResult distopt::onnximport::geluOp(ImportContext &ctx) {
  FailureOr<Value> x = floatInput(ctx, 0);
  if (failed(x))
    return failure();
  std::string approx = ctx.attrString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return ctx.error() << "approximate must be \"none\" or \"tanh\", got \""
                       << approx << "\"";
  FailureOr<Value> r =
      ctx.create<nn::GeluOp>(*x, ctx.b.getStringAttr(approx));
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

LogicalResult distopt::onnximport::leakyReluOp(ImportContext &ctx) {
  FailureOr<Value> x = floatInput(ctx, 0);
  if (failed(x))
    return failure();
  FailureOr<Value> r = ctx.create<nn::LeakyReluOp>(
      *x, ctx.b.getF64FloatAttr(ctx.attrFloat("alpha", 0.01)));
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// Clip: bounds are attributes before opset 11 and optional inputs from 11.
/// Known bounds become attributes; others max/min ops.
LogicalResult distopt::onnximport::clipOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  FloatAttr lo, hi;
  Value result = *x;
  if (ctx.opset < 11) {
    if (ctx.hasAttr("min"))
      lo = ctx.b.getF64FloatAttr(ctx.attrFloat("min", 0));
    if (ctx.hasAttr("max"))
      hi = ctx.b.getF64FloatAttr(ctx.attrFloat("max", 0));
  } else {
    for (unsigned i : {1u, 2u}) {
      if (!ctx.hasInput(i))
        continue;
      RankedTensorType bt = ctx.type(i);
      if (!bt)
        return ctx.error() << "input " << i << " is not defined";
      if (bt.getNumElements() != 1)
        return ctx.error() << (i == 1 ? "min" : "max")
                           << " must be a scalar, got " << bt;
      Type xt = cast<RankedTensorType>(x->getType()).getElementType();
      if (bt.getElementType() != xt)
        return ctx.error() << "input " << i << " has element type "
                           << bt.getElementType() << " but input 0 has " << xt;
      if (const Known *k = ctx.known(i)) {
        (i == 1 ? lo : hi) = ctx.b.getF64FloatAttr(k->at(0));
        continue;
      }
      FailureOr<Value> bound = ctx.value(i);
      if (failed(bound))
        return failure();
      FailureOr<Value> r = i == 1 ? ctx.create<nn::MaxOp>(result, *bound)
                                  : ctx.create<nn::MinOp>(result, *bound);
      if (failed(r))
        return failure();
      result = *r;
    }
  }
  if (!lo && !hi) {
    ctx.setOutput(0, result);
    return success();
  }
  FailureOr<Value> r = ctx.create<nn::ClipOp>(result, lo, hi);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

LogicalResult distopt::onnximport::castOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  int64_t to = ctx.attrInt("to", 0);
  Type et = elementTypeOf(ctx.b.getContext(), to);
  if (!et)
    return ctx.error() << "casting to " << dataTypeName(to)
                       << " is not supported";
  auto t = cast<RankedTensorType>(x->getType());
  if (t.getElementType() == et) {
    ctx.setOutput(0, *x);
    return success();
  }
  FailureOr<Value> r = ctx.createTyped<nn::CastOp>(t.clone(et), *x);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

LogicalResult distopt::onnximport::whereOp(ImportContext &ctx) {
  FailureOr<Value> c = ctx.value(0), a = ctx.value(1), b = ctx.value(2);
  if (failed(c) || failed(a) || failed(b))
    return failure();
  if (!isBool(*c))
    return ctx.error() << "the condition must be bool, got " << c->getType();
  if (failed(sameElementType(ctx, *a, *b, 2)))
    return failure();
  FailureOr<Value> r = ctx.create<nn::WhereOp>(*c, *a, *b);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// Inference: the identity; the mask, if requested, is all true (all ones
/// of the input's type before opset 10).
LogicalResult distopt::onnximport::dropoutOp(ImportContext &ctx) {
  if (ctx.opset >= 12 && ctx.hasInput(2)) {
    FailureOr<const Known *> training =
        ctx.requireKnown(2, "training_mode");
    if (failed(training))
      return failure();
    if ((*training)->numElements() != 1 || (*training)->at(0) != 0)
      return ctx.error() << "training-mode dropout is not supported; distopt "
                            "compiles inference graphs";
  }
  if (failed(identityOp(ctx)))
    return failure();
  if (ctx.wantsOutput(1)) {
    RankedTensorType t = ctx.type(0);
    Type et = ctx.opset >= 10 ? ctx.b.getI1Type() : t.getElementType();
    auto type = t.clone(et);
    Attribute one = isa<FloatType>(et) ? Attribute(FloatAttr::get(et, 1.0))
                                       : Attribute(IntegerAttr::get(et, 1));
    if (et.isInteger(1))
      one = ctx.b.getBoolAttr(true);
    ctx.setOutput(1, nn::ConstantOp::create(ctx.b, ctx.loc, type,
                                            DenseElementsAttr::get(type, one)));
  }
  return success();
}

/// Softplus = log(exp(x) + 1).
LogicalResult distopt::onnximport::softplusOp(ImportContext &ctx) {
  FailureOr<Value> x = floatInput(ctx, 0);
  if (failed(x))
    return failure();
  Type et = cast<RankedTensorType>(x->getType()).getElementType();
  FailureOr<Value> e = ctx.create<nn::ExpOp>(*x);
  if (failed(e))
    return failure();
  FailureOr<Value> s = ctx.create<nn::AddOp>(*e, ctx.scalar(1.0, et));
  if (failed(s))
    return failure();
  FailureOr<Value> r = ctx.create<nn::LogOp>(*s);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// HardSigmoid = clip(alpha * x + beta, 0, 1).
LogicalResult distopt::onnximport::hardSigmoidOp(ImportContext &ctx) {
  FailureOr<Value> x = floatInput(ctx, 0);
  if (failed(x))
    return failure();
  Type et = cast<RankedTensorType>(x->getType()).getElementType();
  FailureOr<Value> m = ctx.create<nn::MulOp>(
      *x, ctx.scalar(ctx.attrFloat("alpha", 0.2), et));
  if (failed(m))
    return failure();
  FailureOr<Value> y =
      ctx.create<nn::AddOp>(*m, ctx.scalar(ctx.attrFloat("beta", 0.5), et));
  if (failed(y))
    return failure();
  FailureOr<Value> r = ctx.create<nn::ClipOp>(
      *y, ctx.b.getF64FloatAttr(0.0), ctx.b.getF64FloatAttr(1.0));
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// Elu = x > 0 ? x : alpha * (exp(x) - 1).
LogicalResult distopt::onnximport::eluOp(ImportContext &ctx) {
  FailureOr<Value> x = floatInput(ctx, 0);
  if (failed(x))
    return failure();
  Type et = cast<RankedTensorType>(x->getType()).getElementType();
  FailureOr<Value> e = ctx.create<nn::ExpOp>(*x);
  if (failed(e))
    return failure();
  FailureOr<Value> em1 = ctx.create<nn::SubOp>(*e, ctx.scalar(1.0, et));
  if (failed(em1))
    return failure();
  FailureOr<Value> neg = ctx.create<nn::MulOp>(
      ctx.scalar(ctx.attrFloat("alpha", 1.0), et), *em1);
  if (failed(neg))
    return failure();
  FailureOr<Value> pos = ctx.create<nn::GreaterOp>(*x, ctx.scalar(0.0, et));
  if (failed(pos))
    return failure();
  FailureOr<Value> r = ctx.create<nn::WhereOp>(*pos, *x, *neg);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// HardSwish = x * clip(x / 6 + 1 / 2, 0, 1).
LogicalResult distopt::onnximport::hardSwishOp(ImportContext &ctx) {
  FailureOr<Value> x = floatInput(ctx, 0);
  if (failed(x))
    return failure();
  Type et = cast<RankedTensorType>(x->getType()).getElementType();
  FailureOr<Value> m = ctx.create<nn::MulOp>(*x, ctx.scalar(1.0 / 6.0, et));
  if (failed(m))
    return failure();
  FailureOr<Value> y = ctx.create<nn::AddOp>(*m, ctx.scalar(0.5, et));
  if (failed(y))
    return failure();
  FailureOr<Value> c = ctx.create<nn::ClipOp>(*y, ctx.b.getF64FloatAttr(0.0),
                                              ctx.b.getF64FloatAttr(1.0));
  if (failed(c))
    return failure();
  FailureOr<Value> r = ctx.create<nn::MulOp>(*x, *c);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// PRelu = x < 0 ? slope * x : x (slope broadcasts to x).
LogicalResult distopt::onnximport::preluOp(ImportContext &ctx) {
  FailureOr<Value> x = floatInput(ctx, 0);
  if (failed(x))
    return failure();
  FailureOr<Value> slope = ctx.value(1);
  if (failed(slope) || failed(sameElementType(ctx, *x, *slope)))
    return failure();
  auto tx = cast<RankedTensorType>(x->getType());
  auto ts = cast<RankedTensorType>(slope->getType());
  auto shape = broadcast(tx.getShape(), ts.getShape());
  if (!shape || ArrayRef<int64_t>(*shape) != tx.getShape())
    return ctx.error() << "slope " << ts << " does not broadcast to " << tx;
  FailureOr<Value> neg =
      ctx.create<nn::LessOp>(*x, ctx.scalar(0.0, tx.getElementType()));
  if (failed(neg))
    return failure();
  FailureOr<Value> scaled = ctx.create<nn::MulOp>(*x, *slope);
  if (failed(scaled))
    return failure();
  FailureOr<Value> r = ctx.create<nn::WhereOp>(*neg, *scaled, *x);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}
