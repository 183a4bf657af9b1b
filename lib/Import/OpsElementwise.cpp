//===- OpsElementwise.cpp - ONNX element-wise ops ---------------*- C++ -*-===//
#include "ImportContext.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

template <typename OpT> Value makeBinary(OpChain &c, Value a, Value b) {
  return c.make<OpT>(a, b);
}

using BinaryBuilder = Value (*)(OpChain &, Value, Value);

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

template <typename OpT> Value makeUnary(OpChain &c, Value x) {
  return c.make<OpT>(x);
}

using UnaryBuilder = Value (*)(OpChain &, Value);

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
      .Case("Acos", makeUnary<nn::AcosOp>)
      .Case("Asin", makeUnary<nn::AsinOp>)
      .Case("Atan", makeUnary<nn::AtanOp>)
      .Case("Floor", makeUnary<nn::FloorOp>)
      .Case("Ceil", makeUnary<nn::CeilOp>)
      .Case("Round", makeUnary<nn::RoundOp>)
      .Case("Sign", makeUnary<nn::SignOp>)
      .Default(nullptr);
}

/// Ops defined on floating-point tensors only.
bool floatOnly(StringRef op) {
  return llvm::is_contained(
      {"Exp",         "Log",   "Sqrt",      "Reciprocal", "Tanh",
       "Sigmoid",     "Erf",   "Sin",       "Cos",        "Floor",
       "Ceil",        "Round", "Gelu",      "LeakyRelu",  "Softplus",
       "HardSigmoid", "Elu",   "HardSwish", "PRelu",      "ThresholdedRelu",
       "Acos",        "Asin",  "Atan"},
      op);
}

/// Before opset 7: without `broadcast` the shapes must be equal; with it,
/// the second operand's dimensions line up with the first's from `axis`
/// (default: the trailing ones). Reshapes `b` so numpy broadcasting applies.
LogicalResult legacyBroadcast(ImportContext &ctx, Value a, Value &b) {
  if (ctx.opset >= 7)
    return success();
  auto ta = cast<RankedTensorType>(a.getType());
  auto tb = cast<RankedTensorType>(b.getType());
  if (!ctx.attrInt("broadcast", 0)) {
    if (ta.getShape() != tb.getShape())
      return ctx.error() << "operands " << ta << " and " << tb
                         << " differ in shape and broadcast is not set";
    return success();
  }
  int64_t ra = ta.getRank(), rb = tb.getRank();
  int64_t axis = ctx.attrInt("axis", ra - rb);
  if (axis < 0)
    axis += ra;
  if (rb > ra || axis < 0 || axis + rb > ra)
    return ctx.error() << "cannot broadcast " << tb << " into " << ta
                       << " at axis " << ctx.attrInt("axis", ra - rb);
  std::vector<int64_t> shape(ra, 1);
  for (int64_t d = 0; d < rb; ++d) {
    int64_t e = tb.getDimSize(d);
    if (e != 1 && e != ta.getDimSize(axis + d))
      return ctx.error() << "cannot broadcast " << tb << " into " << ta
                         << " at axis " << axis;
    shape[axis + d] = e;
  }
  FailureOr<Value> r = ctx.reshape(b, shape);
  if (failed(r))
    return failure();
  b = *r;
  return success();
}

/// clip(alpha * x + beta, 0, 1): HardSigmoid, and HardSwish's factor.
Value hardSigmoid(OpChain &c, Value x, double alpha, double beta) {
  Value m = c.make<nn::MulOp>(x, c.scalarLike(alpha, x));
  Value y = c.make<nn::AddOp>(m, c.scalarLike(beta, x));
  return c.make<nn::ClipOp>(y, c.ctx.b.getF64FloatAttr(0.0),
                            c.ctx.b.getF64FloatAttr(1.0));
}

} // namespace

LogicalResult distopt::onnximport::binaryOp(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b) || failed(sameElementType(ctx, *a, *b)) ||
      failed(legacyBroadcast(ctx, *a, *b)))
    return failure();
  bool logic = op == "And" || op == "Or" || op == "Xor";
  if (logic && !isBool(*a))
    return ctx.error() << "needs bool operands, got " << a->getType();
  OpChain c(ctx);
  return c.output(0, binaryBuilder(op)(c, *a, *b));
}

