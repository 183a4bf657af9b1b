//===- NNShapeInference.cpp - result types of nn ops ------------*- C++ -*-===//
//
// Every op that can derive its result type does so here (InferTypeOpInterface),
// so the importer builds ops without spelling types and the verifier checks
// that printed types agree. Dynamic extents propagate as dynamic.
//
//===----------------------------------------------------------------------===//
#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/Dialect/NN/IR/EinsumEquation.h"
#include "distopt/Dialect/NN/IR/ShapeUtils.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace distopt::nn;

static constexpr int64_t kDyn = ShapedType::kDynamic;

FailureOr<SmallVector<int64_t>>
distopt::nn::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (x == kDyn || y == kDyn)
      out[i] = x == kDyn ? y : x;
    else if (x == y)
      out[i] = x;
    else
      return failure();
  }
  return out;
}

static RankedTensorType rankedType(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    ValueRange operands, Type elementType,
                                    SmallVectorImpl<Type> &out) {
  SmallVector<int64_t> shape;
  for (auto [i, v] : llvm::enumerate(operands)) {
    auto t = rankedType(v);
    if (!t)
      return emitOptionalError(loc, "operand ", i, " is not a ranked tensor");
    if (i == 0) {
      shape.assign(t.getShape().begin(), t.getShape().end());
      continue;
    }
    auto b = broadcastShapes(shape, t.getShape());
    if (failed(b)) {
      std::string s1, s2;
      llvm::raw_string_ostream o1(s1), o2(s2);
      llvm::interleave(shape, o1, "x");
      llvm::interleave(t.getShape(), o2, "x");
      return emitOptionalError(loc, "operand shapes ", s1, " and ", s2,
                               " do not broadcast");
    }
    shape = *b;
  }
  out.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

static LogicalResult checkSameElementType(std::optional<Location> loc,
                                          ValueRange values) {
  Type first;
  for (Value v : values) {
    Type et = cast<ShapedType>(v.getType()).getElementType();
    if (!first)
      first = et;
    else if (et != first)
      return emitOptionalError(loc, "operands have different element types ",
                               first, " and ", et);
  }
  return success();
}

#define INFER_BINARY(OP, RESULT_ELEMENT)                                       \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *ctx, std::optional<Location> loc, ValueRange operands,      \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &out) {                                            \
    if (operands.size() != 2 || !rankedType(operands[0]) ||                    \
        !rankedType(operands[1]))                                              \
      return emitOptionalError(loc, "expects two ranked tensor operands");     \
    if (failed(checkSameElementType(loc, operands)))                           \
      return failure();                                                        \
    Type et = RESULT_ELEMENT;                                                  \
    return inferBroadcast(loc, operands, et, out);                             \
  }

#define SAME_ELEMENT rankedType(operands[0]).getElementType()
#define BOOL_ELEMENT IntegerType::get(ctx, 1)
INFER_BINARY(AddOp, SAME_ELEMENT)
INFER_BINARY(SubOp, SAME_ELEMENT)
INFER_BINARY(MulOp, SAME_ELEMENT)
INFER_BINARY(DivOp, SAME_ELEMENT)
INFER_BINARY(MaxOp, SAME_ELEMENT)
INFER_BINARY(MinOp, SAME_ELEMENT)
INFER_BINARY(ModOp, SAME_ELEMENT)
INFER_BINARY(AndOp, SAME_ELEMENT)
INFER_BINARY(OrOp, SAME_ELEMENT)
INFER_BINARY(XorOp, SAME_ELEMENT)
INFER_BINARY(ShiftLeftOp, SAME_ELEMENT)
INFER_BINARY(ShiftRightOp, SAME_ELEMENT)
INFER_BINARY(EqualOp, BOOL_ELEMENT)
INFER_BINARY(LessOp, BOOL_ELEMENT)
INFER_BINARY(LessEqualOp, BOOL_ELEMENT)
INFER_BINARY(GreaterOp, BOOL_ELEMENT)
INFER_BINARY(GreaterEqualOp, BOOL_ELEMENT)
#undef INFER_BINARY

