//===- NNGradients.cpp - gradient rules of nn ops ---------------*- C++ -*-===//
//
// Each differentiable nn op emits the vector-Jacobian product of its
// operands as nn ops (GradientOpInterface). The formulas are PyTorch's
// autograd formulas for the same functions, so a trained model matches
// torch step for step; every rule is checked against finite differences in
// test/unit/training.
//
//===----------------------------------------------------------------------===//
#include "distopt/Dialect/NN/IR/EinsumEquation.h"
#include "distopt/Dialect/NN/IR/GradientBuilder.h"
#include "distopt/Dialect/NN/IR/Roll.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace distopt::nn;

#include "distopt/Dialect/NN/IR/GradientOpInterface.cpp.inc"

//===----------------------------------------------------------------------===//
// GradientBuilder
//===----------------------------------------------------------------------===//

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static Type elementOf(Value v) { return typeOf(v).getElementType(); }

Value GradientBuilder::splat(double value, RankedTensorType type) {
  Type et = type.getElementType();
  Attribute a =
      isa<FloatType>(et)
          ? Attribute(FloatAttr::get(et, value))
          : Attribute(IntegerAttr::get(et, static_cast<int64_t>(value)));
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, a));
}

Value GradientBuilder::scalar(double value, Type elementType) {
  return splat(value, RankedTensorType::get({}, elementType));
}

Value GradientBuilder::zerosLike(Value v) { return splat(0.0, typeOf(v)); }

Value GradientBuilder::reshape(Value v, RankedTensorType type) {
  if (v.getType() == type)
    return v;
  return ReshapeOp::create(b, loc, type, v);
}

Value GradientBuilder::reduceSum(Value v, ArrayRef<int64_t> axes,
                                 bool keepdims) {
  if (axes.empty())
    return v;
  return ReduceSumOp::create(b, loc, v, b.getDenseI64ArrayAttr(axes),
                             keepdims ? b.getUnitAttr() : UnitAttr());
}

Value GradientBuilder::reduceMean(Value v, ArrayRef<int64_t> axes,
                                  bool keepdims) {
  if (axes.empty())
    return v;
  return ReduceMeanOp::create(b, loc, v, b.getDenseI64ArrayAttr(axes),
                              keepdims ? b.getUnitAttr() : UnitAttr());
}

Value GradientBuilder::unbroadcast(Value grad, RankedTensorType target) {
  RankedTensorType g = typeOf(grad);
  if (g.getShape() == target.getShape())
    return castLike(grad, target.getElementType());
  int64_t lead = g.getRank() - target.getRank();
  SmallVector<int64_t> axes;
  // Extents of 1 need no sum (a reshape drops them): no copy of the data.
  for (int64_t d = 0; d < g.getRank(); ++d)
    if (g.getDimSize(d) != 1 && (d < lead || target.getDimSize(d - lead) == 1))
      axes.push_back(d);
  Value summed = reduceSum(grad, axes, /*keepdims=*/true);
  return reshape(castLike(summed, target.getElementType()),
                 target.clone(target.getElementType()));
}

Value GradientBuilder::expand(Value v, RankedTensorType type) {
  if (v.getType() == type)
    return v;
  RankedTensorType t = typeOf(v);
  // A rank-lifted reshape first, so expand only grows extents of 1.
  if (t.getRank() < type.getRank()) {
    SmallVector<int64_t> shape(type.getRank() - t.getRank(), 1);
    llvm::append_range(shape, t.getShape());
    v = reshape(v, t.clone(shape));
  }
  if (typeOf(v).getShape() == type.getShape())
    return v;
  return ExpandOp::create(b, loc, type.clone(elementOf(v)), v);
}

Value GradientBuilder::castLike(Value v, Type elementType) {
  if (elementOf(v) == elementType)
    return v;
  return CastOp::create(b, loc, typeOf(v).clone(elementType), v);
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  dx[0] = g.unbroadcast(dy[0], getLhs().getType());
  dx[1] = g.unbroadcast(dy[0], getRhs().getType());
  return success();
}

LogicalResult SubOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  dx[0] = g.unbroadcast(dy[0], getLhs().getType());
  dx[1] = g.unbroadcast(g.create<NegOp>(dy[0]), getRhs().getType());
  return success();
}

LogicalResult MulOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  dx[0] = g.unbroadcast(g.create<MulOp>(dy[0], getRhs()), getLhs().getType());
  dx[1] = g.unbroadcast(g.create<MulOp>(dy[0], getLhs()), getRhs().getType());
  return success();
}

LogicalResult DivOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  // d(l/r) = dy / r and -dy * (l/r) / r.
  Value dl = g.create<DivOp>(dy[0], getRhs());
  dx[0] = g.unbroadcast(dl, getLhs().getType());
  Value dr = g.create<NegOp>(
      g.create<DivOp>(g.create<MulOp>(dy[0], getResult()), getRhs()));
  dx[1] = g.unbroadcast(dr, getRhs().getType());
  return success();
}

