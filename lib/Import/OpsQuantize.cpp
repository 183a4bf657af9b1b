//===- OpsQuantize.cpp - ONNX quantization ops ------------------*- C++ -*-===//
//
// Linear quantization as chains of nn ops that compute what ONNX's
// definitions do, step for step:
//   QuantizeLinear   y = saturate(round(x / scale) + zero_point)
//   DequantizeLinear y = (x - zero_point) * scale
// with `round` half to even and `saturate` a clip to the integer type's range
// before the cast. The integer products (MatMulInteger, ConvInteger and the
// QLinear ops) are exact: matmul in i32, convolution in f64 (8-bit products
// summed stay far below 2^53) and then cast to i32.
//
//===----------------------------------------------------------------------===//
#include "ImportContext.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include <limits>

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The quantized integer types: 8 and 16 bits, signed or not.
bool isQuantizedType(Type t) {
  auto it = dyn_cast<IntegerType>(t);
  return it && (it.getWidth() == 8 || it.getWidth() == 16);
}

/// [lowest, highest] of a quantized integer type.
std::pair<double, double> rangeOf(Type t) {
  auto it = cast<IntegerType>(t);
  unsigned w = it.getWidth();
  if (it.isUnsigned())
    return {0.0, double((uint64_t(1) << w) - 1)};
  return {-double(uint64_t(1) << (w - 1)), double((uint64_t(1) << (w - 1)) - 1)};
}

Value castTo(OpChain &c, Value v, Type et) {
  if (c.failed())
    return {};
  RankedTensorType t = typeOf(v);
  if (t.getElementType() == et)
    return v;
  return c.typed<nn::CastOp>(t.clone(et), v);
}

/// A scale or zero point shaped to broadcast against a rank-`rank` tensor:
/// one value (rank 0 or 1-D of one element) as a scalar, a 1-D tensor of
/// `extent` values along `axis`.
FailureOr<Value> alongAxis(ImportContext &ctx, OpChain &c, Value v,
                           StringRef what, int64_t rank, int64_t axis,
                           int64_t extent) {
  RankedTensorType t = typeOf(v);
  if (t.getNumElements() == 1 && t.getRank() <= 1)
    return c.reshape(v, {});
  if (t.getRank() == 1 && t.getDimSize(0) == extent) {
    std::vector<int64_t> shape(rank, 1);
    shape[axis] = extent;
    return c.reshape(v, shape);
  }
  return ctx.error() << what << " must be one value or " << extent
                     << " values (one per index of axis " << axis
                     << "), got " << t;
}

/// saturate(round(y) + zeroPoint) as `qt`: y and zeroPoint float.
Value requantize(OpChain &c, Value y, Value zeroPoint, Type qt) {
  Value r = c.make<nn::RoundOp>(y);
  if (zeroPoint)
    r = c.make<nn::AddOp>(r, zeroPoint);
  auto [lo, hi] = rangeOf(qt);
  r = c.make<nn::ClipOp>(r, c.ctx.b.getF64FloatAttr(lo),
                         c.ctx.b.getF64FloatAttr(hi));
  return castTo(c, r, qt);
}

/// The node's `axis` (default 1) for a rank-`rank` input; only a per-axis
/// `scale` reads it (the default does not fit a 1-D input).
FailureOr<int64_t> quantAxis(ImportContext &ctx, int64_t rank, Value scale) {
  if (typeOf(scale).getNumElements() == 1)
    return 0;
  return ctx.axis(ctx.attrInt("axis", 1), std::max<int64_t>(rank, 1), "axis");
}

/// x - zeroPoint in `et` (zeroPoint may be null: 0), zeroPoint shaped by
/// `shape` first.
Value minusZeroPoint(OpChain &c, Value x, Value zeroPoint, Type et) {
  Value v = castTo(c, x, et);
  if (!zeroPoint || c.failed())
    return v;
  return c.make<nn::SubOp>(v, castTo(c, zeroPoint, et));
}