// Pow allows a different exponent type (ONNX): the base's type wins.
LogicalResult PowOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      ValueRange operands, DictionaryAttr,
                                      OpaqueProperties, RegionRange,
                                      SmallVectorImpl<Type> &out) {
  if (operands.size() != 2 || !rankedType(operands[0]) ||
      !rankedType(operands[1]))
    return emitOptionalError(loc, "expects two ranked tensor operands");
  return inferBroadcast(loc, operands, rankedType(operands[0]).getElementType(),
                        out);
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        ValueRange operands, DictionaryAttr,
                                        OpaqueProperties, RegionRange,
                                        SmallVectorImpl<Type> &out) {
  if (operands.size() != 3)
    return emitOptionalError(loc, "expects three operands");
  for (Value v : operands)
    if (!rankedType(v))
      return emitOptionalError(loc, "expects ranked tensor operands");
  if (!rankedType(operands[0]).getElementType().isInteger(1))
    return emitOptionalError(loc, "condition must be a tensor of i1, got ",
                             operands[0].getType());
  if (failed(checkSameElementType(loc, operands.drop_front())))
    return failure();
  return inferBroadcast(loc, operands, rankedType(operands[1]).getElementType(),
                        out);
}

#define INFER_SAME(OP)                                                         \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &out) {                                            \
    if (operands.empty() || !rankedType(operands[0]))                          \
      return emitOptionalError(loc, "expects a ranked tensor operand");        \
    out.push_back(operands[0].getType());                                      \
    return success();                                                          \
  }
// Unary ops and softmax get theirs from SameOperandsAndResultType.
INFER_SAME(LayerNormOp)
INFER_SAME(BatchNormOp)
#undef INFER_SAME

SmallVector<int64_t> distopt::nn::reducedShape(ArrayRef<int64_t> shape,
                                               ArrayRef<int64_t> axes,
                                               bool keepdims) {
  SmallVector<int64_t> out;
  for (int64_t d = 0, e = shape.size(); d < e; ++d) {
    if (llvm::is_contained(axes, d)) {
      if (keepdims)
        out.push_back(1);
    } else {
      out.push_back(shape[d]);
    }
  }
  return out;
}

#define INFER_REDUCE(OP)                                                       \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,       \
      SmallVectorImpl<Type> &out) {                                            \
    Adaptor adaptor(operands, attrs, props, regions);                          \
    auto t = rankedType(adaptor.getInput());                                   \
    if (!t)                                                                    \
      return emitOptionalError(loc, "expects a ranked tensor operand");        \
    for (int64_t a : adaptor.getAxes())                                        \
      if (a < 0 || a >= t.getRank())                                           \
        return emitOptionalError(loc, "axis ", a,                              \
                                 " is out of range for rank ", t.getRank());   \
    out.push_back(t.clone(reducedShape(t.getShape(), adaptor.getAxes(),        \
                                       adaptor.getKeepdims())));               \
    return success();                                                          \
  }
INFER_REDUCE(ReduceSumOp)
INFER_REDUCE(ReduceMeanOp)
INFER_REDUCE(ReduceMaxOp)
INFER_REDUCE(ReduceMinOp)
INFER_REDUCE(ReduceProdOp)
#undef INFER_REDUCE

#define INFER_ARG(OP)                                                          \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *ctx, std::optional<Location> loc, ValueRange operands,      \
      DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,       \
      SmallVectorImpl<Type> &out) {                                            \
    Adaptor adaptor(operands, attrs, props, regions);                          \
    auto t = rankedType(adaptor.getInput());                                   \
    int64_t axis = adaptor.getAxis();                                          \
    if (!t || axis < 0 || axis >= t.getRank())                                 \
      return emitOptionalError(loc, "axis ", axis, " is out of range");        \
    out.push_back(RankedTensorType::get(                                       \
        reducedShape(t.getShape(), {axis}, adaptor.getKeepdims()),             \
        IntegerType::get(ctx, 64)));                                           \
    return success();                                                          \
  }
INFER_ARG(ArgMaxOp)
INFER_ARG(ArgMinOp)
#undef INFER_ARG

