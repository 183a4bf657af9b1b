//===- OpsTensor.cpp - ONNX constants, shapes and data movement -*- C++ -*-===//
//
// These ops evaluate at import when their data input is known and small
// (shape arithmetic), and otherwise become nn data-movement ops.
//
//===----------------------------------------------------------------------===//
#include "ImportContext.h"
#include "KnownFolding.h"

#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/Dialect/NN/IR/ShapeUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallBitVector.h"

#include <cmath>

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

std::string listString(ArrayRef<int64_t> v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(v, os);
  return s;
}

std::vector<int64_t> shapeOf(RankedTensorType t) {
  return std::vector<int64_t>(t.getShape().begin(), t.getShape().end());
}

/// The known value of input 0 if the op's result (of `resultElements`
/// elements) should be computed at import.
const Known *foldable(ImportContext &ctx, int64_t resultElements) {
  if (resultElements < 0 || resultElements > kMaxFoldElements)
    return nullptr;
  return ctx.known(0);
}

/// Output 0 = input 0 with a new shape (same elements).
LogicalResult setReshaped(ImportContext &ctx, ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.begin(), shape.end());
  if (const Known *k = foldable(ctx, checkedNumElements(s))) {
    ctx.setKnownOutput(0, knownReshape(*k, s), ctx.type(0).getElementType());
    return success();
  }
  OpChain c(ctx);
  return c.output(0, c.reshape(c.input(0), shape));
}

/// A type for a tensor defined by an attribute; diagnostics name `what`.
FailureOr<RankedTensorType> tensorProtoType(ImportContext &ctx,
                                            const onnx::TensorProto &t,
                                            StringRef what) {
  Type et = elementTypeOfOnnx(ctx.b.getContext(), t.data_type());
  if (!et)
    return ctx.error() << what << " has element type "
                       << dataTypeName(t.data_type())
                       << ", which is not supported";
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  if (checkedNumElements(shape) < 0)
    return ctx.error() << what << " has an invalid shape";
  return RankedTensorType::get(shape, et);
}

/// Records a constant: known (lazily materialized) when small, else an
/// nn.constant.
void setConstant(ImportContext &ctx, DenseElementsAttr dense) {
  auto type = cast<RankedTensorType>(dense.getType());
  if (type.getNumElements() <= kMaxFoldElements)
    if (std::optional<Known> k = knownFromDense(dense)) {
      ctx.setKnownOutput(0, std::move(*k), type.getElementType());
      return;
    }
  ctx.setOutput(0, nn::ConstantOp::create(ctx.b, ctx.loc, type, dense));
}

LogicalResult sparseConstant(ImportContext &ctx,
                             const onnx::SparseTensorProto &sp) {
  std::vector<int64_t> dims(sp.dims().begin(), sp.dims().end());
  int64_t n = checkedNumElements(dims);
  if (n < 0)
    return ctx.error() << "sparse_value has an invalid shape";
  if (n > kMaxFoldElements)
    return ctx.error() << "sparse_value has " << n
                       << " elements; sparse constants larger than "
                       << kMaxFoldElements << " are not supported";
  FailureOr<RankedTensorType> vt =
      tensorProtoType(ctx, sp.values(), "sparse_value's values");
  if (failed(vt))
    return failure();
  std::string err;
  DenseElementsAttr values = denseFromTensorProto(sp.values(), *vt, err);
  if (!values)
    return ctx.error() << "sparse_value's values: " << err;
  auto it =
      RankedTensorType::get(std::vector<int64_t>(sp.indices().dims().begin(),
                                                 sp.indices().dims().end()),
                            ctx.b.getI64Type());
  if (sp.indices().data_type() != onnx::TensorProto::INT64 ||
      checkedNumElements(it.getShape()) < 0)
    return ctx.error() << "sparse_value's indices must be an int64 tensor";
  DenseElementsAttr indices = denseFromTensorProto(sp.indices(), it, err);
  if (!indices)
    return ctx.error() << "sparse_value's indices: " << err;
  std::optional<Known> v = knownFromDense(values),
                       idx = knownFromDense(indices);
  if (!v || !idx)
    return ctx.error() << "sparse_value cannot be decoded";
  int64_t nnz = v->numElements(), rank = dims.size();
  bool linear = idx->shape.size() == 1;
  if (vt->getRank() != 1 ||
      (linear ? idx->shape[0] != nnz
              : idx->shape.size() != 2 || idx->shape[0] != nnz ||
                    idx->shape[1] != rank))
    return ctx.error() << "sparse_value's values and indices do not match "
                          "its shape";
  Known out;
  out.shape = dims;
  out.isFloat = v->isFloat;
  if (out.isFloat)
    out.floats.assign(n, 0.0);
  else
    out.ints.assign(n, 0);
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dims[d + 1];
  for (int64_t j = 0; j < nnz; ++j) {
    int64_t flat = 0;
    if (linear) {
      flat = idx->ints[j];
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        int64_t c = idx->ints[j * rank + d];
        if (c < 0 || c >= dims[d])
          return ctx.error() << "sparse_value index out of range";
        flat += c * strides[d];
      }
    }
    if (flat < 0 || flat >= n)
      return ctx.error() << "sparse_value index out of range";
    if (out.isFloat)
      out.floats[flat] = v->floats[j];
    else
      out.ints[flat] = v->ints[j];
  }
  ctx.setKnownOutput(0, std::move(out), vt->getElementType());
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Constants and shapes
//===----------------------------------------------------------------------===//