LogicalResult distopt::onnximport::bitShiftOp(ImportContext &ctx) {
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b) || failed(sameElementType(ctx, *a, *b)))
    return failure();
  if (!cast<RankedTensorType>(a->getType()).getElementType().isUnsignedInteger())
    return ctx.error() << "needs unsigned integer operands, got "
                       << a->getType();
  std::string direction = ctx.attrString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return ctx.error() << "direction must be \"LEFT\" or \"RIGHT\", got \""
                       << direction << "\"";
  OpChain c(ctx);
  if (direction == "LEFT")
    return c.output(0, c.make<nn::ShiftLeftOp>(*a, *b));
  return c.output(0, c.make<nn::ShiftRightOp>(*a, *b));
}

LogicalResult distopt::onnximport::powOp(ImportContext &ctx) {
  FailureOr<Value> a = ctx.value(0), b = ctx.value(1);
  if (failed(a) || failed(b) || failed(legacyBroadcast(ctx, *a, *b)))
    return failure();
  OpChain c(ctx);
  return c.output(0, c.make<nn::PowOp>(*a, *b));
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
  OpChain c(ctx);
  return c.output(0, c.make<nn::ModOp>(*a, *b, ctx.b.getBoolAttr(fmod)));
}

/// Max, Min, Sum, Mean: a chain of binary ops (Mean then divides).
LogicalResult distopt::onnximport::variadicOp(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  FailureOr<Value> first = ctx.value(0);
  if (failed(first))
    return failure();
  OpChain c(ctx);
  Value acc = *first;
  // The chain keeps input 0's element type.
  for (unsigned i = 1; i < ctx.numInputs() && !c.failed(); ++i) {
    FailureOr<Value> v = ctx.value(i);
    if (failed(v) || failed(sameElementType(ctx, *first, *v, i)))
      return failure();
    acc = binaryBuilder(op)(c, acc, *v);
  }
  if (op == "Mean" && ctx.numInputs() > 1)
    acc = c.make<nn::DivOp>(acc, c.scalarLike(ctx.numInputs(), acc));
  return c.output(0, acc);
}

LogicalResult distopt::onnximport::unaryOp(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  FailureOr<Value> x = floatOnly(op) ? ctx.floatValue(0) : ctx.value(0);
  if (failed(x))
    return failure();
  if (op == "Not" && !isBool(*x))
    return ctx.error() << "needs a bool input, got " << x->getType();
  OpChain c(ctx);
  return c.output(0, unaryBuilder(op)(c, *x));
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
  FailureOr<Value> x = ctx.floatValue(0);
  if (failed(x))
    return failure();
  std::string approx = ctx.attrString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return ctx.error() << "approximate must be \"none\" or \"tanh\", got \""
                       << approx << "\"";
  OpChain c(ctx);
  return c.output(0, c.make<nn::GeluOp>(*x, ctx.b.getStringAttr(approx)));
}

LogicalResult distopt::onnximport::leakyReluOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.floatValue(0);
  if (failed(x))
    return failure();
  OpChain c(ctx);
  return c.output(0,
                  c.make<nn::LeakyReluOp>(
                      *x, ctx.b.getF64FloatAttr(ctx.attrFloat("alpha", 0.01))));
}

/// Clip: bounds are attributes before opset 11 and optional inputs from 11.
/// Known bounds become attributes; others max/min ops.
LogicalResult distopt::onnximport::clipOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  FloatAttr lo, hi;
  OpChain c(ctx);
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
      result = i == 1 ? c.make<nn::MaxOp>(result, *bound)
                      : c.make<nn::MinOp>(result, *bound);
      // Stop here: the next bound's checks would add errors.
      if (c.failed())
        return failure();
    }
  }
  if (lo || hi)
    result = c.make<nn::ClipOp>(result, lo, hi);
  return c.output(0, result);
}

/// Cast, and CastLike (to the element type of input 1).
LogicalResult distopt::onnximport::castOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  Type et;
  if (ctx.node.op_type() == "CastLike") {
    et = ctx.type(1).getElementType();
  } else {
    int64_t to = ctx.attrInt("to", 0);
    et = elementTypeOfOnnx(ctx.b.getContext(), to);
    if (!et)
      return ctx.error() << "casting to " << dataTypeName(to)
                         << " is not supported";
  }
  auto t = cast<RankedTensorType>(x->getType());
  if (t.getElementType() == et) {
    ctx.setOutput(0, *x);
    return success();
  }
  OpChain c(ctx);
  return c.output(0, c.typed<nn::CastOp>(t.clone(et), *x));
}