LogicalResult PowOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  // d(l^r)/dl = r * l^(r-1); d/dr = l^r * log(l), 0 where l == 0 (torch).
  Type et = elementOf(getLhs());
  Value rm1 = g.create<SubOp>(getRhs(), g.scalar(1.0, elementOf(getRhs())));
  Value dl =
      g.create<MulOp>(dy[0], g.create<MulOp>(g.castLike(getRhs(), et),
                                             g.create<PowOp>(getLhs(), rm1)));
  dx[0] = g.unbroadcast(dl, getLhs().getType());
  if (isa<FloatType>(elementOf(getRhs()))) {
    Value zero = g.scalar(0.0, et);
    Value isZero = g.create<EqualOp>(getLhs(), zero);
    Value logl =
        g.create<LogOp>(g.create<WhereOp>(isZero, g.scalar(1.0, et), getLhs()));
    Value dr = g.create<MulOp>(dy[0], g.create<MulOp>(getResult(), logl));
    dx[1] =
        g.unbroadcast(g.create<WhereOp>(isZero, zero, dr), getRhs().getType());
  }
  return success();
}

/// max/min: the gradient goes to the operand that was chosen; ties share it.
static void chooserGradient(GradientBuilder &g, Value lhs, Value rhs, Value dy,
                            bool isMax, SmallVectorImpl<Value> &dx) {
  Type et = elementOf(dy);
  Value wins =
      isMax ? g.create<GreaterOp>(lhs, rhs) : g.create<LessOp>(lhs, rhs);
  Value tie = g.create<EqualOp>(lhs, rhs);
  Value zero = g.scalar(0.0, et);
  Value half = g.create<MulOp>(dy, g.scalar(0.5, et));
  Value dl = g.create<WhereOp>(wins, dy, g.create<WhereOp>(tie, half, zero));
  Value dr = g.create<WhereOp>(wins, zero, g.create<WhereOp>(tie, half, dy));
  dx[0] = g.unbroadcast(dl, typeOf(lhs));
  dx[1] = g.unbroadcast(dr, typeOf(rhs));
}

LogicalResult MaxOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  chooserGradient(g, getLhs(), getRhs(), dy[0], /*isMax=*/true, dx);
  return success();
}

LogicalResult MinOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  chooserGradient(g, getLhs(), getRhs(), dy[0], /*isMax=*/false, dx);
  return success();
}

LogicalResult WhereOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                     SmallVectorImpl<Value> &dx) {
  Value zero = g.scalar(0.0, elementOf(dy[0]));
  dx[1] = g.unbroadcast(g.create<WhereOp>(getCondition(), dy[0], zero),
                        getLhs().getType());
  dx[2] = g.unbroadcast(g.create<WhereOp>(getCondition(), zero, dy[0]),
                        getRhs().getType());
  return success();
}

LogicalResult NegOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  dx[0] = g.create<NegOp>(dy[0]);
  return success();
}

LogicalResult AbsOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  dx[0] = g.create<MulOp>(dy[0], g.create<SignOp>(getInput()));
  return success();
}

LogicalResult ExpOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  dx[0] = g.create<MulOp>(dy[0], getResult());
  return success();
}

LogicalResult LogOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  dx[0] = g.create<DivOp>(dy[0], getInput());
  return success();
}

LogicalResult SqrtOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                    SmallVectorImpl<Value> &dx) {
  // dy / (2 sqrt(x)), as torch.
  Value twice = g.create<MulOp>(getResult(), g.scalar(2.0, elementOf(dy[0])));
  dx[0] = g.create<DivOp>(dy[0], twice);
  return success();
}

LogicalResult ReciprocalOp::buildGradient(GradientBuilder &g,
                                          ArrayRef<Value> dy,
                                          SmallVectorImpl<Value> &dx) {
  // -dy * y * y
  Value yy = g.create<MulOp>(getResult(), getResult());
  dx[0] = g.create<NegOp>(g.create<MulOp>(dy[0], yy));
  return success();
}

LogicalResult TanhOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                    SmallVectorImpl<Value> &dx) {
  Type et = elementOf(dy[0]);
  Value yy = g.create<MulOp>(getResult(), getResult());
  dx[0] = g.create<MulOp>(dy[0], g.create<SubOp>(g.scalar(1.0, et), yy));
  return success();
}

LogicalResult SigmoidOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                       SmallVectorImpl<Value> &dx) {
  Type et = elementOf(dy[0]);
  Value oneMinus = g.create<SubOp>(g.scalar(1.0, et), getResult());
  dx[0] = g.create<MulOp>(dy[0], g.create<MulOp>(getResult(), oneMinus));
  return success();
}

LogicalResult ErfOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  // 2/sqrt(pi) * exp(-x^2)
  Type et = elementOf(dy[0]);
  Value x2 = g.create<MulOp>(getInput(), getInput());
  Value e = g.create<ExpOp>(g.create<NegOp>(x2));
  dx[0] = g.create<MulOp>(
      dy[0], g.create<MulOp>(e, g.scalar(2.0 / std::sqrt(M_PI), et)));
  return success();
}