LogicalResult distopt::onnximport::constantOp(ImportContext &ctx) {
  const onnx::NodeProto &node = ctx.node;
  if (node.attribute_size() != 1)
    return ctx.error() << "needs exactly one value attribute, has "
                       << node.attribute_size();
  const onnx::AttributeProto &a = node.attribute(0);
  StringRef which = a.name();
  if (which == "value") {
    FailureOr<RankedTensorType> type = tensorProtoType(ctx, a.t(), "the value");
    if (failed(type))
      return failure();
    if (a.t().data_location() == onnx::TensorProto::EXTERNAL)
      return ctx.error() << "a Constant with external data is not supported";
    std::string err;
    DenseElementsAttr dense = denseFromTensorProto(a.t(), *type, err);
    if (!dense)
      return ctx.error() << "the value: " << err;
    setConstant(ctx, dense);
    return success();
  }
  if (which == "sparse_value")
    return sparseConstant(ctx, a.sparse_tensor());
  Type i64 = ctx.b.getI64Type(), f32 = ctx.b.getF32Type();
  if (which == "value_int") {
    ctx.setKnownOutput(0, Known::ofInts({}, {a.i()}), i64);
    return success();
  }
  if (which == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    int64_t n = v.size();
    ctx.setKnownOutput(0, Known::ofInts({n}, std::move(v)), i64);
    return success();
  }
  if (which == "value_float") {
    ctx.setKnownOutput(0, Known::ofFloats({}, {a.f()}), f32);
    return success();
  }
  if (which == "value_floats") {
    std::vector<double> v(a.floats().begin(), a.floats().end());
    int64_t n = v.size();
    ctx.setKnownOutput(0, Known::ofFloats({n}, std::move(v)), f32);
    return success();
  }
  return ctx.error() << "string constants (" << which << ") are not supported";
}

LogicalResult distopt::onnximport::constantOfShapeOp(ImportContext &ctx) {
  FailureOr<std::vector<int64_t>> shape = ctx.knownInts(0, "the shape");
  if (failed(shape))
    return failure();
  int64_t n = checkedNumElements(*shape);
  if (n < 0)
    return ctx.error() << "the shape has a negative or too large dimension";
  Type et = ctx.b.getF32Type();
  Attribute value = FloatAttr::get(et, 0.0);
  if (const onnx::AttributeProto *a = ctx.attr("value")) {
    FailureOr<RankedTensorType> vt = tensorProtoType(ctx, a->t(), "the value");
    if (failed(vt))
      return failure();
    if (vt->getNumElements() != 1)
      return ctx.error() << "the value must hold one element, not "
                         << vt->getNumElements();
    std::string err;
    DenseElementsAttr dense = denseFromTensorProto(a->t(), *vt, err);
    if (!dense)
      return ctx.error() << "the value: " << err;
    et = vt->getElementType();
    value = dense.getSplatValue<Attribute>();
  }
  auto type = RankedTensorType::get(*shape, et);
  setConstant(ctx, DenseElementsAttr::get(type, value));
  return success();
}

LogicalResult distopt::onnximport::shapeOp(ImportContext &ctx) {
  FailureOr<Tensor *> t = ctx.input(0);
  if (failed(t))
    return failure();
  std::vector<int64_t> dims = shapeOf((*t)->type);
  int64_t rank = dims.size();
  int64_t start = ctx.attrInt("start", 0), end = ctx.attrInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> part(dims.begin() + start, dims.begin() + end);
  int64_t n = part.size();
  ctx.setKnownOutput(0, Known::ofInts({n}, std::move(part)),
                     ctx.b.getI64Type());
  return success();
}

LogicalResult distopt::onnximport::sizeOp(ImportContext &ctx) {
  FailureOr<Tensor *> t = ctx.input(0);
  if (failed(t))
    return failure();
  ctx.setKnownOutput(0, Known::ofInts({}, {(*t)->type.getNumElements()}),
                     ctx.b.getI64Type());
  return success();
}

LogicalResult distopt::onnximport::rangeOp(ImportContext &ctx) {
  const Known *k[3];
  for (unsigned i = 0; i < 3; ++i) {
    FailureOr<const Known *> v = ctx.requireKnown(i, i == 0   ? "start"
                                                     : i == 1 ? "limit"
                                                              : "delta");
    if (failed(v))
      return failure();
    if ((*v)->numElements() != 1)
      return ctx.error() << "input " << i << " must be a scalar";
    if (ctx.type(i).getElementType() != ctx.type(0).getElementType())
      return ctx.error() << "start, limit and delta must have one type";
    k[i] = *v;
  }
  Type et = ctx.type(0).getElementType();
  int64_t n;
  if (!k[0]->isFloat) {
    __int128 start = k[0]->ints[0], limit = k[1]->ints[0],
             delta = k[2]->ints[0];
    if (delta == 0)
      return ctx.error() << "delta is zero";
    __int128 diff = limit - start;
    __int128 count =
        (diff > 0) == (delta > 0) && diff != 0
            ? ((diff < 0 ? -diff : diff) + (delta < 0 ? -delta : delta) - 1) /
                  (delta < 0 ? -delta : delta)
            : 0;
    n = count > INT32_MAX ? -1 : static_cast<int64_t>(count);
  } else {
    double start = k[0]->floats[0], limit = k[1]->floats[0],
           delta = k[2]->floats[0];
    if (delta == 0 || std::isnan(delta) || std::isnan(start) ||
        std::isnan(limit))
      return ctx.error() << "delta is zero or a bound is NaN";
    double count = std::max(0.0, std::ceil((limit - start) / delta));
    n = count > INT32_MAX ? -1 : static_cast<int64_t>(count);
  }
  if (n < 0)
    return ctx.error() << "the range is too long";
  if (n > kMaxFoldElements) {
    // Too long to hold in the IR: an nn.range with its (known) length.
    OpChain c(ctx);
    Value in[3];
    for (unsigned i = 0; i < 3; ++i)
      in[i] = c.reshape(c.input(i), {});
    return c.output(0, c.typed<nn::RangeOp>(RankedTensorType::get({n}, et),
                                            in[0], in[1], in[2]));
  }
  Known out;
  out.shape = {n};
  out.isFloat = k[0]->isFloat;
  for (int64_t i = 0; i < n; ++i) {
    if (out.isFloat) {
      double v = k[0]->floats[0] + double(i) * k[2]->floats[0];
      out.floats.push_back(et.isF32() ? double(float(v)) : v);
    } else {
      out.ints.push_back(static_cast<int64_t>(
          static_cast<uint64_t>(k[0]->ints[0]) +
          static_cast<uint64_t>(i) * static_cast<uint64_t>(k[2]->ints[0])));
    }
  }
  ctx.setKnownOutput(0, std::move(out), et);
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult distopt::onnximport::transposeOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  int64_t rank = t.getRank();
  std::vector<int64_t> perm = ctx.attrInts("perm");
  if (!ctx.hasAttr("perm"))
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank)
    return ctx.error() << "perm has " << perm.size() << " entries for rank "
                       << rank;
  llvm::SmallBitVector seen(rank);
  for (int64_t &p : perm) {
    if (p < 0)
      p += rank;
    if (p < 0 || p >= rank || seen[p])
      return ctx.error() << "perm is not a permutation of 0.." << rank - 1;
    seen.set(p);
  }
  if (const Known *k = foldable(ctx, t.getNumElements())) {
    ctx.setKnownOutput(0, knownTranspose(*k, perm), t.getElementType());
    return success();
  }
  OpChain c(ctx);
  Value x = c.input(0);
  bool identity = true;
  for (int64_t i = 0; i < rank; ++i)
    identity &= perm[i] == i;
  if (!identity)
    x = c.make<nn::TransposeOp>(x, ctx.b.getDenseI64ArrayAttr(perm));
  return c.output(0, x);
}

