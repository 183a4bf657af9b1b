//===- KnownFolding.cpp - evaluate shape arithmetic at import ---*- C++ -*-===//
//
// Exported graphs compute shapes at run time (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape, Range over a sequence length, ...). With static shapes
// all of it is known at import; this evaluates such nodes on small known
// tensors so that only real computation becomes nn ops.
//
//===----------------------------------------------------------------------===//
#include "ImportContext.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace distopt::onnximport;

namespace {

std::vector<int64_t> strides(ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// Element `flat` of `out` (shape `outShape`) read from `in` broadcast to it.
int64_t broadcastIndex(int64_t flat, ArrayRef<int64_t> outShape,
                       ArrayRef<int64_t> inShape) {
  std::vector<int64_t> os = strides(outShape), is = strides(inShape);
  int64_t lead = outShape.size() - inShape.size(), idx = 0;
  for (size_t d = 0; d < outShape.size(); ++d) {
    int64_t coord = (flat / os[d]) % outShape[d];
    if (static_cast<int64_t>(d) >= lead && inShape[d - lead] != 1)
      idx += coord * is[d - lead];
  }
  return idx;
}

Known withValues(const std::vector<int64_t> &shape, bool isFloat,
                 const std::function<double(int64_t)> &f) {
  Known k;
  k.shape = shape;
  k.isFloat = isFloat;
  int64_t n = k.numElements();
  for (int64_t i = 0; i < n; ++i) {
    if (isFloat)
      k.floats.push_back(f(i));
    else
      k.ints.push_back(static_cast<int64_t>(f(i)));
  }
  return k;
}

std::optional<Known> binary(const Known &a, const Known &b, bool resultFloat,
                            const std::function<double(double, double)> &f) {
  auto shape = broadcast(a.shape, b.shape);
  if (!shape)
    return std::nullopt;
  return withValues(*shape, resultFloat, [&](int64_t i) {
    return f(a.at(broadcastIndex(i, *shape, a.shape)),
             b.at(broadcastIndex(i, *shape, b.shape)));
  });
}

/// Elements of `k` gathered along `axis` at `indices`.
Known gather(const Known &k, const Known &indices, int64_t axis) {
  std::vector<int64_t> shape(k.shape.begin(), k.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), k.shape.begin() + axis + 1, k.shape.end());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= k.shape[d];
  for (size_t d = axis + 1; d < k.shape.size(); ++d)
    inner *= k.shape[d];
  int64_t extent = k.shape[axis], n = indices.numElements();
  Known out;
  out.shape = shape;
  out.isFloat = k.isFloat;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) {
      int64_t idx = indices.intAt(j);
      if (idx < 0)
        idx += extent;
      for (int64_t i = 0; i < inner; ++i) {
        int64_t src = (o * extent + idx) * inner + i;
        if (k.isFloat)
          out.floats.push_back(k.floats[src]);
        else
          out.ints.push_back(k.ints[src]);
      }
    }
  return out;
}

bool isFloatType(Type t) { return isa<FloatType>(t); }

/// Clamps ONNX slice bounds for one dimension; returns (start, end).
std::pair<int64_t, int64_t> clampSlice(int64_t start, int64_t end,
                                       int64_t step, int64_t extent) {
  if (start < 0)
    start += extent;
  if (end < 0)
    end += extent;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, extent);
    end = std::clamp<int64_t>(end, 0, extent);
  } else {
    start = std::clamp<int64_t>(start, 0, extent - 1);
    end = std::clamp<int64_t>(end, -1, extent - 1);
  }
  return {start, end};
}

} // namespace