/// A QuantizeLinear's or DequantizeLinear's scale and zero point (null when
/// absent), shaped to broadcast along the node's axis of `x` (per tensor or
/// per axis); `prefix` names them in errors ("y" or "x").
struct QuantParams {
  Value scale, zeroPoint;
};
FailureOr<QuantParams> alongQuantAxis(ImportContext &ctx, OpChain &c,
                                      RankedTensorType tx, Value scale,
                                      Value zeroPoint, StringRef prefix) {
  FailureOr<int64_t> axis = quantAxis(ctx, tx.getRank(), scale);
  if (failed(axis))
    return failure();
  int64_t rank = tx.getRank(), extent = rank ? tx.getDimSize(*axis) : 1;
  QuantParams p;
  FailureOr<Value> s = alongAxis(ctx, c, scale, (prefix + "_scale").str(),
                                 rank, *axis, extent);
  if (failed(s))
    return failure();
  p.scale = *s;
  if (zeroPoint) {
    FailureOr<Value> z = alongAxis(ctx, c, zeroPoint,
                                   (prefix + "_zero_point").str(), rank,
                                   *axis, extent);
    if (failed(z))
      return failure();
    p.zeroPoint = *z;
  }
  return p;
}

} // namespace

LogicalResult distopt::onnximport::quantizeLinearOp(ImportContext &ctx) {
  if (ctx.attrInt("block_size", 0) != 0)
    return ctx.error() << "blocked quantization (block_size) is not supported";
  FailureOr<Value> x = ctx.value(0), scale = ctx.value(1);
  FailureOr<Value> zp = ctx.optionalValue(2);
  if (failed(x) || failed(scale) || failed(zp))
    return failure();
  RankedTensorType tx = typeOf(*x);
  if (!isa<FloatType>(tx.getElementType()) ||
      typeOf(*scale).getElementType() != tx.getElementType())
    return ctx.error() << "needs a float input and a scale of its type, got "
                       << tx << " and " << scale->getType();
  Type qt = *zp ? typeOf(*zp).getElementType()
                : IntegerType::get(ctx.b.getContext(), 8, IntegerType::Unsigned);
  if (ctx.hasAttr("output_dtype") && !*zp)
    qt = elementTypeOfOnnx(ctx.b.getContext(), ctx.attrInt("output_dtype", 0));
  if (!qt || !isQuantizedType(qt))
    return ctx.error() << "quantizes to 8- and 16-bit integers only, got "
                       << (qt ? qt : Type(ctx.b.getNoneType()));
  OpChain c(ctx);
  FailureOr<QuantParams> q = alongQuantAxis(ctx, c, tx, *scale, *zp, "y");
  if (failed(q))
    return failure();
  Value z = q->zeroPoint ? castTo(c, q->zeroPoint, tx.getElementType())
                         : Value();
  Value y = c.make<nn::DivOp>(*x, q->scale);
  return c.output(0, requantize(c, y, z, qt));
}

LogicalResult distopt::onnximport::dequantizeLinearOp(ImportContext &ctx) {
  if (ctx.attrInt("block_size", 0) != 0)
    return ctx.error() << "blocked quantization (block_size) is not supported";
  FailureOr<Value> x = ctx.value(0), scale = ctx.value(1);
  FailureOr<Value> zp = ctx.optionalValue(2);
  if (failed(x) || failed(scale) || failed(zp))
    return failure();
  RankedTensorType tx = typeOf(*x);
  Type ft = typeOf(*scale).getElementType();
  if (!isa<FloatType>(ft))
    return ctx.error() << "x_scale must be float, got " << scale->getType();
  if (!isQuantizedType(tx.getElementType()) &&
      !tx.getElementType().isSignlessInteger(32))
    return ctx.error() << "dequantizes 8- and 16-bit integers and int32, got "
                       << tx;
  if (*zp && typeOf(*zp).getElementType() != tx.getElementType())
    return ctx.error() << "x_zero_point " << zp->getType()
                       << " must have the type of x " << tx;
  OpChain c(ctx);
  FailureOr<QuantParams> q = alongQuantAxis(ctx, c, tx, *scale, *zp, "x");
  if (failed(q))
    return failure();
  Value centred = minusZeroPoint(c, *x, q->zeroPoint, ft);
  return c.output(0, c.make<nn::MulOp>(centred, q->scale));
}