LogicalResult distopt::onnximport::reshapeOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  FailureOr<std::vector<int64_t>> k = ctx.knownInts(1, "the target shape");
  if (failed(k))
    return failure();
  std::vector<int64_t> target = *k;
  if (ctx.type(1).getRank() != 1)
    return ctx.error() << "the target shape must be 1-D";
  bool allowZero = ctx.attrInt("allowzero", 0) != 0;
  if (allowZero && llvm::is_contained(target, 0) &&
      llvm::is_contained(target, -1))
    return ctx.error() << "with allowzero=1 the target shape cannot hold both "
                          "0 and -1";
  int64_t inferred = -1, product = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= static_cast<size_t>(t.getRank()))
        return ctx.error() << "target entry " << i
                           << " is 0 (copy the input's dimension) but the "
                              "input has rank "
                           << t.getRank();
      target[i] = t.getDimSize(i);
    }
    if (target[i] == -1) {
      if (inferred >= 0)
        return ctx.error() << "the target shape has more than one -1";
      inferred = i;
      continue;
    }
    if (target[i] < 0)
      return ctx.error() << "target entry " << i << " is " << target[i];
    if (llvm::MulOverflow(product, target[i], product))
      return ctx.error() << "the target shape is too large";
  }
  if (inferred >= 0) {
    if (product == 0 || t.getNumElements() % product != 0)
      return ctx.error() << "cannot infer the -1 entry: " << t.getNumElements()
                         << " elements do not divide into " << product;
    target[inferred] = t.getNumElements() / product;
    product *= target[inferred];
  }
  if (product != t.getNumElements())
    return ctx.error() << "cannot reshape " << t << " (" << t.getNumElements()
                       << " elements) to " << product << " elements";
  return setReshaped(ctx, target);
}

LogicalResult distopt::onnximport::flattenOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  int64_t rank = t.getRank(), axis = ctx.attrInt("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return ctx.error() << "axis " << ctx.attrInt("axis", 1)
                       << " is out of range for rank " << rank;
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? a : b) *= t.getDimSize(d);
  return setReshaped(ctx, {a, b});
}

/// Axes of Squeeze/Unsqueeze: an attribute before opset 13, an input from 13.
static FailureOr<std::vector<int64_t>> squeezeAxes(ImportContext &ctx) {
  if (ctx.opset < 13)
    return ctx.attrInts("axes");
  if (!ctx.hasInput(1))
    return std::vector<int64_t>();
  return ctx.knownInts(1, "axes");
}

LogicalResult distopt::onnximport::squeezeOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  FailureOr<std::vector<int64_t>> axes = squeezeAxes(ctx);
  if (failed(axes))
    return failure();
  llvm::SmallBitVector drop(t.getRank());
  for (int64_t a : *axes) {
    FailureOr<int64_t> n = ctx.axis(a, t.getRank(), "axis");
    if (failed(n))
      return failure();
    if (t.getDimSize(*n) != 1)
      return ctx.error() << "cannot squeeze dimension " << *n << " of extent "
                         << t.getDimSize(*n);
    drop.set(*n);
  }
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    bool gone = axes->empty() ? t.getDimSize(d) == 1 : drop[d];
    if (!gone)
      shape.push_back(t.getDimSize(d));
  }
  return setReshaped(ctx, shape);
}

LogicalResult distopt::onnximport::unsqueezeOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  FailureOr<std::vector<int64_t>> axes = squeezeAxes(ctx);
  if (failed(axes))
    return failure();
  int64_t rank = t.getRank() + axes->size();
  llvm::SmallBitVector added(rank);
  for (int64_t a : *axes) {
    FailureOr<int64_t> n = ctx.axis(a, rank, "axis");
    if (failed(n))
      return failure();
    if (added[*n])
      return ctx.error() << "axis " << a << " is given twice";
    added.set(*n);
  }
  std::vector<int64_t> shape;
  for (int64_t d = 0, src = 0; d < rank; ++d)
    shape.push_back(added[d] ? 1 : t.getDimSize(src++));
  return setReshaped(ctx, shape);
}