LogicalResult ReluOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                    SmallVectorImpl<Value> &dx) {
  Type et = elementOf(dy[0]);
  Value pos = g.create<GreaterOp>(getResult(), g.scalar(0.0, et));
  dx[0] = g.create<WhereOp>(pos, dy[0], g.scalar(0.0, et));
  return success();
}

LogicalResult SinOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  dx[0] = g.create<MulOp>(dy[0], g.create<CosOp>(getInput()));
  return success();
}

LogicalResult CosOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  dx[0] = g.create<NegOp>(g.create<MulOp>(dy[0], g.create<SinOp>(getInput())));
  return success();
}

/// Piecewise-constant functions: zero gradient almost everywhere (torch).
static LogicalResult zeroGradient(GradientBuilder &g, Value input,
                                  SmallVectorImpl<Value> &dx) {
  dx[0] = g.zerosLike(input);
  return success();
}

LogicalResult FloorOp::buildGradient(GradientBuilder &g, ArrayRef<Value>,
                                     SmallVectorImpl<Value> &dx) {
  return zeroGradient(g, getInput(), dx);
}
LogicalResult CeilOp::buildGradient(GradientBuilder &g, ArrayRef<Value>,
                                    SmallVectorImpl<Value> &dx) {
  return zeroGradient(g, getInput(), dx);
}
LogicalResult RoundOp::buildGradient(GradientBuilder &g, ArrayRef<Value>,
                                     SmallVectorImpl<Value> &dx) {
  return zeroGradient(g, getInput(), dx);
}
LogicalResult SignOp::buildGradient(GradientBuilder &g, ArrayRef<Value>,
                                    SmallVectorImpl<Value> &dx) {
  return zeroGradient(g, getInput(), dx);
}

LogicalResult IdentityOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                        SmallVectorImpl<Value> &dx) {
  dx[0] = dy[0];
  return success();
}

LogicalResult GeluOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                    SmallVectorImpl<Value> &dx) {
  Type et = elementOf(dy[0]);
  Value x = getInput();
  auto c = [&](double v) { return g.scalar(v, et); };
  Value d;
  if (getApproximate() == "tanh") {
    // u = sqrt(2/pi) (x + 0.044715 x^3); gelu = 0.5 x (1 + tanh u)
    double k = std::sqrt(2.0 / M_PI);
    Value x2 = g.create<MulOp>(x, x);
    Value inner = g.create<MulOp>(
        x, g.create<AddOp>(c(1.0), g.create<MulOp>(x2, c(0.044715))));
    Value t = g.create<TanhOp>(g.create<MulOp>(inner, c(k)));
    Value du = g.create<MulOp>(
        c(k), g.create<AddOp>(c(1.0), g.create<MulOp>(x2, c(3 * 0.044715))));
    Value sech2 = g.create<SubOp>(c(1.0), g.create<MulOp>(t, t));
    Value left = g.create<MulOp>(c(0.5), g.create<AddOp>(c(1.0), t));
    Value right =
        g.create<MulOp>(g.create<MulOp>(c(0.5), x), g.create<MulOp>(sech2, du));
    d = g.create<AddOp>(left, right);
  } else {
    // Phi(x) + x phi(x)
    Value cdf = g.create<MulOp>(
        c(0.5), g.create<AddOp>(c(1.0), g.create<ErfOp>(g.create<MulOp>(
                                            x, c(1.0 / std::sqrt(2.0))))));
    Value pdf = g.create<MulOp>(
        g.create<ExpOp>(g.create<MulOp>(g.create<MulOp>(x, x), c(-0.5))),
        c(1.0 / std::sqrt(2.0 * M_PI)));
    d = g.create<AddOp>(cdf, g.create<MulOp>(x, pdf));
  }
  dx[0] = g.create<MulOp>(dy[0], d);
  return success();
}

LogicalResult LeakyReluOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                         SmallVectorImpl<Value> &dx) {
  Type et = elementOf(dy[0]);
  Value pos = g.create<GreaterOp>(getInput(), g.scalar(0.0, et));
  Value slope =
      g.create<MulOp>(dy[0], g.scalar(getAlpha().convertToDouble(), et));
  dx[0] = g.create<WhereOp>(pos, dy[0], slope);
  return success();
}

LogicalResult ClipOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                    SmallVectorImpl<Value> &dx) {
  // Passes where min <= x <= max (torch's clamp).
  Type et = elementOf(dy[0]);
  Value keep;
  auto andWith = [&](Value m) { keep = keep ? g.create<AndOp>(keep, m) : m; };
  if (auto lo = getMin())
    andWith(g.create<GreaterEqualOp>(getInput(),
                                     g.scalar(lo->convertToDouble(), et)));
  if (auto hi = getMax())
    andWith(
        g.create<LessEqualOp>(getInput(), g.scalar(hi->convertToDouble(), et)));
  dx[0] = keep ? g.create<WhereOp>(keep, dy[0], g.scalar(0.0, et)) : dy[0];
  return success();
}