FailureOr<SmallVector<int64_t>> distopt::nn::matmulShape(ArrayRef<int64_t> a,
                                                         ArrayRef<int64_t> b) {
  if (a.empty() || b.empty())
    return failure();
  SmallVector<int64_t> sa(a), sb(b);
  bool dropM = false, dropN = false;
  if (sa.size() == 1) {
    sa.insert(sa.begin(), 1);
    dropM = true;
  }
  if (sb.size() == 1) {
    sb.push_back(1);
    dropN = true;
  }
  int64_t k1 = sa.back(), k2 = sb[sb.size() - 2];
  if (k1 != kDyn && k2 != kDyn && k1 != k2)
    return failure();
  auto batch = broadcastShapes(ArrayRef<int64_t>(sa).drop_back(2),
                               ArrayRef<int64_t>(sb).drop_back(2));
  if (failed(batch))
    return failure();
  SmallVector<int64_t> out(*batch);
  if (!dropM)
    out.push_back(sa[sa.size() - 2]);
  if (!dropN)
    out.push_back(sb.back());
  return out;
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ValueRange operands, DictionaryAttr,
                                         OpaqueProperties, RegionRange,
                                         SmallVectorImpl<Type> &out) {
  auto a = rankedType(operands[0]), b = rankedType(operands[1]);
  if (!a || !b)
    return emitOptionalError(loc, "expects ranked tensor operands");
  if (failed(checkSameElementType(loc, operands)))
    return failure();
  auto shape = matmulShape(a.getShape(), b.getShape());
  if (failed(shape))
    return emitOptionalError(loc, "cannot multiply ", a, " by ", b,
                             ": inner or batch dimensions do not match");
  out.push_back(a.clone(*shape));
  return success();
}

LogicalResult
TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              ValueRange operands, DictionaryAttr attrs,
                              OpaqueProperties props, RegionRange regions,
                              SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto t = rankedType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (!t || static_cast<int64_t>(perm.size()) != t.getRank())
    return emitOptionalError(loc, "perm must have one entry per dimension");
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= t.getRank())
      return emitOptionalError(loc, "perm entry ", p, " is out of range");
    shape.push_back(t.getDimSize(p));
  }
  out.push_back(t.clone(shape));
  return success();
}

LogicalResult
ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           ValueRange operands, DictionaryAttr attrs,
                           OpaqueProperties props, RegionRange regions,
                           SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  if (operands.empty())
    return emitOptionalError(loc, "needs at least one input");
  auto first = rankedType(operands[0]);
  int64_t axis = adaptor.getAxis();
  if (!first || axis < 0 || axis >= first.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range");
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (auto [i, v] : llvm::enumerate(operands)) {
    auto t = rankedType(v);
    if (!t || t.getRank() != first.getRank() ||
        t.getElementType() != first.getElementType())
      return emitOptionalError(loc, "input ", i,
                               " differs in rank or element type");
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (d == axis)
        continue;
      if (t.getDimSize(d) != kDyn && shape[d] != kDyn &&
          t.getDimSize(d) != shape[d])
        return emitOptionalError(loc, "input ", i, " has extent ",
                                 t.getDimSize(d), " in dimension ", d,
                                 ", expected ", shape[d]);
    }
    if (shape[axis] != kDyn)
      shape[axis] =
          t.getDimSize(axis) == kDyn ? kDyn : shape[axis] + t.getDimSize(axis);
  }
  out.push_back(first.clone(shape));
  return success();
}

int64_t distopt::nn::sliceExtent(int64_t start, int64_t end, int64_t step) {
  if (step > 0)
    return end > start ? (end - start + step - 1) / step : 0;
  return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

bool distopt::nn::isTrailingBroadcast(ArrayRef<int64_t> small,
                                      ArrayRef<int64_t> big) {
  if (small.size() > big.size())
    return false;
  size_t lead = 0;
  while (lead < small.size() && small[lead] == 1)
    ++lead;
  for (size_t i = lead; i < small.size(); ++i)
    if (small[i] != big[big.size() - small.size() + i])
      return false;
  return true;
}

LogicalResult
SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                          ValueRange operands, DictionaryAttr attrs,
                          OpaqueProperties props, RegionRange regions,
                          SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto t = rankedType(adaptor.getInput());
  if (!t)
    return emitOptionalError(loc, "expects a ranked tensor");
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    steps = adaptor.getSteps();
  int64_t rank = t.getRank();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(ends.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return emitOptionalError(loc,
                             "starts, ends and steps need one entry per "
                             "dimension (",
                             rank, ")");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (steps[d] == 0)
      return emitOptionalError(loc, "step of dimension ", d, " is zero");
    shape.push_back(t.getDimSize(d) == kDyn && starts[d] == 0 && ends[d] == kDyn
                        ? kDyn
                        : sliceExtent(starts[d], ends[d], steps[d]));
  }
  out.push_back(t.clone(shape));
  return success();
}