LogicalResult distopt::onnximport::concatOp(ImportContext &ctx) {
  RankedTensorType t0 = ctx.type(0);
  FailureOr<int64_t> axis =
      ctx.axis(ctx.attrInt("axis", 0), t0.getRank(), "axis");
  if (failed(axis))
    return failure();
  std::vector<const Known *> parts;
  int64_t total = 0;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    RankedTensorType ti = ctx.type(i);
    if (!ti)
      return ctx.error() << "input " << i << " is missing";
    if (ti.getElementType() != t0.getElementType() ||
        ti.getRank() != t0.getRank())
      return ctx.error() << "input " << i << " of type " << ti
                         << " does not concatenate with " << t0;
    for (int64_t d = 0; d < t0.getRank(); ++d)
      if (d != *axis && ti.getDimSize(d) != t0.getDimSize(d))
        return ctx.error() << "input " << i << " of type " << ti
                           << " does not concatenate with " << t0
                           << " along axis " << *axis;
    total += ti.getNumElements();
    parts.push_back(ctx.known(i));
  }
  if (total <= kMaxFoldElements &&
      llvm::all_of(parts, [](const Known *k) { return k != nullptr; })) {
    ctx.setKnownOutput(0, knownConcat(parts, *axis), t0.getElementType());
    return success();
  }
  OpChain c(ctx);
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    // Empty pieces add nothing.
    if (ctx.type(i).getNumElements() == 0 && ctx.numInputs() > 1)
      continue;
    inputs.push_back(c.input(i));
  }
  if (inputs.empty())
    inputs.push_back(c.input(0));
  if (inputs.size() == 1)
    return c.output(0, inputs[0]);
  return c.output(0, c.make<nn::ConcatOp>(ValueRange(inputs),
                                          ctx.b.getI64IntegerAttr(*axis)));
}

/// Slice of `t` taking [start, start + size) along `axis`: as a known value
/// or an nn.slice.
static LogicalResult setAxisSlice(ImportContext &ctx, unsigned out,
                                  int64_t axis, int64_t start, int64_t size) {
  RankedTensorType t = ctx.type(0);
  int64_t rank = t.getRank();
  std::vector<int64_t> lo(rank, 0), st(rank, 1), shape = shapeOf(t);
  lo[axis] = start;
  shape[axis] = size;
  if (const Known *k = foldable(ctx, checkedNumElements(shape))) {
    ctx.setKnownOutput(out, knownSlice(*k, lo, st, shape), t.getElementType());
    return success();
  }
  OpChain c(ctx);
  Value x = c.input(0);
  if (size != t.getDimSize(axis)) {
    std::vector<int64_t> hi = shapeOf(t);
    hi[axis] = start + size;
    if (size == 0)
      lo[axis] = hi[axis] = 0;
    x = c.slice(x, lo, hi, st);
  }
  return c.output(out, x);
}

LogicalResult distopt::onnximport::splitOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  FailureOr<int64_t> axis =
      ctx.axis(ctx.attrInt("axis", 0), t.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t extent = t.getDimSize(*axis), n = ctx.numOutputs();
  std::vector<int64_t> sizes;
  if (ctx.opset >= 13 && ctx.hasInput(1)) {
    FailureOr<std::vector<int64_t>> k = ctx.knownInts(1, "the split sizes");
    if (failed(k))
      return failure();
    sizes = *k;
    if (ctx.hasAttr("num_outputs"))
      return ctx.error() << "takes either split sizes or num_outputs, not both";
  } else if (ctx.opset < 13) {
    sizes = ctx.attrInts("split");
  }
  if (sizes.empty()) {
    if (ctx.hasAttr("num_outputs")) {
      // Opset 18: equal parts of ceil(extent / num_outputs), the last smaller.
      int64_t parts = ctx.attrInt("num_outputs", n);
      if (parts != n || parts <= 0)
        return ctx.error() << "num_outputs is " << parts << " but the node has "
                           << n << " outputs";
      int64_t chunk = (extent + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i)
        sizes.push_back(
            std::max<int64_t>(0, std::min(chunk, extent - i * chunk)));
    } else {
      if (extent % n != 0)
        return ctx.error() << "dimension " << *axis << " of extent " << extent
                           << " does not split into " << n << " equal parts";
      sizes.assign(n, extent / n);
    }
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return ctx.error() << "split size " << s << " is negative";
    total += s;
  }
  if (total != extent || static_cast<int64_t>(sizes.size()) != n)
    return ctx.error() << "split sizes add up to " << total << " in "
                       << sizes.size() << " parts, but dimension " << *axis
                       << " has extent " << extent << " and the node has " << n
                       << " outputs";
  int64_t start = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (ctx.wantsOutput(i) &&
        failed(setAxisSlice(ctx, i, *axis, start, sizes[i])))
      return failure();
    start += sizes[i];
  }
  return success();
}