LogicalResult CastOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                    SmallVectorImpl<Value> &dx) {
  // Only float-to-float casts carry a gradient.
  if (isa<FloatType>(elementOf(getInput())))
    dx[0] = g.castLike(dy[0], elementOf(getInput()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalisation
//===----------------------------------------------------------------------===//

/// The result gradient of a reduction over `axes`, broadcast back to the
/// input's shape.
static Value expandReduced(GradientBuilder &g, Value dy, ArrayRef<int64_t> axes,
                           bool keepdims, RankedTensorType input) {
  if (!keepdims) {
    SmallVector<int64_t> shape(input.getShape());
    for (int64_t a : axes)
      shape[a] = 1;
    dy = g.reshape(dy, typeOf(dy).clone(shape));
  }
  return g.expand(dy, input.clone(elementOf(dy)));
}

static int64_t reducedCount(RankedTensorType t, ArrayRef<int64_t> axes) {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= t.getDimSize(a);
  return n;
}

LogicalResult ReduceSumOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                         SmallVectorImpl<Value> &dx) {
  dx[0] =
      expandReduced(g, dy[0], getAxes(), getKeepdims(), getInput().getType());
  return success();
}

LogicalResult CumSumOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                      SmallVectorImpl<Value> &dx) {
  // x[i] reaches every y[j] with j >= i (j > i when exclusive), so dx[i]
  // sums dy over those: the running sum the other way round.
  dx[0] = g.create<CumSumOp>(
      dy[0], getAxisAttr(), getExclusiveAttr(),
      getReverse() ? UnitAttr() : g.builder().getUnitAttr());
  return success();
}

LogicalResult ReduceMeanOp::buildGradient(GradientBuilder &g,
                                          ArrayRef<Value> dy,
                                          SmallVectorImpl<Value> &dx) {
  Value e =
      expandReduced(g, dy[0], getAxes(), getKeepdims(), getInput().getType());
  double n = static_cast<double>(reducedCount(getInput().getType(), getAxes()));
  dx[0] = g.create<DivOp>(e, g.scalar(n, elementOf(dy[0])));
  return success();
}

/// max/min over axes: the gradient is shared evenly by the elements equal to
/// the extreme (torch's amax/amin).
static LogicalResult extremeGradient(GradientBuilder &g, Value input,
                                     Value result, Value dy,
                                     ArrayRef<int64_t> axes, bool keepdims,
                                     SmallVectorImpl<Value> &dx) {
  RankedTensorType in = typeOf(input);
  Type et = in.getElementType();
  Value y = expandReduced(g, result, axes, keepdims, in);
  Value hit = g.create<EqualOp>(input, y);
  Value ones = g.castLike(hit, et);
  Value count = g.reduceSum(ones, axes, /*keepdims=*/true);
  Value share = g.create<DivOp>(expandReduced(g, dy, axes, keepdims, in),
                                g.expand(count, in));
  dx[0] = g.create<MulOp>(share, ones);
  return success();
}

LogicalResult ReduceMaxOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                         SmallVectorImpl<Value> &dx) {
  return extremeGradient(g, getInput(), getResult(), dy[0], getAxes(),
                         getKeepdims(), dx);
}

LogicalResult ReduceMinOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                         SmallVectorImpl<Value> &dx) {
  return extremeGradient(g, getInput(), getResult(), dy[0], getAxes(),
                         getKeepdims(), dx);
}

LogicalResult SoftmaxOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                       SmallVectorImpl<Value> &dx) {
  // y * (dy - sum(dy * y))
  int64_t axis = getAxis();
  Value dyy = g.create<MulOp>(dy[0], getResult());
  Value s = g.reduceSum(dyy, {axis}, /*keepdims=*/true);
  dx[0] = g.create<MulOp>(getResult(), g.create<SubOp>(dy[0], s));
  return success();
}

LogicalResult LogSoftmaxOp::buildGradient(GradientBuilder &g,
                                          ArrayRef<Value> dy,
                                          SmallVectorImpl<Value> &dx) {
  // dy - exp(y) * sum(dy)
  int64_t axis = getAxis();
  Value s = g.reduceSum(dy[0], {axis}, /*keepdims=*/true);
  dx[0] =
      g.create<SubOp>(dy[0], g.create<MulOp>(g.create<ExpOp>(getResult()), s));
  return success();
}