LogicalResult
GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           ValueRange operands, DictionaryAttr attrs,
                           OpaqueProperties props, RegionRange regions,
                           SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (!data || !indices)
    return emitOptionalError(loc, "expects ranked tensor operands");
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             data.getRank());
  if (!indices.getElementType().isInteger(64) &&
      !indices.getElementType().isInteger(32))
    return emitOptionalError(loc, "indices must be i32 or i64, got ",
                             indices.getElementType());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  out.push_back(data.clone(shape));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      ValueRange operands, DictionaryAttr attrs,
                                      OpaqueProperties props,
                                      RegionRange regions,
                                      SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto t = rankedType(adaptor.getInput());
  ArrayRef<int64_t> pads = adaptor.getPads();
  if (!t || static_cast<int64_t>(pads.size()) != 2 * t.getRank())
    return emitOptionalError(loc, "pads needs two entries per dimension");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    int64_t e = t.getDimSize(d);
    int64_t n = e == kDyn ? kDyn : e + pads[d] + pads[d + t.getRank()];
    if (n != kDyn && n < 0)
      return emitOptionalError(loc, "padding makes dimension ", d, " negative");
    shape.push_back(n);
  }
  out.push_back(t.clone(shape));
  return success();
}

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ValueRange operands,
                                         DictionaryAttr attrs,
                                         OpaqueProperties props,
                                         RegionRange regions,
                                         SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto t = rankedType(adaptor.getInput());
  ArrayRef<double> scales = adaptor.getScales();
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (!t || static_cast<int64_t>(scales.size()) != t.getRank() ||
      static_cast<int64_t>(sizes.size()) != t.getRank())
    return emitOptionalError(loc,
                             "scales and sizes need one entry per dimension");
  // A dimension of scale 1 keeps its (possibly local) extent.
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < t.getRank(); ++d)
    shape.push_back(scales[d] == 1.0 ? t.getDimSize(d) : sizes[d]);
  out.push_back(t.clone(shape));
  return success();
}

LogicalResult GridSampleOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,
    SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto x = rankedType(adaptor.getInput()), g = rankedType(adaptor.getGrid());
  if (!x || !g || x.getRank() != 4 || g.getRank() != 4 ||
      g.getDimSize(3) != 2 || x.getElementType() != g.getElementType() ||
      !isa<FloatType>(x.getElementType()))
    return emitOptionalError(loc, "expects a floating-point input [N, C, H, "
                                  "W] and a grid [N, Ho, Wo, 2] of its type");
  int64_t n = x.getDimSize(0), gn = g.getDimSize(0);
  if (n != kDyn && gn != kDyn && n != gn)
    return emitOptionalError(loc, "input and grid batch sizes differ");
  out.push_back(x.clone({n == kDyn ? gn : n, x.getDimSize(1), g.getDimSize(1),
                         g.getDimSize(2)}));
  return success();
}