/// DynamicQuantizeLinear (uint8): the range [min(0, min x), max(0, max x)]
/// mapped onto [0, 255]: scale = (hi - lo) / 255,
/// zero_point = saturate(round(-lo / scale)), then as QuantizeLinear.
LogicalResult distopt::onnximport::dynamicQuantizeLinearOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  RankedTensorType tx = typeOf(*x);
  if (!tx.getElementType().isF32())
    return ctx.error() << "needs a float input, got " << tx;
  std::vector<int64_t> all(tx.getRank());
  for (int64_t d = 0; d < tx.getRank(); ++d)
    all[d] = d;
  auto axes = ctx.b.getDenseI64ArrayAttr(all);
  UnitAttr noKeep;
  Type u8 = IntegerType::get(ctx.b.getContext(), 8, IntegerType::Unsigned);
  OpChain c(ctx);
  Value zero = c.scalarLike(0, *x);
  Value lo = c.make<nn::MinOp>(c.make<nn::ReduceMinOp>(*x, axes, noKeep), zero);
  Value hi = c.make<nn::MaxOp>(c.make<nn::ReduceMaxOp>(*x, axes, noKeep), zero);
  Value scale =
      c.make<nn::DivOp>(c.make<nn::SubOp>(hi, lo), c.scalarLike(255, *x));
  Value zpFloat = c.make<nn::DivOp>(c.make<nn::SubOp>(zero, lo), scale);
  Value zp = requantize(c, zpFloat, Value(), u8);
  Value y = requantize(c, c.make<nn::DivOp>(*x, scale), castTo(c, zp, tx.getElementType()), u8);
  if (c.failed())
    return failure();
  ctx.setOutput(0, y);
  if (ctx.wantsOutput(1))
    ctx.setOutput(1, scale);
  if (ctx.wantsOutput(2))
    ctx.setOutput(2, zp);
  return success();
}

/// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv: the integer
/// product of the centred operands (x - x_zero_point, w - w_zero_point);
/// the QLinear ops then requantize it with x_scale * w_scale / y_scale and
/// y_zero_point.
LogicalResult distopt::onnximport::integerMatMulOp(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  bool qlinear = op.starts_with("QLinear");
  bool conv = op.ends_with("Conv") || op == "ConvInteger";
  // Operand positions: (x, x_zero_point, w, w_zero_point) and for QLinear
  // the scales and the output's scale and zero point.
  unsigned ix = 0, ixz = 2, iw = qlinear ? 3 : 1, iwz = qlinear ? 5 : 3;
  FailureOr<Value> x = ctx.value(ix), w = ctx.value(iw);
  FailureOr<Value> xz = ctx.optionalValue(ixz), wz = ctx.optionalValue(iwz);
  if (failed(x) || failed(w) || failed(xz) || failed(wz))
    return failure();
  RankedTensorType tx = typeOf(*x), tw = typeOf(*w);
  for (auto [v, what] : {std::pair{*x, "input 0"}, std::pair{*w, "the weight"}})
    if (!isQuantizedType(typeOf(v).getElementType()) ||
        typeOf(v).getElementType().getIntOrFloatBitWidth() != 8)
      return ctx.error() << what << " must be int8 or uint8, got "
                         << v.getType();
  for (auto [z, v] : {std::pair{*xz, *x}, std::pair{*wz, *w}})
    if (z && typeOf(z).getElementType() != typeOf(v).getElementType())
      return ctx.error() << "zero point " << z.getType()
                         << " must have the type of its operand "
                         << v.getType();
  int64_t rx = tx.getRank(), rw = tw.getRank();
  if (rx < 1 || rw < 1)
    return ctx.error() << "needs operands of rank 1 or more, got " << tx
                       << " and " << tw;
  // x's zero point is per row of a matmul's x (its dimension -2), per
  // tensor for a convolution; w's per column of a matmul's w (dimension -1),
  // per output channel (dimension 0) of a convolution's.
  int64_t xAxis = conv || rx < 2 ? 0 : rx - 2;
  int64_t wAxis = conv ? 0 : rw - 1;
  Type acc = conv ? Type(ctx.b.getF64Type()) : Type(ctx.b.getI32Type());
  OpChain c(ctx);
  Value xc = *x, wc = *w;
  if (*xz) {
    int64_t extent = conv ? 1 : tx.getDimSize(xAxis);
    FailureOr<Value> z =
        alongAxis(ctx, c, *xz, "the input's zero point", rx, xAxis, extent);
    if (failed(z))
      return failure();
    xc = minusZeroPoint(c, *x, *z, acc);
  }
  if (*wz) {
    FailureOr<Value> z = alongAxis(ctx, c, *wz, "the weight's zero point", rw,
                                   wAxis, tw.getDimSize(wAxis));
    if (failed(z))
      return failure();
    wc = minusZeroPoint(c, *w, *z, acc);
  }
  xc = castTo(c, xc, acc);
  wc = castTo(c, wc, acc);
  if (c.failed())
    return failure();
  Value product;
  if (conv) {
    Value bias;
    if (op == "QLinearConv" && ctx.hasInput(8)) {
      FailureOr<Value> b = ctx.value(8);
      if (failed(b))
        return failure();
      if (!typeOf(*b).getElementType().isSignlessInteger(32))
        return ctx.error() << "the bias must be int32, got " << b->getType();
      bias = castTo(c, *b, acc);
    }
    FailureOr<Value> y = buildConv(ctx, xc, wc, bias);
    if (failed(y))
      return failure();
    product = *y;
  } else {
    product = c.make<nn::MatMulOp>(xc, wc);
  }
  if (c.failed() || !product)
    return failure();
  if (!qlinear)
    return c.output(0, castTo(c, product, ctx.b.getI32Type()));
  // Requantize: product * (x_scale * w_scale / y_scale) + y_zero_point, in
  // f32.
  FailureOr<Value> xs = ctx.value(1), ws = ctx.value(4), ys = ctx.value(6),
                   yz = ctx.value(7);
  if (failed(xs) || failed(ws) || failed(ys) || failed(yz))
    return failure();
  Type f32 = ctx.b.getF32Type();
  for (Value s : {*xs, *ws, *ys})
    if (typeOf(s).getElementType() != f32)
      return ctx.error() << "scales must be float, got " << s.getType();
  Type qt = typeOf(*yz).getElementType();
  if (!isQuantizedType(qt))
    return ctx.error() << "y_zero_point must be int8 or uint8, got "
                       << yz->getType();
  int64_t ry = typeOf(product).getRank();
  int64_t yAxisOfW = conv ? 1 : ry - 1; // w's scale runs along this
  int64_t yAxisOfX = conv ? 0 : std::max<int64_t>(ry - 2, 0);
  FailureOr<Value> sx =
      alongAxis(ctx, c, *xs, "the input's scale", ry, yAxisOfX,
                conv ? 1 : typeOf(product).getDimSize(yAxisOfX));
  FailureOr<Value> sw = alongAxis(ctx, c, *ws, "the weight's scale", ry,
                                  yAxisOfW, typeOf(product).getDimSize(yAxisOfW));
  FailureOr<Value> sy = alongAxis(ctx, c, *ys, "y_scale", ry, 0, 1);
  FailureOr<Value> zy = alongAxis(ctx, c, *yz, "y_zero_point", ry, 0, 1);
  if (failed(sx) || failed(sw) || failed(sy) || failed(zy))
    return failure();
  Value multiplier =
      c.make<nn::DivOp>(c.make<nn::MulOp>(*sx, *sw), *sy);
  Value y = c.make<nn::MulOp>(castTo(c, product, f32), multiplier);
  return c.output(0, requantize(c, y, castTo(c, *zy, f32), qt));
}
