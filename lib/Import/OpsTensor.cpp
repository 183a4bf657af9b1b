//===- OpsTensor.cpp - ONNX data-movement and constant ops ------*- C++ -*-===//
#include "ImportContext.h"

#include "nn/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"

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

LogicalResult transposeOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  std::vector<int64_t> perm = ctx.attrInts("perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank)
    return ctx.error() << "perm has " << perm.size() << " entries for rank " << rank;
  std::vector<bool> seen(rank, false);
  for (int64_t &p : perm) {
    if (p < 0)
      p += rank;
    if (p < 0 || p >= rank || seen[p])
      return ctx.error() << "perm is not a permutation of 0.." << rank - 1;
    seen[p] = true;
  }
  ctx.setOutput(0, nn::TransposeOp::create(ctx.b, ctx.loc, *x,
                                           ctx.b.getDenseI64ArrayAttr(perm)));
  return success();
}

LogicalResult reshapeOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  std::vector<int64_t> target;
  if (ctx.opset < 5) {
    target = ctx.attrInts("shape");
  } else {
    auto k = ctx.knownInts(1, "the target shape");
    if (failed(k))
      return failure();
    target = *k;
  }
  bool allowZero = ctx.attrInt("allowzero", 0) != 0;
  int64_t inferred = -1, product = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= static_cast<size_t>(t.getRank()))
        return ctx.error() << "shape entry " << i << " is 0 (copy) but the input has rank "
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
      return ctx.error() << "shape entry " << i << " is " << target[i];
    product *= target[i];
  }
  if (inferred >= 0) {
    if (product == 0 || t.getNumElements() % product != 0)
      return ctx.error() << "cannot infer the -1 entry: " << t.getNumElements()
                         << " elements do not divide by " << product;
    target[inferred] = t.getNumElements() / product;
    product *= target[inferred];
  }
  if (product != t.getNumElements())
    return ctx.error() << "cannot reshape " << t << " (" << t.getNumElements()
                       << " elements) to " << product << " elements";
  ctx.setOutput(0, reshapeTo(ctx, *x, target));
  return success();
}

LogicalResult flattenOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < 0)
    axis += t.getRank();
  if (axis < 0 || axis > t.getRank())
    return ctx.error() << "axis " << ctx.attrInt("axis", 1) << " is out of range";
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < t.getRank(); ++d)
    (d < axis ? a : b) *= t.getDimSize(d);
  ctx.setOutput(0, reshapeTo(ctx, *x, {a, b}));
  return success();
}

FailureOr<std::vector<int64_t>> axesOf(ImportContext &ctx, int64_t inputOpset) {
  if (ctx.opset >= inputOpset) {
    if (!ctx.hasInput(1))
      return std::vector<int64_t>();
    return ctx.knownInts(1, "axes");
  }
  return ctx.attrInts("axes");
}

LogicalResult squeezeOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  auto axes = axesOf(ctx, 13);
  if (failed(axes))
    return failure();
  std::vector<int64_t> shape;
  for (int64_t &a : *axes) {
    FailureOr<int64_t> n = ctx.axis(a, t.getRank(), "axis");
    if (failed(n))
      return failure();
    if (t.getDimSize(*n) != 1)
      return ctx.error() << "cannot squeeze dimension " << *n << " of extent "
                         << t.getDimSize(*n);
    a = *n;
  }
  for (int64_t d = 0; d < t.getRank(); ++d) {
    bool drop = axes->empty() ? t.getDimSize(d) == 1 : llvm::is_contained(*axes, d);
    if (!drop)
      shape.push_back(t.getDimSize(d));
  }
  ctx.setOutput(0, reshapeTo(ctx, *x, shape));
  return success();
}

LogicalResult unsqueezeOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  auto axes = axesOf(ctx, 13);
  if (failed(axes))
    return failure();
  int64_t rank = t.getRank() + axes->size();
  for (int64_t &a : *axes) {
    FailureOr<int64_t> n = ctx.axis(a, rank, "axis");
    if (failed(n))
      return failure();
    a = *n;
  }
  std::sort(axes->begin(), axes->end());
  std::vector<int64_t> shape(t.getShape().begin(), t.getShape().end());
  for (int64_t a : *axes)
    shape.insert(shape.begin() + a, 1);
  ctx.setOutput(0, reshapeTo(ctx, *x, shape));
  return success();
}

LogicalResult concatOp(ImportContext &ctx) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    FailureOr<Value> v = ctx.value(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  auto t = cast<RankedTensorType>(inputs[0].getType());
  FailureOr<int64_t> axis = ctx.axis(ctx.attrInt("axis", 0), t.getRank(), "axis");
  if (failed(axis))
    return failure();
  ctx.setOutput(0, nn::ConcatOp::create(ctx.b, ctx.loc, inputs,
                                        ctx.b.getI64IntegerAttr(*axis)));
  return success();
}