/// Output extent of a sliding window (ONNX conv/pool formula).
int64_t distopt::nn::windowExtent(int64_t in, int64_t kernel, int64_t stride,
                                  int64_t padBegin, int64_t padEnd,
                                  int64_t dilation, bool ceilMode) {
  if (in == kDyn)
    return kDyn;
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t num = in + padBegin + padEnd - span;
  if (num < 0)
    return 0;
  int64_t out = ceilMode ? (num + stride - 1) / stride + 1 : num / stride + 1;
  // With ceil_mode the last window must start inside the input or left pad.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

LogicalResult
ConvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                         ValueRange operands, DictionaryAttr attrs,
                         OpaqueProperties props, RegionRange regions,
                         SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto x = rankedType(adaptor.getInput());
  auto w = rankedType(adaptor.getWeight());
  if (!x || !w || x.getRank() < 3 || w.getRank() != x.getRank())
    return emitOptionalError(loc, "expects input [N, C, spatial...] and weight "
                                  "[M, C/group, kernel...] of equal rank");
  int64_t spatial = x.getRank() - 2;
  ArrayRef<int64_t> strides = adaptor.getStrides(), pads = adaptor.getPads(),
                    dil = adaptor.getDilations();
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(dil.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return emitOptionalError(loc, "strides/dilations need ", spatial,
                             " entries and pads ", 2 * spatial);
  SmallVector<int64_t> shape{x.getDimSize(0), w.getDimSize(0)};
  for (int64_t i = 0; i < spatial; ++i)
    shape.push_back(windowExtent(x.getDimSize(i + 2), w.getDimSize(i + 2),
                                 strides[i], pads[i], pads[i + spatial], dil[i],
                                 false));
  out.push_back(x.clone(shape));
  return success();
}

#define INFER_POOL(OP)                                                         \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,       \
      SmallVectorImpl<Type> &out) {                                            \
    Adaptor adaptor(operands, attrs, props, regions);                          \
    auto x = rankedType(adaptor.getInput());                                   \
    if (!x || x.getRank() < 3)                                                 \
      return emitOptionalError(loc, "expects input [N, C, spatial...]");       \
    int64_t spatial = x.getRank() - 2;                                         \
    ArrayRef<int64_t> k = adaptor.getKernel(), s = adaptor.getStrides(),       \
                      p = adaptor.getPads(), dl = adaptor.getDilations();      \
    if (static_cast<int64_t>(k.size()) != spatial ||                           \
        static_cast<int64_t>(s.size()) != spatial ||                           \
        static_cast<int64_t>(dl.size()) != spatial ||                          \
        static_cast<int64_t>(p.size()) != 2 * spatial)                         \
      return emitOptionalError(loc, "kernel/strides/dilations need ", spatial, \
                               " entries and pads ", 2 * spatial);             \
    SmallVector<int64_t> shape{x.getDimSize(0), x.getDimSize(1)};              \
    for (int64_t i = 0; i < spatial; ++i)                                      \
      shape.push_back(windowExtent(x.getDimSize(i + 2), k[i], s[i], p[i],      \
                                   p[i + spatial], dl[i],                      \
                                   adaptor.getCeilMode()));                    \
    out.push_back(x.clone(shape, ELEMENT));                                    \
    return success();                                                          \
  }
#define ELEMENT x.getElementType()
INFER_POOL(MaxPoolOp)
INFER_POOL(AvgPoolOp)
#undef ELEMENT
#define ELEMENT IntegerType::get(x.getContext(), 64)
INFER_POOL(MaxPoolIndicesOp)
#undef ELEMENT
#undef INFER_POOL

#define INFER_GLOBAL_POOL(OP)                                                  \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &out) {                                            \
    auto x = rankedType(operands[0]);                                          \
    if (!x || x.getRank() < 3)                                                 \
      return emitOptionalError(loc, "expects input [N, C, spatial...]");       \
    SmallVector<int64_t> shape{x.getDimSize(0), x.getDimSize(1)};              \
    shape.append(x.getRank() - 2, 1);                                          \
    out.push_back(x.clone(shape));                                             \
    return success();                                                          \
  }
INFER_GLOBAL_POOL(GlobalAvgPoolOp)
INFER_GLOBAL_POOL(GlobalMaxPoolOp)
#undef INFER_GLOBAL_POOL

LogicalResult
ScatterAddOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                               ValueRange operands, DictionaryAttr attrs,
                               OpaqueProperties props, RegionRange regions,
                               SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto base = rankedType(adaptor.getBase());
  auto indices = rankedType(adaptor.getIndices());
  auto updates = rankedType(adaptor.getUpdates());
  int64_t axis = adaptor.getAxis();
  if (!base || !indices || !updates)
    return emitOptionalError(loc, "expects ranked tensor operands");
  if (axis < 0 || axis >= base.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             base.getRank());
  if (!indices.getElementType().isInteger(64) &&
      !indices.getElementType().isInteger(32))
    return emitOptionalError(loc, "indices must be i32 or i64, got ",
                             indices.getElementType());
  // `updates` is what gather(base, indices) would produce.
  SmallVector<int64_t> gathered(base.getShape().take_front(axis));
  llvm::append_range(gathered, indices.getShape());
  llvm::append_range(gathered, base.getShape().drop_front(axis + 1));
  if (updates.getShape() != ArrayRef<int64_t>(gathered) ||
      updates.getElementType() != base.getElementType())
    return emitOptionalError(
        loc, "updates must be ",
        RankedTensorType::get(gathered, base.getElementType()),
        " (what gather would produce), got ", updates);
  out.push_back(base);
  return success();
}