LogicalResult distopt::onnximport::sliceOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  int64_t rank = t.getRank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.attrInts("starts");
    ends = ctx.attrInts("ends");
    axes = ctx.attrInts("axes");
  } else {
    FailureOr<std::vector<int64_t>> s = ctx.knownInts(1, "starts");
    if (failed(s))
      return failure();
    FailureOr<std::vector<int64_t>> e = ctx.knownInts(2, "ends");
    if (failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (ctx.hasInput(3)) {
      FailureOr<std::vector<int64_t>> a = ctx.knownInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (ctx.hasInput(4)) {
      FailureOr<std::vector<int64_t>> st = ctx.knownInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || starts.size() != axes.size() ||
      steps.size() != starts.size())
    return ctx.error() << "starts, ends, axes and steps differ in length ("
                       << starts.size() << ", " << ends.size() << ", "
                       << axes.size() << ", " << steps.size() << ")";
  std::vector<int64_t> lo(rank, 0), hi = shapeOf(t), st(rank, 1);
  llvm::SmallBitVector seen(rank);
  for (size_t i = 0; i < axes.size(); ++i) {
    FailureOr<int64_t> a = ctx.axis(axes[i], rank, "axis");
    if (failed(a))
      return failure();
    if (seen[*a])
      return ctx.error() << "axis " << *a << " is sliced twice";
    seen.set(*a);
    if (steps[i] == 0)
      return ctx.error() << "the step of axis " << *a << " is zero";
    // A step longer than the dimension takes one element at most: clamp it
    // so that extent arithmetic cannot overflow.
    int64_t limit = t.getDimSize(*a) + 1;
    steps[i] = std::clamp<int64_t>(steps[i], -limit, limit);
    // ONNX: negative bounds count from the end; then starts clamp to
    // [0, extent] and ends to [0, extent] for positive steps, to
    // [0, extent - 1] and [-1, extent - 1] for negative ones.
    int64_t extent = t.getDimSize(*a), s = starts[i], e = ends[i];
    if (s < 0)
      s = s < -extent ? -1 : s + extent;
    if (e < 0)
      e = e < -extent ? -1 : e + extent;
    if (steps[i] > 0) {
      s = std::clamp<int64_t>(s, 0, extent);
      e = std::clamp<int64_t>(e, 0, extent);
    } else {
      s = std::clamp<int64_t>(s, 0, std::max<int64_t>(extent - 1, 0));
      e = std::clamp<int64_t>(e, -1, std::max<int64_t>(extent - 1, -1));
    }
    lo[*a] = s;
    hi[*a] = e;
    st[*a] = steps[i];
  }
  std::vector<int64_t> shape;
  bool whole = true;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = t.getDimSize(d) == 0 ? 0 : nn::sliceExtent(lo[d], hi[d], st[d]);
    if (n == 0) {
      // Nothing to take: a canonical empty slice.
      lo[d] = 0;
      hi[d] = 0;
    }
    shape.push_back(n);
    whole &= n == t.getDimSize(d) && st[d] == 1;
  }
  if (const Known *k = foldable(ctx, checkedNumElements(shape))) {
    ctx.setKnownOutput(0, knownSlice(*k, lo, st, shape), t.getElementType());
    return success();
  }
  OpChain c(ctx);
  Value x = c.input(0);
  return c.output(0, whole ? x : c.slice(x, lo, hi, st));
}

LogicalResult distopt::onnximport::gatherOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0), it = ctx.type(1);
  FailureOr<int64_t> axis =
      ctx.axis(ctx.attrInt("axis", 0), t.getRank(), "axis");
  if (failed(axis))
    return failure();
  if (!it.getElementType().isInteger(32) && !it.getElementType().isInteger(64))
    return ctx.error() << "indices must be int32 or int64, got "
                       << it.getElementType();
  int64_t extent = t.getDimSize(*axis);
  const Known *indices = ctx.known(1);
  if (indices)
    for (int64_t j = 0; j < indices->numElements(); ++j) {
      int64_t idx = indices->intAt(j);
      if (idx < -extent || idx >= extent)
        return ctx.error() << "index " << idx << " is out of range for extent "
                           << extent << " of dimension " << *axis;
    }
  int64_t outElements =
      t.getNumElements() / std::max<int64_t>(extent, 1) * it.getNumElements();
  if (indices && extent > 0)
    if (const Known *k = foldable(ctx, outElements)) {
      ctx.setKnownOutput(0, knownGather(*k, *indices, *axis),
                         t.getElementType());
      return success();
    }
  OpChain c(ctx);
  Value data = c.input(0), idx = c.input(1);
  return c.output(
      0, c.make<nn::GatherOp>(data, idx, ctx.b.getI64IntegerAttr(*axis)));
}

static LogicalResult checkIndexType(ImportContext &ctx, RankedTensorType it) {
  if (!it.getElementType().isInteger(32) && !it.getElementType().isInteger(64))
    return ctx.error() << "indices must be int32 or int64, got "
                       << it.getElementType();
  return success();
}

LogicalResult distopt::onnximport::gatherElementsOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0), it = ctx.type(1);
  FailureOr<int64_t> axis =
      ctx.axis(ctx.attrInt("axis", 0), t.getRank(), "axis");
  if (failed(axis) || failed(checkIndexType(ctx, it)))
    return failure();
  OpChain c(ctx);
  Value data = c.input(0), idx = c.input(1);
  return c.output(0, c.make<nn::GatherElementsOp>(
                         data, idx, ctx.b.getI64IntegerAttr(*axis)));
}

/// ScatterElements/ScatterND's `reduction`: none, add, mul (max and min
/// from opset 18).
static FailureOr<std::string> scatterReduction(ImportContext &ctx) {
  std::string reduction = ctx.attrString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" &&
      !(ctx.opset >= 18 && (reduction == "max" || reduction == "min")))
    return ctx.error() << "unknown reduction '" << reduction << "'";
  return reduction;
}

LogicalResult distopt::onnximport::scatterElementsOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0), it = ctx.type(1);
  FailureOr<int64_t> axis =
      ctx.axis(ctx.attrInt("axis", 0), t.getRank(), "axis");
  if (failed(axis) || failed(checkIndexType(ctx, it)))
    return failure();
  FailureOr<std::string> reduction = scatterReduction(ctx);
  if (failed(reduction))
    return failure();
  OpChain c(ctx);
  Value data = c.input(0), idx = c.input(1), updates = c.input(2);
  return c.output(0, c.make<nn::ScatterElementsOp>(
                         data, idx, updates, ctx.b.getI64IntegerAttr(*axis),
                         ctx.b.getStringAttr(*reduction)));
}

LogicalResult distopt::onnximport::cumSumOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  FailureOr<std::vector<int64_t>> a = ctx.knownInts(1, "the axis");
  if (failed(a))
    return failure();
  if (a->size() != 1)
    return ctx.error() << "axis must hold one value, got " << a->size();
  FailureOr<int64_t> axis =
      ctx.axis((*a)[0], std::max<int64_t>(t.getRank(), 1), "axis");
  if (failed(axis))
    return failure();
  auto flag = [&](const char *name) {
    return ctx.attrInt(name, 0) ? ctx.b.getUnitAttr() : UnitAttr();
  };
  OpChain c(ctx);
  Value x = c.input(0);
  return c.output(0, c.make<nn::CumSumOp>(x, ctx.b.getI64IntegerAttr(*axis),
                                          flag("exclusive"), flag("reverse")));
}