Value sliceRange(ImportContext &ctx, Value x, int64_t axis, int64_t start,
                 int64_t end) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> starts(t.getRank(), 0), ends(t.getShape()),
      steps(t.getRank(), 1);
  starts[axis] = start;
  ends[axis] = end;
  return nn::SliceOp::create(ctx.b, ctx.loc, x, ctx.b.getDenseI64ArrayAttr(starts),
                             ctx.b.getDenseI64ArrayAttr(ends),
                             ctx.b.getDenseI64ArrayAttr(steps));
}

LogicalResult splitOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis = ctx.axis(ctx.attrInt("axis", 0), t.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t extent = t.getDimSize(*axis);
  std::vector<int64_t> sizes;
  if (ctx.opset >= 13 && ctx.hasInput(1)) {
    auto k = ctx.knownInts(1, "the split sizes");
    if (failed(k))
      return failure();
    sizes = *k;
  } else if (ctx.opset < 13) {
    sizes = ctx.attrInts("split");
  }
  int64_t n = ctx.numOutputs();
  if (sizes.empty()) {
    int64_t parts = ctx.attrInt("num_outputs", n);
    int64_t chunk = (extent + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::min(chunk, extent - i * chunk));
  }
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  if (total != extent || static_cast<int64_t>(sizes.size()) != n)
    return ctx.error() << "split sizes add up to " << total << " in "
                       << sizes.size() << " parts, but dimension " << *axis
                       << " has extent " << extent << " and the node has " << n
                       << " outputs";
  int64_t start = 0;
  for (int64_t i = 0; i < n; ++i) {
    ctx.setOutput(i, sliceRange(ctx, *x, *axis, start, start + sizes[i]));
    start += sizes[i];
  }
  return success();
}

LogicalResult sliceOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  int64_t rank = t.getRank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.attrInts("starts");
    ends = ctx.attrInts("ends");
    axes = ctx.attrInts("axes");
  } else {
    auto s = ctx.knownInts(1, "starts"), e = ctx.knownInts(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (ctx.hasInput(3)) {
      auto a = ctx.knownInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (ctx.hasInput(4)) {
      auto st = ctx.knownInts(4, "steps");
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
    return ctx.error() << "starts, ends, axes and steps differ in length";
  SmallVector<int64_t> lo(rank, 0), hi(t.getShape()), st(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    FailureOr<int64_t> a = ctx.axis(axes[i], rank, "axis");
    if (failed(a))
      return failure();
    if (steps[i] == 0)
      return ctx.error() << "step of axis " << *a << " is zero";
    int64_t extent = t.getDimSize(*a), s = starts[i], e = ends[i];
    if (s < 0)
      s += extent;
    if (e < 0)
      e += extent;
    if (steps[i] > 0) {
      s = std::clamp<int64_t>(s, 0, extent);
      e = std::clamp<int64_t>(e, 0, extent);
    } else {
      s = std::clamp<int64_t>(s, 0, extent - 1);
      e = std::clamp<int64_t>(e, -1, extent - 1);
    }
    lo[*a] = s;
    hi[*a] = e;
    st[*a] = steps[i];
  }
  // A start at the end of a dimension with nothing to take: an empty slice.
  for (int64_t d = 0; d < rank; ++d)
    if (st[d] > 0 && lo[d] >= hi[d]) {
      lo[d] = 0;
      hi[d] = 0;
    }
  ctx.setOutput(0, nn::SliceOp::create(ctx.b, ctx.loc, *x,
                                       ctx.b.getDenseI64ArrayAttr(lo),
                                       ctx.b.getDenseI64ArrayAttr(hi),
                                       ctx.b.getDenseI64ArrayAttr(st)));
  return success();
}

LogicalResult gatherOp(ImportContext &ctx) {
  FailureOr<Value> data = ctx.value(0), idx = ctx.value(1);
  if (failed(data) || failed(idx))
    return failure();
  auto t = cast<RankedTensorType>(data->getType());
  FailureOr<int64_t> axis = ctx.axis(ctx.attrInt("axis", 0), t.getRank(), "axis");
  if (failed(axis))
    return failure();
  ctx.setOutput(0, nn::GatherOp::create(ctx.b, ctx.loc, *data, *idx,
                                        ctx.b.getI64IntegerAttr(*axis)));
  return success();
}

LogicalResult expandOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto target = ctx.knownInts(1, "the target shape");
  if (failed(target))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  auto shape = broadcast(t.getShape(), *target);
  if (!shape)
    return ctx.error() << "cannot expand " << t << " to the given shape";
  if (ArrayRef<int64_t>(*shape) == t.getShape()) {
    ctx.setOutput(0, *x);
    return success();
  }
  ctx.setOutput(0, nn::ExpandOp::create(ctx.b, ctx.loc, t.clone(*shape), *x));
  return success();
}

LogicalResult tileOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto reps = ctx.knownInts(1, "repeats");
  if (failed(reps))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  if (static_cast<int64_t>(reps->size()) != t.getRank())
    return ctx.error() << "repeats has " << reps->size() << " entries for rank "
                       << t.getRank();
  // [d0, d1] -> [1, d0, 1, d1] -> [r0, d0, r1, d1] -> [r0*d0, r1*d1].
  SmallVector<int64_t> split, expanded, out;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    split.append({1, t.getDimSize(d)});
    expanded.append({(*reps)[d], t.getDimSize(d)});
    out.push_back((*reps)[d] * t.getDimSize(d));
  }
  Value v = reshapeTo(ctx, *x, split);
  v = nn::ExpandOp::create(ctx.b, ctx.loc, t.clone(expanded), v);
  ctx.setOutput(0, reshapeTo(ctx, v, out));
  return success();
}