std::optional<LogicalResult> distopt::onnximport::tryFold(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  // Shape and Size need only the static type.
  if (op == "Shape" || op == "Size") {
    RankedTensorType t = ctx.type(0);
    if (!t)
      return std::nullopt;
    std::vector<int64_t> dims(t.getShape().begin(), t.getShape().end());
    if (op == "Size") {
      int64_t n = 1;
      for (int64_t d : dims)
        n *= d;
      ctx.setKnownOutput(0, Known::ofInts({}, {n}), ctx.b.getI64Type());
      return success();
    }
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
    ctx.setKnownOutput(0, Known::ofInts({n}, part), ctx.b.getI64Type());
    return success();
  }

  // Everything else folds only when every input is known and small.
  std::vector<const Known *> in;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) {
      in.push_back(nullptr);
      continue;
    }
    const Known *k = ctx.known(i);
    if (!k || k->numElements() > kMaxFoldElements)
      return std::nullopt;
    in.push_back(k);
  }
  if (in.empty() || !in[0])
    return std::nullopt;
  Type et = ctx.type(0).getElementType();
  bool fl = isFloatType(et);
  Type i1 = ctx.b.getI1Type();
  auto done = [&](Known k, Type t) -> std::optional<LogicalResult> {
    k.isFloat = isFloatType(t);
    if (k.isFloat && k.floats.empty() && !k.ints.empty())
      k.floats.assign(k.ints.begin(), k.ints.end());
    ctx.setKnownOutput(0, std::move(k), t);
    return success();
  };

  static const llvm::StringMap<std::function<double(double, double)>> arith = {
      {"Add", [](double a, double b) { return a + b; }},
      {"Sub", [](double a, double b) { return a - b; }},
      {"Mul", [](double a, double b) { return a * b; }},
      {"Max", [](double a, double b) { return std::max(a, b); }},
      {"Min", [](double a, double b) { return std::min(a, b); }},
      {"Pow", [](double a, double b) { return std::pow(a, b); }}};
  static const llvm::StringMap<std::function<double(double, double)>> compare = {
      {"Equal", [](double a, double b) { return double(a == b); }},
      {"Less", [](double a, double b) { return double(a < b); }},
      {"LessOrEqual", [](double a, double b) { return double(a <= b); }},
      {"Greater", [](double a, double b) { return double(a > b); }},
      {"GreaterOrEqual", [](double a, double b) { return double(a >= b); }},
      {"And", [](double a, double b) { return double(a != 0 && b != 0); }},
      {"Or", [](double a, double b) { return double(a != 0 || b != 0); }},
      {"Xor", [](double a, double b) { return double((a != 0) != (b != 0)); }}};

  if (auto it = arith.find(op); it != arith.end() && in.size() == 2 && in[1]) {
    auto r = binary(*in[0], *in[1], fl, it->second);
    return r ? done(*r, et) : std::optional<LogicalResult>();
  }
  if (op == "Div" && in.size() == 2 && in[1]) {
    for (int64_t i = 0; !fl && i < in[1]->numElements(); ++i)
      if (in[1]->intAt(i) == 0)
        return std::nullopt; // leave division by zero to run time
    auto r = binary(*in[0], *in[1], fl, [fl](double a, double b) {
      return fl ? a / b : std::trunc(a / b);
    });
    return r ? done(*r, et) : std::optional<LogicalResult>();
  }
  if (auto it = compare.find(op); it != compare.end() && in.size() == 2 && in[1]) {
    auto r = binary(*in[0], *in[1], false, it->second);
    return r ? done(*r, i1) : std::optional<LogicalResult>();
  }
  if (op == "Not")
    return done(withValues(in[0]->shape, false,
                           [&](int64_t i) { return double(in[0]->at(i) == 0); }),
                i1);
  if (op == "Neg" || op == "Identity" || op == "Abs" || op == "Floor" ||
      op == "Ceil" || op == "Sqrt" || op == "Reciprocal" || op == "Relu") {
    auto f = [&](double x) -> double {
      if (op == "Neg") return -x;
      if (op == "Abs") return std::fabs(x);
      if (op == "Floor") return std::floor(x);
      if (op == "Ceil") return std::ceil(x);
      if (op == "Sqrt") return std::sqrt(x);
      if (op == "Reciprocal") return 1.0 / x;
      if (op == "Relu") return std::max(0.0, x);
      return x;
    };
    if (!fl && (op == "Sqrt" || op == "Reciprocal"))
      return std::nullopt;
    return done(withValues(in[0]->shape, fl, [&](int64_t i) { return f(in[0]->at(i)); }),
                et);
  }
  if (op == "Cast") {
    Type to = elementTypeOf(ctx.b.getContext(), ctx.attrInt("to", 0));
    if (!to)
      return std::nullopt;
    bool toFloat = isFloatType(to);
    return done(withValues(in[0]->shape, toFloat, [&](int64_t i) {
                  double v = in[0]->at(i);
                  if (to.isInteger(1))
                    return double(v != 0);
                  return toFloat ? v : std::trunc(v);
                }),
                to);
  }
  if (op == "Where" && in.size() == 3 && in[1] && in[2]) {
    auto s1 = broadcast(in[0]->shape, in[1]->shape);
    auto shape = s1 ? broadcast(*s1, in[2]->shape) : std::nullopt;
    if (!shape)
      return std::nullopt;
    Type t = ctx.type(1).getElementType();
    return done(withValues(*shape, isFloatType(t), [&](int64_t i) {
                  bool c = in[0]->at(broadcastIndex(i, *shape, in[0]->shape)) != 0;
                  const Known &src = c ? *in[1] : *in[2];
                  return src.at(broadcastIndex(i, *shape, src.shape));
                }),
                t);
  }
  if (op == "Gather" && in.size() == 2 && in[1]) {
    int64_t rank = in[0]->shape.size();
    FailureOr<int64_t> axis = ctx.axis(ctx.attrInt("axis", 0), rank, "axis");
    if (failed(axis))
      return failure();
    for (int64_t j = 0; j < in[1]->numElements(); ++j) {
      int64_t idx = in[1]->intAt(j), extent = in[0]->shape[*axis];
      if (idx < -extent || idx >= extent)
        return ctx.error() << "index " << idx << " is out of range for extent "
                           << extent;
    }
    return done(gather(*in[0], *in[1], *axis), et);
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<int64_t> axes = ctx.opset >= 13 && in.size() > 1 && in[1]
                                    ? std::vector<int64_t>(in[1]->ints.begin(),
                                                           in[1]->ints.end())
                                    : ctx.attrInts("axes");
    std::vector<int64_t> shape = in[0]->shape;
    if (op == "Unsqueeze") {
      int64_t rank = shape.size() + axes.size();
      for (int64_t &a : axes)
        a = a < 0 ? a + rank : a;
      std::sort(axes.begin(), axes.end());
      for (int64_t a : axes) {
        if (a < 0 || a > static_cast<int64_t>(shape.size()))
          return std::nullopt;
        shape.insert(shape.begin() + a, 1);
      }
    } else {
      int64_t rank = shape.size();
      std::vector<int64_t> kept;
      for (int64_t d = 0; d < rank; ++d) {
        bool drop = axes.empty() ? shape[d] == 1
                                 : llvm::is_contained(axes, d) ||
                                       llvm::is_contained(axes, d - rank);
        if (!drop)
          kept.push_back(shape[d]);
      }
      shape = kept;
    }
    Known k = *in[0];
    k.shape = shape;
    return done(k, et);
  }
  if (op == "Reshape" && in.size() == 2 && in[1]) {
    std::vector<int64_t> shape;
    int64_t inferred = -1, known = 1;
    for (int64_t i = 0; i < in[1]->numElements(); ++i) {
      int64_t d = in[1]->intAt(i);
      if (d == 0 && !ctx.attrInt("allowzero", 0))
        d = i < static_cast<int64_t>(in[0]->shape.size()) ? in[0]->shape[i] : 0;
      if (d == -1)
        inferred = i;
      else
        known *= d;
      shape.push_back(d);
    }
    if (inferred >= 0)
      shape[inferred] = known ? in[0]->numElements() / known : 0;
    Known k = *in[0];
    k.shape = shape;
    if (k.numElements() != in[0]->numElements())
      return std::nullopt;
    return done(k, et);
  }
  if (op == "Concat") {
    int64_t rank = in[0]->shape.size();
    FailureOr<int64_t> axis = ctx.axis(ctx.attrInt("axis", 0), rank, "axis");
    if (failed(axis))
      return failure();
    std::vector<int64_t> shape = in[0]->shape;
    shape[*axis] = 0;
    for (const Known *k : in) {
      if (!k || k->shape.size() != static_cast<size_t>(rank))
        return std::nullopt;
      shape[*axis] += k->shape[*axis];
    }
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < *axis; ++d)
      outer *= shape[d];
    for (int64_t d = *axis + 1; d < rank; ++d)
      inner *= shape[d];
    Known out;
    out.shape = shape;
    out.isFloat = fl;
    for (int64_t o = 0; o < outer; ++o)
      for (const Known *k : in) {
        int64_t chunk = k->shape[*axis] * inner;
        for (int64_t i = 0; i < chunk; ++i) {
          if (fl)
            out.floats.push_back(k->at(o * chunk + i));
          else
            out.ints.push_back(k->intAt(o * chunk + i));
        }
      }
    return done(out, et);
  }
  if (op == "Slice" && ctx.opset >= 10 && in.size() >= 3 && in[1] && in[2]) {
    int64_t rank = in[0]->shape.size();
    std::vector<int64_t> starts(in[1]->ints), ends(in[2]->ints), axes, steps;
    if (in.size() > 3 && in[3])
      axes = in[3]->ints;
    if (in.size() > 4 && in[4])
      steps = in[4]->ints;
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i)
        axes.push_back(i);
    if (steps.empty())
      steps.assign(starts.size(), 1);
    std::vector<int64_t> lo(rank, 0), hi(in[0]->shape), st(rank, 1);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
      if (a < 0 || a >= rank || steps[i] == 0)
        return std::nullopt;
      auto [s, e] = clampSlice(starts[i], ends[i], steps[i], in[0]->shape[a]);
      lo[a] = s;
      hi[a] = e;
      st[a] = steps[i];
    }
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d)
      shape.push_back(st[d] > 0 ? std::max<int64_t>(0, (hi[d] - lo[d] + st[d] - 1) / st[d])
                                : std::max<int64_t>(0, (lo[d] - hi[d] - st[d] - 1) / -st[d]));
    std::vector<int64_t> is = strides(in[0]->shape), os = strides(shape);
    Known out;
    out.shape = shape;
    out.isFloat = fl;
    int64_t n = out.numElements();
    for (int64_t i = 0; i < n; ++i) {
      int64_t src = 0;
      for (int64_t d = 0; d < rank; ++d)
        src += (lo[d] + ((i / os[d]) % shape[d]) * st[d]) * is[d];
      if (fl)
        out.floats.push_back(in[0]->at(src));
      else
        out.ints.push_back(in[0]->intAt(src));
    }
    return done(out, et);
  }
  if (op == "Range" && in.size() == 3 && in[1] && in[2]) {
    double start = in[0]->at(0), limit = in[1]->at(0), delta = in[2]->at(0);
    if (delta == 0)
      return ctx.error() << "delta is zero";
    int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
    return done(withValues({n}, fl, [&](int64_t i) { return start + i * delta; }), et);
  }
  if (op == "ConstantOfShape") {
    std::vector<int64_t> shape(in[0]->ints.begin(), in[0]->ints.end());
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    if (n > kMaxFoldElements)
      return std::nullopt;
    double v = 0;
    Type t = ctx.b.getF32Type();
    if (const onnx::AttributeProto *a = ctx.attr("value")) {
      const onnx::TensorProto &tp = a->t();
      t = elementTypeOf(ctx.b.getContext(), tp.data_type());
      if (!t)
        return std::nullopt;
      if (tp.float_data_size())
        v = tp.float_data(0);
      else if (tp.int64_data_size())
        v = tp.int64_data(0);
      else if (tp.int32_data_size())
        v = tp.int32_data(0);
      else if (tp.double_data_size())
        v = tp.double_data(0);
      else if (!tp.raw_data().empty()) {
        const std::string &raw = tp.raw_data();
        if (t.isF32() && raw.size() >= 4) {
          float f;
          std::memcpy(&f, raw.data(), 4);
          v = f;
        } else if (t.isInteger(64) && raw.size() >= 8) {
          int64_t x;
          std::memcpy(&x, raw.data(), 8);
          v = x;
        } else if (t.isInteger(32) && raw.size() >= 4) {
          int32_t x;
          std::memcpy(&x, raw.data(), 4);
          v = x;
        } else if ((t.isInteger(1) || t.isInteger(8)) && !raw.empty()) {
          v = static_cast<uint8_t>(raw[0]);
        } else {
          return std::nullopt;
        }
      }
    }
    return done(withValues(shape, isFloatType(t), [&](int64_t) { return v; }), t);
  }
  if (op == "Expand" && in.size() == 2 && in[1]) {
    std::vector<int64_t> target(in[1]->ints.begin(), in[1]->ints.end());
    auto shape = broadcast(in[0]->shape, target);
    if (!shape)
      return std::nullopt;
    int64_t n = 1;
    for (int64_t d : *shape)
      n *= d;
    if (n > kMaxFoldElements)
      return std::nullopt;
    return done(withValues(*shape, fl, [&](int64_t i) {
                  return in[0]->at(broadcastIndex(i, *shape, in[0]->shape));
                }),
                et);
  }
  if ((op == "ReduceProd" || op == "ReduceSum" || op == "ReduceMax" ||
       op == "ReduceMin") &&
      in[0]->shape.size() == 1 && ctx.attrInts("axes").size() <= 1 &&
      (in.size() < 2 || !in[1])) {
    // The common shape case: reducing a 1-D shape vector to a scalar.
    double acc = op == "ReduceProd" ? 1 : op == "ReduceSum" ? 0
                 : op == "ReduceMax"  ? -INFINITY
                                      : INFINITY;
    for (int64_t i = 0; i < in[0]->numElements(); ++i) {
      double v = in[0]->at(i);
      acc = op == "ReduceProd" ? acc * v
            : op == "ReduceSum" ? acc + v
            : op == "ReduceMax" ? std::max(acc, v)
                                : std::min(acc, v);
    }
    std::vector<int64_t> shape;
    if (ctx.attrInt("keepdims", 1))
      shape.push_back(1);
    return done(withValues(shape, fl, [&](int64_t) { return acc; }), et);
  }
  return std::nullopt;
}