static bool isIndexType(RankedTensorType t) {
  return t.getElementType().isInteger(64) || t.getElementType().isInteger(32);
}

/// What GatherElements and ScatterElements ask of `data`, `indices` and
/// `axis` alike: an axis in range, integer indices of data's rank, no
/// wider than data outside the axis.
static LogicalResult checkElementIndices(std::optional<Location> loc,
                                         RankedTensorType data,
                                         RankedTensorType indices,
                                         int64_t axis) {
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             data.getRank());
  if (!isIndexType(indices))
    return emitOptionalError(loc, "indices must be i32 or i64, got ",
                             indices.getElementType());
  if (indices.getRank() != data.getRank())
    return emitOptionalError(loc, "indices have rank ", indices.getRank(),
                             ", expected the rank of data (", data.getRank(),
                             ")");
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != axis && !ShapedType::isDynamic(data.getDimSize(d)) &&
        !ShapedType::isDynamic(indices.getDimSize(d)) &&
        indices.getDimSize(d) > data.getDimSize(d))
      return emitOptionalError(loc, "indices extent ", indices.getDimSize(d),
                               " in dimension ", d, " exceeds data's (",
                               data.getDimSize(d), ")");
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,
    SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (!data || !indices)
    return emitOptionalError(loc, "expects ranked tensor operands");
  if (failed(checkElementIndices(loc, data, indices, axis)))
    return failure();
  out.push_back(data.clone(indices.getShape()));
  return success();
}

LogicalResult ScatterElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,
    SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  auto updates = rankedType(adaptor.getUpdates());
  int64_t axis = adaptor.getAxis();
  if (!data || !indices || !updates)
    return emitOptionalError(loc, "expects ranked tensor operands");
  if (failed(checkElementIndices(loc, data, indices, axis)))
    return failure();
  if (updates.getShape() != indices.getShape() ||
      updates.getElementType() != data.getElementType())
    return emitOptionalError(
        loc, "updates must be ",
        RankedTensorType::get(indices.getShape(), data.getElementType()),
        " (the indices' shape, data's element type), got ", updates);
  out.push_back(data);
  return success();
}

/// GatherND/ScatterND: the index tuples' length k (indices' last extent)
/// must be known and fit data's dimensions from `batchDims` on.
static FailureOr<int64_t> checkIndexTuples(std::optional<Location> loc,
                                           RankedTensorType data,
                                           RankedTensorType indices,
                                           int64_t batchDims) {
  if (!indices.getElementType().isSignlessInteger(64) &&
      !indices.getElementType().isSignlessInteger(32))
    return emitOptionalError(loc, "indices must be i64 or i32, got ", indices);
  int64_t q = indices.getRank(), r = data.getRank();
  if (q < 1)
    return emitOptionalError(loc, "indices must have rank 1 or more");
  if (batchDims < 0 || batchDims >= std::min(q, r))
    return emitOptionalError(loc, "batch_dims ", batchDims,
                             " must be below both ranks (", r, ", ", q, ")");
  for (int64_t d = 0; d < batchDims; ++d)
    if (data.getDimSize(d) != indices.getDimSize(d))
      return emitOptionalError(loc, "batch dimension ", d, " differs: data ",
                               data, ", indices ", indices);
  int64_t k = indices.getDimSize(q - 1);
  if (k == kDyn || k < 1 || k > r - batchDims)
    return emitOptionalError(loc, "index tuples of length ", k,
                             " do not fit data ", data, " after ", batchDims,
                             " batch dimensions");
  return k;
}