LogicalResult LayerNormOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                         SmallVectorImpl<Value> &dx) {
  // Normalised over dimensions axis..rank-1: x^ = (x - mu) * rstd,
  // dx = rstd * (dx^ - mean(dx^) - x^ * mean(dx^ * x^)), dx^ = dy * scale.
  RankedTensorType in = getInput().getType();
  Type et = in.getElementType();
  SmallVector<int64_t> axes;
  for (int64_t d = getAxis(); d < in.getRank(); ++d)
    axes.push_back(d);
  Value x = getInput();
  Value mu = g.reduceMean(x, axes, /*keepdims=*/true);
  Value centred = g.create<SubOp>(x, mu);
  Value var = g.reduceMean(g.create<MulOp>(centred, centred), axes, true);
  Value rstd = g.create<ReciprocalOp>(g.create<SqrtOp>(
      g.create<AddOp>(var, g.scalar(getEpsilon().convertToDouble(), et))));
  Value xhat = g.create<MulOp>(centred, rstd);
  Value dxhat = g.create<MulOp>(dy[0], getScale());
  Value m1 = g.reduceMean(dxhat, axes, true);
  Value m2 = g.reduceMean(g.create<MulOp>(dxhat, xhat), axes, true);
  dx[0] = g.create<MulOp>(rstd, g.create<SubOp>(g.create<SubOp>(dxhat, m1),
                                                g.create<MulOp>(xhat, m2)));
  dx[1] = g.unbroadcast(g.create<MulOp>(dy[0], xhat), getScale().getType());
  if (getBias())
    dx[2] = g.unbroadcast(dy[0], getBias().getType());
  return success();
}

LogicalResult BatchNormOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                         SmallVectorImpl<Value> &dx) {
  // Inference mode: y = (x - mean) * rstd * scale + bias per channel (dim 1).
  RankedTensorType in = getInput().getType();
  Type et = in.getElementType();
  SmallVector<int64_t> bshape(in.getRank(), 1);
  bshape[1] = in.getDimSize(1);
  auto chan = [&](Value v) { return g.reshape(v, typeOf(v).clone(bshape)); };
  Value rstd = g.create<ReciprocalOp>(g.create<SqrtOp>(g.create<AddOp>(
      getVariance(), g.scalar(getEpsilon().convertToDouble(), et))));
  Value centred = g.create<SubOp>(getInput(), chan(getMean()));
  Value xhat = g.create<MulOp>(centred, chan(rstd));
  Value scaleRstd = g.create<MulOp>(getScale(), rstd);
  dx[0] = g.create<MulOp>(dy[0], chan(scaleRstd));
  SmallVector<int64_t> others;
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (d != 1)
      others.push_back(d);
  auto perChannel = [&](Value v, Value like) {
    return g.reshape(g.reduceSum(v, others, /*keepdims=*/false), typeOf(like));
  };
  dx[1] = perChannel(g.create<MulOp>(dy[0], xhat), getScale());
  dx[2] = perChannel(dy[0], getBias());
  // Trainable statistics (rare): d/dmean = -sum(dy) * scale * rstd,
  // d/dvar = -0.5 * sum(dy * (x - mean)) * scale * rstd^3.
  Value sdy = perChannel(dy[0], getMean());
  dx[3] = g.create<NegOp>(g.create<MulOp>(sdy, scaleRstd));
  Value sdyc = perChannel(g.create<MulOp>(dy[0], centred), getVariance());
  Value r3 = g.create<MulOp>(rstd, g.create<MulOp>(rstd, rstd));
  dx[4] =
      g.create<MulOp>(g.create<MulOp>(sdyc, g.create<MulOp>(getScale(), r3)),
                      g.scalar(-0.5, et));
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and data movement
//===----------------------------------------------------------------------===//

/// `v` transposed by `perm`; a transpose of a transpose is one transpose,
/// or none when they cancel (the gradient of `x @ transpose(w)` w.r.t. x
/// reads w itself, not a copy of a copy).
static Value transposed(GradientBuilder &g, Value v, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> composed(perm);
  if (auto inner = v.getDefiningOp<TransposeOp>()) {
    for (int64_t &p : composed)
      p = inner.getPerm()[p];
    v = inner.getInput();
  }
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(composed))
    identity = identity && static_cast<int64_t>(i) == p;
  if (identity)
    return v;
  return g.create<TransposeOp>(v, g.builder().getDenseI64ArrayAttr(composed));
}

/// `v` with its last two dimensions swapped.
static Value swapLastTwo(GradientBuilder &g, Value v) {
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return transposed(g, v, perm);
}

/// The gradient of a matrix `b` [k, n] read by `a` [..., m, k] · b, given
/// the result's gradient `d` [..., m, n]: the sum over every row of a and d,
/// an einsum that keeps each of a's leading dimensions as its own letter
/// ("xyk,xyn->kn"). A sequence split of a and d then stays split (each rank
/// sums its rows into a partial gradient) instead of being gathered, which a
/// flattened [rows, k]^T [rows, n] product would need (a merged dimension
/// stays split only through its major factor). Where nothing splits a row
/// dimension the einsum is lowered to that flattened product after
/// partitioning (EinsumOp's canonicalization), so the kernels are the same.
static Value rowSummedProduct(GradientBuilder &g, Value a, Value d) {
  int64_t rows = typeOf(a).getRank() - 1;
  std::string rowLetters;
  for (int64_t i = 0; i < rows; ++i)
    rowLetters += static_cast<char>('a' + i);
  // k and n come after the row letters (rank is at most 24 here).
  char k = static_cast<char>('a' + rows), n = static_cast<char>(k + 1);
  std::string equation =
      rowLetters + k + "," + rowLetters + n + "->" + std::string{k, n};
  return g.create<EinsumOp>(g.builder().getStringAttr(equation),
                            ValueRange{a, d});
}