LogicalResult distopt::onnximport::whereOp(ImportContext &ctx) {
  FailureOr<Value> c = ctx.value(0), a = ctx.value(1), b = ctx.value(2);
  if (failed(c) || failed(a) || failed(b))
    return failure();
  if (!isBool(*c))
    return ctx.error() << "the condition must be bool, got " << c->getType();
  if (failed(sameElementType(ctx, *a, *b, 2)))
    return failure();
  OpChain chain(ctx);
  return chain.output(0, chain.make<nn::WhereOp>(*c, *a, *b));
}

/// Inference: the identity; the mask, if requested, is all true (all ones
/// of the input's type before opset 10).
LogicalResult distopt::onnximport::dropoutOp(ImportContext &ctx) {
  if (ctx.opset >= 12 && ctx.hasInput(2)) {
    FailureOr<const Known *> training = ctx.requireKnown(2, "training_mode");
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

/// PRelu = x < 0 ? slope * x : x (slope broadcasts to x).
LogicalResult distopt::onnximport::preluOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.floatValue(0);
  if (failed(x))
    return failure();
  FailureOr<Value> slope = ctx.value(1);
  if (failed(slope) || failed(sameElementType(ctx, *x, *slope)))
    return failure();
  auto tx = cast<RankedTensorType>(x->getType());
  auto ts = cast<RankedTensorType>(slope->getType());
  if (ctx.opset < 7 && ts.getRank() == 1 && ts.getNumElements() > 1 &&
      tx.getRank() >= 2 && ts.getDimSize(0) == tx.getDimSize(1)) {
    // PRelu-6: a slope per channel (dimension 1).
    std::vector<int64_t> perChannel(tx.getRank() - 1, 1);
    perChannel[0] = ts.getDimSize(0);
    FailureOr<Value> r = ctx.reshape(*slope, perChannel);
    if (failed(r))
      return failure();
    slope = r;
    ts = cast<RankedTensorType>(slope->getType());
  }
  auto shape = broadcast(tx.getShape(), ts.getShape());
  if (!shape || ArrayRef<int64_t>(*shape) != tx.getShape())
    return ctx.error() << "slope " << ts << " does not broadcast to " << tx;
  OpChain c(ctx);
  Value neg = c.make<nn::LessOp>(*x, c.scalarLike(0.0, *x));
  Value scaled = c.make<nn::MulOp>(*x, *slope);
  return c.output(0, c.make<nn::WhereOp>(neg, scaled, *x));
}

/// Element-wise functions that are short chains of nn ops:
///   Softplus = log(exp(x) + 1), HardSigmoid = clip(alpha * x + beta, 0, 1),
///   HardSwish = x * clip(x / 6 + 1 / 2, 0, 1),
///   Elu = x > 0 ? x : alpha * (exp(x) - 1), ThresholdedRelu = x > alpha ? x :
///   0, Tan = sin / cos, Sinh/Cosh = (exp(x) -/+ exp(-x)) / 2, Asinh = log(x +
///   sqrt(x^2 + 1)), Acosh = log(x + sqrt(x^2 - 1)), Atanh = log((1 + x) / (1 -
///   x)) / 2, Softsign = x / (1 + |x|), Mish = x * tanh(softplus(x)), Selu =
///   gamma * (x > 0 ? x : alpha * (exp(x) - 1)), Celu = max(0, x) + min(0,
///   alpha * (exp(x / alpha) - 1)), Shrink = x < -lambd ? x + bias : x > lambd
///   ? x - bias : 0, IsNaN = !(x == x), IsInf = x == +inf || x == -inf (as
///   enabled).
LogicalResult distopt::onnximport::mathOp(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  FailureOr<Value> in = op == "Shrink" ? ctx.value(0) : ctx.floatValue(0);
  if (failed(in))
    return failure();
  Value x = *in;
  OpChain c(ctx);
  auto k = [&](double v) { return c.scalarLike(v, x); };
  auto exp = [&](Value v) { return c.make<nn::ExpOp>(v); };
  Value r;
  if (op == "Softplus") {
    Value e = exp(x);
    r = c.make<nn::LogOp>(c.make<nn::AddOp>(e, k(1)));
  } else if (op == "HardSigmoid") {
    r = hardSigmoid(c, x, ctx.attrFloat("alpha", 0.2),
                    ctx.attrFloat("beta", 0.5));
  } else if (op == "HardSwish") {
    r = c.make<nn::MulOp>(x, hardSigmoid(c, x, 1.0 / 6.0, 0.5));
  } else if (op == "Elu") {
    Value e = exp(x);
    Value em1 = c.make<nn::SubOp>(e, k(1));
    Value neg = c.make<nn::MulOp>(k(ctx.attrFloat("alpha", 1.0)), em1);
    Value pos = c.make<nn::GreaterOp>(x, k(0));
    r = c.make<nn::WhereOp>(pos, x, neg);
  } else if (op == "ThresholdedRelu") {
    Value above = c.make<nn::GreaterOp>(x, k(ctx.attrFloat("alpha", 1.0)));
    r = c.make<nn::WhereOp>(above, x, k(0));
  } else if (op == "Tan") {
    r = c.make<nn::DivOp>(c.make<nn::SinOp>(x), c.make<nn::CosOp>(x));
  } else if (op == "Sinh" || op == "Cosh") {
    Value e = exp(x), en = exp(c.make<nn::NegOp>(x));
    Value s =
        op == "Sinh" ? c.make<nn::SubOp>(e, en) : c.make<nn::AddOp>(e, en);
    r = c.make<nn::MulOp>(s, k(0.5));
  } else if (op == "Asinh" || op == "Acosh") {
    Value sq = c.make<nn::MulOp>(x, x);
    Value inner = op == "Asinh" ? c.make<nn::AddOp>(sq, k(1))
                                : c.make<nn::SubOp>(sq, k(1));
    r = c.make<nn::LogOp>(c.make<nn::AddOp>(x, c.make<nn::SqrtOp>(inner)));
  } else if (op == "Atanh") {
    Value q = c.make<nn::DivOp>(c.make<nn::AddOp>(k(1), x),
                                c.make<nn::SubOp>(k(1), x));
    r = c.make<nn::MulOp>(c.make<nn::LogOp>(q), k(0.5));
  } else if (op == "Softsign") {
    r = c.make<nn::DivOp>(x, c.make<nn::AddOp>(k(1), c.make<nn::AbsOp>(x)));
  } else if (op == "Mish") {
    Value sp = c.make<nn::LogOp>(c.make<nn::AddOp>(exp(x), k(1)));
    r = c.make<nn::MulOp>(x, c.make<nn::TanhOp>(sp));
  } else if (op == "Selu") {
    double alpha = ctx.attrFloat("alpha", 1.67326319217681884765625);
    double gamma = ctx.attrFloat("gamma", 1.05070102214813232421875);
    Value neg = c.make<nn::MulOp>(k(alpha), c.make<nn::SubOp>(exp(x), k(1)));
    Value sel = c.make<nn::WhereOp>(c.make<nn::GreaterOp>(x, k(0)), x, neg);
    r = c.make<nn::MulOp>(sel, k(gamma));
  } else if (op == "Celu") {
    double alpha = ctx.attrFloat("alpha", 1.0);
    if (alpha == 0)
      return ctx.error() << "alpha must not be zero";
    Value e = c.make<nn::SubOp>(exp(c.make<nn::DivOp>(x, k(alpha))), k(1));
    r = c.make<nn::AddOp>(
        c.make<nn::MaxOp>(x, k(0)),
        c.make<nn::MinOp>(c.make<nn::MulOp>(e, k(alpha)), k(0)));
  } else if (op == "Shrink") {
    double bias = ctx.attrFloat("bias", 0.0),
           lambd = ctx.attrFloat("lambd", 0.5);
    Value low = c.make<nn::LessOp>(x, k(-lambd));
    Value high = c.make<nn::GreaterOp>(x, k(lambd));
    Value inner =
        c.make<nn::WhereOp>(high, c.make<nn::SubOp>(x, k(bias)), k(0));
    r = c.make<nn::WhereOp>(low, c.make<nn::AddOp>(x, k(bias)), inner);
  } else if (op == "IsNaN") {
    r = c.make<nn::NotOp>(c.make<nn::EqualOp>(x, x));
  } else if (op == "IsInf") {
    bool pos = ctx.attrInt("detect_positive", 1) != 0;
    bool neg = ctx.attrInt("detect_negative", 1) != 0;
    Value p = c.make<nn::EqualOp>(x, k(INFINITY));
    Value n = c.make<nn::EqualOp>(x, k(-INFINITY));
    if (pos && neg)
      r = c.make<nn::OrOp>(p, n);
    else if (pos || neg)
      r = pos ? p : n;
    else // nothing to detect: all false (no float exceeds +inf)
      r = c.make<nn::GreaterOp>(x, k(INFINITY));
  } else {
    return ctx.error() << "has no decomposition";
  }
  return c.output(0, r);
}