LogicalResult distopt::onnximport::oneHotOp(ImportContext &ctx) {
  RankedTensorType it = ctx.type(0), vt = ctx.type(2);
  FailureOr<const Known *> depthValue = ctx.requireKnown(1, "the depth");
  if (failed(depthValue))
    return failure();
  if ((*depthValue)->numElements() != 1)
    return ctx.error() << "depth must hold one value, got "
                       << (*depthValue)->numElements();
  // A float depth is truncated to an integer, as ONNX says.
  double d = (*depthValue)->at(0);
  if (!std::isfinite(d) || std::fabs(d) > 1e15)
    return ctx.error() << "depth must be a positive integer below 10^15";
  int64_t depth = static_cast<int64_t>(d);
  if (depth < 1)
    return ctx.error() << "depth must be positive, got " << depth;
  SmallVector<int64_t> shape(it.getShape());
  shape.push_back(depth);
  if (checkedNumElements(shape) < 0)
    return ctx.error() << "depth " << depth
                       << " gives a result too large to hold";
  if (vt.getShape() != ArrayRef<int64_t>{2})
    return ctx.error() << "values must be [off, on] (2 elements), got " << vt;
  FailureOr<int64_t> axis =
      ctx.axis(ctx.attrInt("axis", -1), it.getRank() + 1, "axis");
  if (failed(axis))
    return failure();
  OpChain c(ctx);
  Value idx = c.input(0), values = c.input(2);
  // Non-integer indices are cast to int64 (truncated) first, as ONNX says.
  if (!c.failed() && !it.getElementType().isInteger(32) &&
      !it.getElementType().isInteger(64))
    idx = c.typed<nn::CastOp>(it.clone(ctx.b.getI64Type()), idx);
  return c.output(0, c.make<nn::OneHotOp>(idx, values,
                                          ctx.b.getI64IntegerAttr(depth),
                                          ctx.b.getI64IntegerAttr(*axis)));
}

/// Shared by Expand and Tile: `x` broadcast to `shape` (no op if it has it).
static Value expand(OpChain &c, Value x, ArrayRef<int64_t> shape) {
  if (c.failed())
    return {};
  auto t = cast<RankedTensorType>(x.getType());
  return t.getShape() == shape ? x : c.typed<nn::ExpandOp>(t.clone(shape), x);
}

LogicalResult distopt::onnximport::expandOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  FailureOr<std::vector<int64_t>> target = ctx.knownInts(1, "the target shape");
  if (failed(target))
    return failure();
  for (int64_t d : *target)
    if (d < 0)
      return ctx.error() << "the target shape has a negative entry " << d;
  auto shape = broadcast(t.getShape(), *target);
  if (!shape || checkedNumElements(*shape) < 0)
    return ctx.error() << "cannot expand " << t << " to shape ["
                       << listString(*target) << "]";
  if (const Known *k = foldable(ctx, checkedNumElements(*shape))) {
    ctx.setKnownOutput(0, knownBroadcast(*k, *shape), t.getElementType());
    return success();
  }
  OpChain c(ctx);
  return c.output(0, expand(c, c.input(0), *shape));
}

/// Tile: [d0, d1] -> reshape [1, d0, 1, d1] -> expand [r0, d0, r1, d1] ->
/// reshape [r0*d0, r1*d1].
LogicalResult distopt::onnximport::tileOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  FailureOr<std::vector<int64_t>> reps = ctx.knownInts(1, "repeats");
  if (failed(reps))
    return failure();
  if (static_cast<int64_t>(reps->size()) != t.getRank())
    return ctx.error() << "repeats has " << reps->size() << " entries for rank "
                       << t.getRank();
  std::vector<int64_t> split, expanded, out;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    if ((*reps)[d] < 0)
      return ctx.error() << "repeats has a negative entry " << (*reps)[d];
    split.insert(split.end(), {1, t.getDimSize(d)});
    expanded.insert(expanded.end(), {(*reps)[d], t.getDimSize(d)});
    out.push_back((*reps)[d] * t.getDimSize(d));
  }
  int64_t n = checkedNumElements(expanded);
  if (n < 0)
    return ctx.error() << "the result is too large";
  if (const Known *k = foldable(ctx, n)) {
    Known e = knownBroadcast(knownReshape(*k, split), expanded);
    ctx.setKnownOutput(0, knownReshape(e, out), t.getElementType());
    return success();
  }
  OpChain c(ctx);
  Value x = c.input(0);
  if (llvm::all_of(*reps, [](int64_t r) { return r == 1; }))
    return c.output(0, x);
  Value e = expand(c, c.reshape(x, split), expanded);
  return c.output(0, c.reshape(e, out));
}

LogicalResult distopt::onnximport::padOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  int64_t rank = t.getRank();
  std::vector<int64_t> pads;
  double value = 0;
  if (ctx.opset < 11) {
    pads = ctx.attrInts("pads");
    value = ctx.attrFloat("value", 0);
  } else {
    FailureOr<std::vector<int64_t>> p = ctx.knownInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (ctx.hasInput(2)) {
      FailureOr<const Known *> k = ctx.requireKnown(2, "the pad value");
      if (failed(k))
        return failure();
      if ((*k)->numElements() > 1)
        return ctx.error() << "the pad value must be a scalar";
      value = (*k)->numElements() ? (*k)->at(0) : 0;
    }
    if (ctx.hasInput(3)) {
      // Opset 18: pads for the listed axes only.
      FailureOr<std::vector<int64_t>> axes = ctx.knownInts(3, "axes");
      if (failed(axes))
        return failure();
      int64_t n = axes->size();
      if (static_cast<int64_t>(pads.size()) != 2 * n)
        return ctx.error() << "pads has " << pads.size() << " entries for " << n
                           << " axes";
      std::vector<int64_t> full(2 * rank, 0);
      for (int64_t i = 0; i < n; ++i) {
        FailureOr<int64_t> a = ctx.axis((*axes)[i], rank, "axis");
        if (failed(a))
          return failure();
        full[*a] = pads[i];
        full[*a + rank] = pads[i + n];
      }
      pads = full;
    }
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return ctx.error() << "pads has " << pads.size() << " entries for rank "
                       << rank << " (expected " << 2 * rank << ")";
  std::string mode = ctx.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return ctx.error() << "pad mode '" << mode << "' is not supported";
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; })) {
    ctx.setOutput(0, *x);
    return success();
  }
  for (int64_t d = 0; d < rank; ++d) {
    __int128 extent = __int128(t.getDimSize(d)) + pads[d] + pads[d + rank];
    if (extent < 0 || extent > INT32_MAX)
      return ctx.error() << "pads make dimension " << d
                         << (extent < 0 ? " negative" : " too large");
    if (mode == "reflect" &&
        (pads[d] >= t.getDimSize(d) || pads[d + rank] >= t.getDimSize(d)))
      return ctx.error() << "reflect padding of dimension " << d
                         << " must be smaller than its extent "
                         << t.getDimSize(d);
  }
  OpChain c(ctx);
  return c.output(0, c.make<nn::PadOp>(*x, ctx.b.getDenseI64ArrayAttr(pads),
                                       ctx.b.getStringAttr(mode),
                                       ctx.b.getF64FloatAttr(value)));
}