LogicalResult MatMulOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                      SmallVectorImpl<Value> &dx) {
  // Promote 1-D operands as numpy does, so both are at least 2-D and the
  // result keeps both matrix dimensions.
  RankedTensorType lt = getLhs().getType(), rt = getRhs().getType();
  Value a = getLhs(), b = getRhs(), d = dy[0];
  RankedTensorType dt = typeOf(d);
  if (lt.getRank() == 1) {
    a = g.reshape(a, lt.clone({1, lt.getDimSize(0)}));
    SmallVector<int64_t> s(dt.getShape());
    s.insert(s.end() - (rt.getRank() == 1 ? 0 : 1), 1);
    d = g.reshape(d, dt.clone(s));
    dt = typeOf(d);
  }
  if (rt.getRank() == 1) {
    b = g.reshape(b, rt.clone({rt.getDimSize(0), 1}));
    SmallVector<int64_t> s(dt.getShape());
    s.push_back(1);
    d = g.reshape(d, dt.clone(s));
  }
  Value da = g.create<MatMulOp>(d, swapLastTwo(g, b));
  // A batched activation times a matrix (a linear layer): the weight's
  // gradient is one product summed over all rows, instead of a batch of
  // products summed afterwards.
  Value db;
  if (typeOf(b).getRank() == 2 && typeOf(a).getRank() > 2 &&
      typeOf(a).getRank() <= 24) {
    db = rowSummedProduct(g, a, d);
  } else {
    db = g.create<MatMulOp>(swapLastTwo(g, a), d);
  }
  // Sum over broadcast batch dimensions at the promoted rank, then drop the
  // dimension a 1-D operand was given.
  dx[0] = g.reshape(g.unbroadcast(da, typeOf(a)), lt);
  dx[1] = g.reshape(g.unbroadcast(db, typeOf(b)), rt);
  return success();
}

LogicalResult TransposeOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                         SmallVectorImpl<Value> &dx) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  // The gradient of a transposed weight is a product of activations
  // (a^T d); (a^T d)^T = d^T a builds the weight's gradient in its own
  // layout from two small operands instead of transposing a weight-sized
  // result. The unused product is erased with the other dead ops.
  auto mm = dy[0].getDefiningOp<MatMulOp>();
  if (perm.size() == 2 && perm[0] == 1 && mm && dy[0].use_empty() &&
      mm.getLhs().getType().getRank() == 2 &&
      mm.getRhs().getType().getRank() == 2) {
    dx[0] = g.create<MatMulOp>(swapLastTwo(g, mm.getRhs()),
                               swapLastTwo(g, mm.getLhs()));
    return success();
  }
  // The same for a weight gradient summed over rows (rowSummedProduct):
  // the einsum names its result's letters in the weight's own order.
  auto es = dy[0].getDefiningOp<EinsumOp>();
  if (perm.size() == 2 && perm[0] == 1 && es && dy[0].use_empty() &&
      es.getInputs().size() == 2) {
    std::string error;
    auto eq = EinsumEquation::parse(es.getEquation(), error);
    if (eq && eq->output.size() == 2) {
      std::swap(eq->output[0], eq->output[1]);
      dx[0] = g.create<EinsumOp>(g.builder().getStringAttr(eq->str()),
                                 es.getInputs());
      return success();
    }
  }
  dx[0] = transposed(g, dy[0], inverse);
  return success();
}

LogicalResult ReshapeOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                       SmallVectorImpl<Value> &dx) {
  dx[0] = g.reshape(dy[0], getInput().getType());
  return success();
}

LogicalResult ExpandOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                      SmallVectorImpl<Value> &dx) {
  dx[0] = g.unbroadcast(dy[0], getInput().getType());
  return success();
}

LogicalResult ConcatOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                      SmallVectorImpl<Value> &dx) {
  RankedTensorType out = getResult().getType();
  int64_t axis = getAxis(), start = 0;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    RankedTensorType t = typeOf(v);
    SmallVector<int64_t> starts(out.getRank(), 0), ends(out.getShape()),
        steps(out.getRank(), 1);
    starts[axis] = start;
    ends[axis] = start + t.getDimSize(axis);
    start = ends[axis];
    OpBuilder &b = g.builder();
    dx[i] = g.create<SliceOp>(dy[0], b.getDenseI64ArrayAttr(starts),
                              b.getDenseI64ArrayAttr(ends),
                              b.getDenseI64ArrayAttr(steps));
  }
  return success();
}