LogicalResult padOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  int64_t rank = t.getRank();
  std::vector<int64_t> pads;
  double value = 0;
  if (ctx.opset < 11) {
    pads = ctx.attrInts("pads");
    value = ctx.attrFloat("value", 0);
  } else {
    auto p = ctx.knownInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (ctx.hasInput(2)) {
      const Known *k = ctx.known(2);
      if (!k)
        return ctx.error() << "the pad value must be known when importing";
      value = k->numElements() ? k->at(0) : 0;
    }
    if (ctx.hasInput(3)) {
      // Pads for some axes only (opset 18): spread them over all dims.
      auto axes = ctx.knownInts(3, "axes");
      if (failed(axes))
        return failure();
      std::vector<int64_t> full(2 * rank, 0);
      int64_t n = axes->size();
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
  ctx.setOutput(0, nn::PadOp::create(ctx.b, ctx.loc, *x,
                                     ctx.b.getDenseI64ArrayAttr(pads),
                                     ctx.b.getStringAttr(mode),
                                     ctx.b.getF64FloatAttr(value)));
  return success();
}

LogicalResult rangeOp(ImportContext &ctx) {
  // Folded when its inputs are known; otherwise the length is unknown.
  return ctx.error() << "Range needs start, limit and delta known when "
                        "importing (bind symbolic dimensions with --dim)";
}

LogicalResult constantOfShapeOp(ImportContext &ctx) {
  auto shape = ctx.knownInts(0, "the shape");
  if (failed(shape))
    return failure();
  Type et = ctx.b.getF32Type();
  Attribute v = FloatAttr::get(et, 0.0);
  if (const onnx::AttributeProto *a = ctx.attr("value")) {
    et = elementTypeOf(ctx.b.getContext(), a->t().data_type());
    if (!et)
      return ctx.error() << "unsupported value type";
    const onnx::TensorProto &tp = a->t();
    double x = tp.float_data_size() ? tp.float_data(0)
               : tp.int64_data_size() ? tp.int64_data(0)
               : tp.int32_data_size() ? tp.int32_data(0)
                                      : 0;
    if (!tp.raw_data().empty() && et.isF32()) {
      float f;
      std::memcpy(&f, tp.raw_data().data(), 4);
      x = f;
    } else if (!tp.raw_data().empty() && et.isInteger(64)) {
      int64_t i;
      std::memcpy(&i, tp.raw_data().data(), 8);
      x = i;
    }
    v = isa<FloatType>(et) ? Attribute(FloatAttr::get(et, x))
                           : Attribute(IntegerAttr::get(et, static_cast<int64_t>(x)));
  }
  auto type = RankedTensorType::get(*shape, et);
  ctx.setOutput(0, nn::ConstantOp::create(ctx.b, ctx.loc, type,
                                          DenseElementsAttr::get(type, v)));
  return success();
}

} // namespace

void distopt::onnximport::addTensorHandlers(llvm::StringMap<Handler> &t) {
  t["Transpose"] = transposeOp;
  t["Reshape"] = reshapeOp;
  t["Flatten"] = flattenOp;
  t["Squeeze"] = squeezeOp;
  t["Unsqueeze"] = unsqueezeOp;
  t["Concat"] = concatOp;
  t["Split"] = splitOp;
  t["Slice"] = sliceOp;
  t["Gather"] = gatherOp;
  t["Expand"] = expandOp;
  t["Tile"] = tileOp;
  t["Pad"] = padOp;
  t["Range"] = rangeOp;
  t["ConstantOfShape"] = constantOfShapeOp;
}