/// Trilu: the upper (or lower) triangle of the last two dimensions, the rest
/// zero: a where with a constant mask (folded when the input is known).
LogicalResult distopt::onnximport::triluOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  if (t.getRank() < 2)
    return ctx.error() << "needs an input of rank 2 or more, got " << t;
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    FailureOr<std::vector<int64_t>> kv = ctx.knownInts(1, "k");
    if (failed(kv))
      return failure();
    if (kv->size() != 1)
      return ctx.error() << "k must be a scalar";
    k = (*kv)[0];
  }
  bool upper = ctx.attrInt("upper", 1) != 0;
  int64_t rows = t.getDimSize(t.getRank() - 2),
          cols = t.getDimSize(t.getRank() - 1);
  if (checkedNumElements({rows, cols}) > (int64_t(1) << 26))
    return ctx.error() << "the mask of " << rows << "x" << cols
                       << " is too large to hold in the IR";
  std::vector<int64_t> mask;
  mask.reserve(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      __int128 diff = __int128(j) - i;
      mask.push_back(upper ? diff >= k : diff <= k);
    }
  Known maskK = Known::ofInts({rows, cols}, mask);
  if (const Known *x = foldable(ctx, t.getNumElements())) {
    Known out = *x;
    int64_t plane = rows * cols;
    for (int64_t i = 0, e = out.numElements(); i < e; ++i)
      if (plane && !mask[i % plane]) {
        if (out.isFloat)
          out.floats[i] = 0;
        else
          out.ints[i] = 0;
      }
    ctx.setKnownOutput(0, std::move(out), t.getElementType());
    return success();
  }
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  Value m = ctx.materialize(maskK, ctx.b.getI1Type());
  OpChain c(ctx);
  return c.output(0, c.make<nn::WhereOp>(m, *x, c.scalarLike(0.0, *x)));
}

/// DepthToSpace and SpaceToDepth on [N, C, H, W]: a reshape that splits
/// the moved blocks out, a transpose that puts them in place, a reshape
/// that merges them. DepthToSpace reads channels as (block row, block
/// column, channel) in mode DCR (the default) and (channel, block row,
/// block column) in mode CRD.
LogicalResult distopt::onnximport::depthToSpaceOp(ImportContext &ctx) {
  bool toSpace = ctx.node.op_type() == "DepthToSpace";
  RankedTensorType t = ctx.type(0);
  if (t.getRank() != 4 || !t.hasStaticShape())
    return ctx.error() << "needs a static [N, C, H, W] input, got " << t;
  int64_t b = ctx.attrInt("blocksize", 0);
  int64_t n = t.getDimSize(0), ch = t.getDimSize(1), h = t.getDimSize(2),
          w = t.getDimSize(3);
  if (b < 1)
    return ctx.error() << "blocksize must be positive, got " << b;
  OpChain c(ctx);
  Value x = c.input(0);
  auto perm = [&](ArrayRef<int64_t> p) {
    return c.make<nn::TransposeOp>(x, ctx.b.getDenseI64ArrayAttr(p));
  };
  if (toSpace) {
    if (ch % (b * b))
      return ctx.error() << "channels " << ch << " do not divide by blocksize "
                         << b << " squared";
    std::string mode = ctx.attrString("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      return ctx.error() << "mode must be DCR or CRD, got '" << mode << "'";
    int64_t c2 = ch / (b * b);
    if (mode == "DCR") {
      x = c.reshape(x, {n, b, b, c2, h, w});
      x = perm({0, 3, 4, 1, 5, 2});
    } else {
      x = c.reshape(x, {n, c2, b, b, h, w});
      x = perm({0, 1, 4, 2, 5, 3});
    }
    return c.output(0, c.reshape(x, {n, c2, h * b, w * b}));
  }
  if (h % b || w % b)
    return ctx.error() << "height " << h << " and width " << w
                       << " must divide by blocksize " << b;
  x = c.reshape(x, {n, ch, h / b, b, w / b, b});
  x = perm({0, 3, 5, 1, 2, 4});
  return c.output(0, c.reshape(x, {n, ch * b * b, h / b, w / b}));
}

/// EyeLike: ones on the k-th diagonal of a 2-D shape, zeros elsewhere, of
/// `dtype` (default: the input's type); a constant, since only the input's
/// shape is read.
LogicalResult distopt::onnximport::eyeLikeOp(ImportContext &ctx) {
  RankedTensorType t = ctx.type(0);
  if (t.getRank() != 2 || !t.hasStaticShape())
    return ctx.error() << "needs a static 2-D input, got " << t;
  Type et = t.getElementType();
  if (ctx.hasAttr("dtype")) {
    et = elementTypeOfOnnx(ctx.b.getContext(), ctx.attrInt("dtype", 0));
    if (!et)
      return ctx.error() << "dtype " << ctx.attrInt("dtype", 0)
                         << " is not supported";
  }
  int64_t rows = t.getDimSize(0), cols = t.getDimSize(1);
  int64_t k = ctx.attrInt("k", 0);
  if (checkedNumElements({rows, cols}) > kMaxFoldElements)
    return ctx.error() << "a " << rows << "x" << cols
                       << " identity is too large to hold in the IR";
  std::vector<int64_t> eye(rows * cols, 0);
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols)
      eye[i * cols + i + k] = 1;
  Known out = isa<FloatType>(et)
                  ? Known::ofFloats({rows, cols}, std::vector<double>(
                                                      eye.begin(), eye.end()))
                  : Known::ofInts({rows, cols}, eye);
  ctx.setKnownOutput(0, std::move(out), et);
  return success();
}