LogicalResult SliceOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                     SmallVectorImpl<Value> &dx) {
  // A unit-step slice: its gradient is the result gradient padded back
  // with zeros to the input's extent.
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  int64_t rank = in.getRank();
  SmallVector<int64_t> pads(2 * rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (getSteps()[d] != 1)
      return emitOpError("with step ")
             << getSteps()[d] << " in dimension " << d
             << " has no gradient rule; only unit-step slices train";
    pads[d] = getStarts()[d];
    pads[d + rank] = in.getDimSize(d) - getStarts()[d] - out.getDimSize(d);
  }
  dx[0] = g.create<PadOp>(dy[0], g.builder().getDenseI64ArrayAttr(pads),
                          g.builder().getStringAttr("constant"),
                          g.builder().getF64FloatAttr(0.0));
  return success();
}

LogicalResult GatherOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                      SmallVectorImpl<Value> &dx) {
  // A roll's gradient is the opposite roll (no scatter: each row was read
  // once).
  if (std::optional<int64_t> shift = rollShift(*this)) {
    int64_t n = getData().getType().getDimSize(getAxis());
    dx[0] = createRoll(g.builder(), g.location(), dy[0], getAxis(),
                       (n - *shift) % n);
    return success();
  }
  // Every looked-up row's gradient is added back into its row (an
  // embedding's gradient).
  dx[0] = g.create<ScatterAddOp>(g.zerosLike(getData()), getIndices(), dy[0],
                                 getAxisAttr());
  return success();
}

LogicalResult GatherElementsOp::buildGradient(GradientBuilder &g,
                                              ArrayRef<Value> dy,
                                              SmallVectorImpl<Value> &dx) {
  // Each picked element's gradient goes back to where it was picked from;
  // an element picked twice receives both.
  dx[0] = g.create<ScatterElementsOp>(g.zerosLike(getData()), getIndices(),
                                      dy[0], getAxisAttr(),
                                      g.builder().getStringAttr("add"));
  return success();
}

LogicalResult ScatterElementsOp::buildGradient(GradientBuilder &g,
                                               ArrayRef<Value> dy,
                                               SmallVectorImpl<Value> &dx) {
  StringRef r = getReduction();
  if (r != "none" && r != "add")
    return emitOpError("with reduction '")
           << r << "' has no gradient rule; only none and add train";
  // Every update lands in one result element: its gradient is read back
  // from there.
  dx[2] = g.create<GatherElementsOp>(dy[0], getIndices(), getAxisAttr());
  // data passes through where nothing replaced it (none), everywhere (add).
  dx[0] = r == "add" ? dy[0]
                     : g.create<ScatterElementsOp>(
                           dy[0], getIndices(), g.zerosLike(getUpdates()),
                           getAxisAttr(), g.builder().getStringAttr("none"));
  return success();
}

LogicalResult GatherNDOp::buildGradient(GradientBuilder &g,
                                        ArrayRef<Value> dy,
                                        SmallVectorImpl<Value> &dx) {
  if (getBatchDims() != 0)
    return emitOpError("with batch_dims ")
           << getBatchDims() << " has no gradient rule; only batch_dims 0 "
           << "trains";
  // Each picked slice's gradient is added back where it was picked from; a
  // slice picked twice receives both.
  dx[0] = g.create<ScatterNDOp>(g.zerosLike(getData()), getIndices(), dy[0],
                                g.builder().getStringAttr("add"));
  return success();
}

LogicalResult ScatterNDOp::buildGradient(GradientBuilder &g,
                                         ArrayRef<Value> dy,
                                         SmallVectorImpl<Value> &dx) {
  StringRef r = getReduction();
  if (r != "none" && r != "add")
    return emitOpError("with reduction '")
           << r << "' has no gradient rule; only none and add train";
  // Every update lands in one result slice: its gradient is read back from
  // there.
  dx[2] = g.create<GatherNDOp>(dy[0], getIndices(),
                               g.builder().getI64IntegerAttr(0));
  // data passes through where nothing replaced it (none), everywhere (add).
  dx[0] = r == "add" ? dy[0]
                     : g.create<ScatterNDOp>(dy[0], getIndices(),
                                             g.zerosLike(getUpdates()),
                                             g.builder().getStringAttr("none"));
  return success();
}

LogicalResult PadOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                   SmallVectorImpl<Value> &dx) {
  if (getMode() != "constant")
    return emitOpError("in mode '")
           << getMode() << "' has no gradient rule; only constant pads train";
  // The inverse crop: a pad by the negated amounts.
  SmallVector<int64_t> crop;
  for (int64_t p : getPads())
    crop.push_back(-p);
  dx[0] = g.create<PadOp>(dy[0], g.builder().getDenseI64ArrayAttr(crop),
                          g.builder().getStringAttr("constant"),
                          g.builder().getF64FloatAttr(0.0));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                    SmallVectorImpl<Value> &dx) {
  OpBuilder &b = g.builder();
  Location loc = g.location();
  dx[0] = ConvGradInputOp::create(b, loc, getInput().getType(), dy[0],
                                  getWeight(), getStridesAttr(), getPadsAttr(),
                                  getDilationsAttr(), getGroupAttr());
  dx[1] = ConvGradWeightOp::create(b, loc, getWeight().getType(), getInput(),
                                   dy[0], getStridesAttr(), getPadsAttr(),
                                   getDilationsAttr(), getGroupAttr());
  if (getBias()) {
    SmallVector<int64_t> others{0};
    for (int64_t d = 2; d < getInput().getType().getRank(); ++d)
      others.push_back(d);
    dx[2] = g.reduceSum(dy[0], others, /*keepdims=*/false);
  }
  return success();
}