LogicalResult GatherNDOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,
    SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  if (!data || !indices)
    return emitOptionalError(loc, "expects ranked tensor operands");
  int64_t b = adaptor.getBatchDims();
  FailureOr<int64_t> k = checkIndexTuples(loc, data, indices, b);
  if (failed(k))
    return failure();
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(b + *k));
  out.push_back(data.clone(shape));
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,
    SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  auto updates = rankedType(adaptor.getUpdates());
  if (!data || !indices || !updates)
    return emitOptionalError(loc, "expects ranked tensor operands");
  FailureOr<int64_t> k = checkIndexTuples(loc, data, indices, 0);
  if (failed(k))
    return failure();
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(*k));
  auto want = RankedTensorType::get(shape, data.getElementType());
  if (updates != want)
    return emitOptionalError(loc, "updates must be ", want, ", got ", updates);
  out.push_back(data);
  return success();
}

LogicalResult DetOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      ValueRange operands, DictionaryAttr,
                                      OpaqueProperties, RegionRange,
                                      SmallVectorImpl<Type> &out) {
  auto t = operands.empty() ? RankedTensorType() : rankedType(operands[0]);
  if (!t || t.getRank() < 2 || !isa<FloatType>(t.getElementType()) ||
      t.getDimSize(t.getRank() - 1) != t.getDimSize(t.getRank() - 2))
    return emitOptionalError(loc, "expects a float tensor [*, M, M], got ",
                             operands.empty() ? Type() : operands[0].getType());
  out.push_back(t.clone(t.getShape().drop_back(2)));
  return success();
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ValueRange operands,
                                         DictionaryAttr attrs,
                                         OpaqueProperties props,
                                         RegionRange regions,
                                         SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto indices = rankedType(adaptor.getIndices());
  auto values = rankedType(adaptor.getValues());
  if (!indices || !values)
    return emitOptionalError(loc, "expects ranked tensor operands");
  if (!isa<IntegerType>(indices.getElementType()))
    return emitOptionalError(loc, "indices must be integers, got ",
                             indices.getElementType());
  if (values.getShape() != ArrayRef<int64_t>{2})
    return emitOptionalError(loc, "values must be [off, on] (2 elements), got ",
                             values);
  int64_t depth = adaptor.getDepth(), axis = adaptor.getAxis();
  if (depth < 1)
    return emitOptionalError(loc, "depth must be positive, got ", depth);
  if (axis < 0 || axis > indices.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             indices.getRank() + 1);
  SmallVector<int64_t> shape(indices.getShape());
  shape.insert(shape.begin() + axis, depth);
  out.push_back(RankedTensorType::get(shape, values.getElementType()));
  return success();
}

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ValueRange operands,
                                         DictionaryAttr attrs,
                                         OpaqueProperties props,
                                         RegionRange regions,
                                         SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  std::string error;
  auto eq = EinsumEquation::parse(adaptor.getEquation(), error);
  if (!eq)
    return emitOptionalError(loc, error);
  SmallVector<ArrayRef<int64_t>> shapes;
  Type element;
  for (Value v : adaptor.getInputs()) {
    auto t = rankedType(v);
    if (!t)
      return emitOptionalError(loc, "expects ranked tensor operands");
    if (element && t.getElementType() != element)
      return emitOptionalError(loc, "operands have element types ", element,
                               " and ", t.getElementType());
    element = t.getElementType();
    shapes.push_back(t.getShape());
  }
  if (shapes.empty())
    return emitOptionalError(loc, "expects at least one operand");
  SmallVector<int64_t> shape;
  if (!eq->letterExtents(shapes, shape, error))
    return emitOptionalError(loc, error);
  out.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       ValueRange operands,
                                       DictionaryAttr attrs,
                                       OpaqueProperties props,
                                       RegionRange regions,
                                       SmallVectorImpl<Type> &out) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto t = rankedType(adaptor.getInput());
  int64_t axis = adaptor.getAxis(), k = adaptor.getK();
  if (!t)
    return emitOptionalError(loc, "expects a ranked tensor operand");
  if (axis < 0 || axis >= t.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             t.getRank());
  int64_t n = t.getDimSize(axis);
  if (k < 0 || (!ShapedType::isDynamic(n) && k > n))
    return emitOptionalError(loc, "k ", k, " is not in [0, ", n,
                             "] (the extent of axis ", axis, ")");
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = k;
  out.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}