LogicalResult distopt::onnximport::gatherNDOp(ImportContext &ctx) {
  if (failed(checkIndexType(ctx, ctx.type(1))))
    return failure();
  OpChain c(ctx);
  Value data = c.input(0), idx = c.input(1);
  return c.output(0, c.make<nn::GatherNDOp>(
                         data, idx,
                         ctx.b.getI64IntegerAttr(ctx.attrInt("batch_dims", 0))));
}

LogicalResult distopt::onnximport::scatterNDOp(ImportContext &ctx) {
  if (failed(checkIndexType(ctx, ctx.type(1))))
    return failure();
  FailureOr<std::string> reduction = scatterReduction(ctx);
  if (failed(reduction))
    return failure();
  OpChain c(ctx);
  Value data = c.input(0), idx = c.input(1), updates = c.input(2);
  return c.output(0, c.make<nn::ScatterNDOp>(data, idx, updates,
                                             ctx.b.getStringAttr(*reduction)));
}

/// ReverseSequence: a gather_elements along the time axis at
/// t < len[b] ? len[b] - 1 - t : t, the index table built from the lengths
/// at run time.
LogicalResult distopt::onnximport::reverseSequenceOp(ImportContext &ctx) {
  FailureOr<Value> in = ctx.value(0), lensIn = ctx.value(1);
  if (failed(in) || failed(lensIn))
    return failure();
  auto t = cast<RankedTensorType>(in->getType());
  auto lt = cast<RankedTensorType>(lensIn->getType());
  int64_t batchAxis = ctx.attrInt("batch_axis", 1);
  int64_t timeAxis = ctx.attrInt("time_axis", 0);
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0)))
    return ctx.error() << "batch_axis and time_axis must be 0 and 1 (either "
                          "way), got "
                       << batchAxis << " and " << timeAxis;
  if (t.getRank() < 2 || !t.hasStaticShape())
    return ctx.error() << "needs a static input of rank 2 or more, got " << t;
  int64_t steps = t.getDimSize(timeAxis), batch = t.getDimSize(batchAxis);
  if (lt.getRank() != 1 || lt.getDimSize(0) != batch ||
      !lt.getElementType().isInteger(64))
    return ctx.error() << "sequence_lens must be int64 [" << batch
                       << "] (the batch), got " << lt;
  Type i64 = ctx.b.getI64Type();
  // The table has the input's rank: time and batch extents in place, 1
  // elsewhere, then broadcast to the input's shape.
  std::vector<int64_t> timeShape(t.getRank(), 1), lenShape(t.getRank(), 1);
  timeShape[timeAxis] = steps;
  lenShape[batchAxis] = batch;
  std::vector<int64_t> iota(steps);
  for (int64_t i = 0; i < steps; ++i)
    iota[i] = i;
  OpChain c(ctx);
  Value time = ctx.materialize(Known::ofInts(timeShape, iota), i64);
  Value lens = c.reshape(*lensIn, lenShape);
  Value reversed =
      c.make<nn::SubOp>(c.make<nn::SubOp>(lens, c.scalarLike(1, lens)), time);
  Value inside = c.make<nn::LessOp>(time, lens);
  Value table = c.make<nn::WhereOp>(inside, reversed, time);
  if (c.failed())
    return failure();
  Value index = expand(c, table, t.getShape());
  return c.output(0, c.make<nn::GatherElementsOp>(
                         *in, index, ctx.b.getI64IntegerAttr(timeAxis)));
}

/// HannWindow, HammingWindow, BlackmanWindow: a generalised cosine window
/// a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) over n = 0 .. size-1, with
/// N = size (periodic) or size - 1 (symmetric). The size must be known at
/// import; the cosines are computed by the program, in f64, then cast.
LogicalResult distopt::onnximport::windowOp(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  FailureOr<std::vector<int64_t>> size = ctx.knownInts(0, "the window size");
  if (failed(size))
    return failure();
  if (size->size() != 1 || (*size)[0] < 1 || (*size)[0] > kMaxFoldElements)
    return ctx.error() << "the window size must be one value in [1, "
                       << kMaxFoldElements << "]";
  int64_t n = (*size)[0];
  int64_t to = ctx.attrInt("output_datatype", 1);
  Type et = elementTypeOfOnnx(ctx.b.getContext(), to);
  if (!et)
    return ctx.error() << "output_datatype " << dataTypeName(to)
                       << " is not supported";
  double a0, a1, a2 = 0;
  if (op == "HannWindow") {
    a0 = 0.5, a1 = 0.5;
  } else if (op == "HammingWindow") {
    a0 = 25.0 / 46.0, a1 = 1 - a0;
  } else {
    a0 = 0.42, a1 = 0.5, a2 = 0.08;
  }
  double denom = ctx.attrInt("periodic", 1) ? double(n) : double(n - 1);
  std::vector<double> iota(n);
  for (int64_t i = 0; i < n; ++i)
    iota[i] = double(i);
  Type f64 = ctx.b.getF64Type();
  OpChain c(ctx);
  Value idx = ctx.materialize(Known::ofFloats({n}, iota), f64);
  // A one-element symmetric window divides by zero: its value is a0 - a1 + a2
  // in ONNX's reference too (cos(nan) aside), so use n = 0's angle.
  double step = denom > 0 ? 2 * M_PI / denom : 0;
  Value angle = c.make<nn::MulOp>(idx, c.scalarLike(step, idx));
  Value w = c.make<nn::SubOp>(
      c.scalarLike(a0, idx),
      c.make<nn::MulOp>(c.scalarLike(a1, idx), c.make<nn::CosOp>(angle)));
  if (a2 != 0) {
    Value twice = c.make<nn::MulOp>(angle, c.scalarLike(2, idx));
    w = c.make<nn::AddOp>(
        w, c.make<nn::MulOp>(c.scalarLike(a2, idx), c.make<nn::CosOp>(twice)));
  }
  if (et != f64)
    w = c.typed<nn::CastOp>(RankedTensorType::get({n}, et), w);
  return c.output(0, w);
}