LogicalResult ConvGradInputOp::buildGradient(GradientBuilder &g,
                                             ArrayRef<Value> dy,
                                             SmallVectorImpl<Value> &dx) {
  // This op is the transpose of conv in its input: its adjoint is conv, and
  // its weight gradient pairs dy (as the conv's input) with result_grad.
  OpBuilder &b = g.builder();
  Location loc = g.location();
  dx[0] = ConvOp::create(b, loc, getResultGrad().getType(), dy[0], getWeight(),
                         Value(), getStridesAttr(), getPadsAttr(),
                         getDilationsAttr(), getGroupAttr());
  dx[1] = ConvGradWeightOp::create(b, loc, getWeight().getType(), dy[0],
                                   getResultGrad(), getStridesAttr(),
                                   getPadsAttr(), getDilationsAttr(),
                                   getGroupAttr());
  return success();
}

template <typename GradOp, typename PoolOp>
static LogicalResult poolGradient(GradientBuilder &g, PoolOp op, Value dy,
                                  SmallVectorImpl<Value> &dx) {
  dx[0] = GradOp::create(
      g.builder(), g.location(), op.getInput().getType(), op.getInput(), dy,
      op.getKernelAttr(), op.getStridesAttr(), op.getPadsAttr(),
      op.getDilationsAttr(), op.getCeilModeAttr(), op.getCountIncludePadAttr());
  return success();
}

LogicalResult MaxPoolOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                       SmallVectorImpl<Value> &dx) {
  return poolGradient<MaxPoolGradOp>(g, *this, dy[0], dx);
}

LogicalResult AvgPoolOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                       SmallVectorImpl<Value> &dx) {
  return poolGradient<AvgPoolGradOp>(g, *this, dy[0], dx);
}

/// The spatial dimensions of an [N, C, spatial...] tensor.
static SmallVector<int64_t> spatialAxes(RankedTensorType t) {
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < t.getRank(); ++d)
    axes.push_back(d);
  return axes;
}

LogicalResult GlobalAvgPoolOp::buildGradient(GradientBuilder &g,
                                             ArrayRef<Value> dy,
                                             SmallVectorImpl<Value> &dx) {
  RankedTensorType in = getInput().getType();
  double n = static_cast<double>(reducedCount(in, spatialAxes(in)));
  dx[0] =
      g.create<DivOp>(g.expand(dy[0], in), g.scalar(n, in.getElementType()));
  return success();
}

LogicalResult GlobalMaxPoolOp::buildGradient(GradientBuilder &g,
                                             ArrayRef<Value> dy,
                                             SmallVectorImpl<Value> &dx) {
  return extremeGradient(g, getInput(), getResult(), dy[0],
                         spatialAxes(getInput().getType()), /*keepdims=*/true,
                         dx);
}

LogicalResult EinsumOp::buildGradient(GradientBuilder &g, ArrayRef<Value> dy,
                                      SmallVectorImpl<Value> &dx) {
  std::string error;
  auto eq = EinsumEquation::parse(getEquation(), error);
  if (!eq)
    return emitOpError(error);
  OperandRange inputs = getInputs();
  for (auto [i, term] : llvm::enumerate(eq->inputs)) {
    // The product's derivative by operand i is the product of the others:
    // an einsum of dy and the other operands back to operand i's letters.
    // A letter only operand i has was summed away there, so the gradient is
    // the same along it (broadcast back).
    std::string kept;
    EinsumEquation back;
    back.inputs.push_back(eq->output);
    SmallVector<Value> operands{dy[0]};
    for (auto [j, other] : llvm::enumerate(eq->inputs))
      if (j != i) {
        back.inputs.push_back(other);
        operands.push_back(inputs[j]);
      }
    for (auto [d, c] : llvm::enumerate(term)) {
      if (term.find(c) != d)
        return emitOpError("has no gradient rule for operand ")
               << i << ": letter '" << c << "' repeats in its term '" << term
               << "' (a diagonal)";
      if (llvm::any_of(back.inputs, [c = c](const std::string &t) {
            return t.find(c) != std::string::npos;
          }))
        kept += c;
    }
    back.output = kept;
    Value grad = g.create<EinsumOp>(g.builder().getStringAttr(back.str()),
                                    operands);
    RankedTensorType target = typeOf(inputs[i]);
    if (kept.size() != term.size()) {
      SmallVector<int64_t> withOnes;
      for (auto [d, c] : llvm::enumerate(term))
        withOnes.push_back(kept.find(c) == std::string::npos
                               ? 1
                               : target.getDimSize(d));
      grad = g.expand(g.reshape(grad, target.clone(withOnes)), target);
    }
    dx[i] = grad;
  }
  return success();
}
