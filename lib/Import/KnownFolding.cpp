//===- KnownFolding.cpp - evaluate shape arithmetic at import ---*- C++ -*-===//
//
// Exported graphs compute shapes at run time (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape, Range over a sequence length, masks from Equal/Where on
// shape values, ...). With static shapes all of that is known at import. This
// file evaluates element-wise ops on known values (tryFold) and provides the
// data-movement helpers the shape-op handlers use on known inputs, so that
// only real computation becomes nn ops.
//
// Integers are computed exactly (int64, wrapped to the element type's
// width); floating-point values in double, rounded to the element type after
// every op.
//
//===----------------------------------------------------------------------===//
#include "KnownFolding.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace distopt::onnximport;

namespace {

std::vector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// Index into `inShape` (broadcast to `outShape`) of output element `flat`.
int64_t broadcastIndex(int64_t flat, ArrayRef<int64_t> outShape,
                       ArrayRef<int64_t> inShape) {
  int64_t lead = outShape.size() - inShape.size(), idx = 0, inStride = 1;
  for (int64_t d = static_cast<int64_t>(outShape.size()) - 1; d >= lead; --d) {
    int64_t coord = flat % outShape[d];
    flat /= outShape[d];
    int64_t extent = inShape[d - lead];
    if (extent != 1)
      idx += coord * inStride;
    inStride *= extent;
  }
  return idx;
}

/// A tensor of `shape` whose element i is element `src(i)` of `k`.
Known pick(const Known &k, std::vector<int64_t> shape,
           const std::function<int64_t(int64_t)> &src) {
  Known out;
  out.shape = std::move(shape);
  out.isFloat = k.isFloat;
  int64_t n = out.numElements();
  if (k.isFloat) {
    out.floats.reserve(n);
    for (int64_t i = 0; i < n; ++i)
      out.floats.push_back(k.floats[src(i)]);
  } else {
    out.ints.reserve(n);
    for (int64_t i = 0; i < n; ++i)
      out.ints.push_back(k.ints[src(i)]);
  }
  return out;
}

int64_t wrapInt(int64_t v, Type et) {
  auto it = dyn_cast<IntegerType>(et);
  if (!it || it.getWidth() >= 64)
    return v;
  unsigned w = it.getWidth();
  if (w == 1)
    return v != 0;
  uint64_t mask = (uint64_t(1) << w) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (!it.isUnsigned() && (u >> (w - 1)))
    u |= ~mask;
  return static_cast<int64_t>(u);
}

double roundFloat(double v, Type et) {
  if (et.isF32())
    return static_cast<double>(static_cast<float>(v));
  if (et.isF16() || et.isBF16()) {
    bool lost;
    APFloat a(v);
    a.convert(cast<FloatType>(et).getFloatSemantics(),
              APFloat::rmNearestTiesToEven, &lost);
    return a.convertToDouble();
  }
  return v;
}

/// Float -> integer as the runtime casts: truncation; NaN and out-of-range
/// values go to the minimum of int64.
int64_t truncToInt(double v) {
  if (std::isnan(v) || v >= 9.2233720368547758e18 || v < -9.2233720368547758e18)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

int64_t intPow(int64_t base, int64_t exp) {
  if (exp < 0)
    return base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0;
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  while (exp) {
    if (exp & 1)
      result *= b;
    b *= b;
    exp >>= 1;
  }
  return static_cast<int64_t>(result);
}

enum class Bin {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Mod,
  FMod,
  Max,
  Min,
  Eq,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  Xor,
  None
};

Bin binOf(StringRef op, bool fmod) {
  return llvm::StringSwitch<Bin>(op)
      .Cases({"Add", "Sum", "Mean"}, Bin::Add)
      .Case("Sub", Bin::Sub)
      .Case("Mul", Bin::Mul)
      .Case("Div", Bin::Div)
      .Case("Pow", Bin::Pow)
      .Case("Mod", fmod ? Bin::FMod : Bin::Mod)
      .Case("Max", Bin::Max)
      .Case("Min", Bin::Min)
      .Case("Equal", Bin::Eq)
      .Case("Less", Bin::Lt)
      .Case("LessOrEqual", Bin::Le)
      .Case("Greater", Bin::Gt)
      .Case("GreaterOrEqual", Bin::Ge)
      .Case("And", Bin::And)
      .Case("Or", Bin::Or)
      .Case("Xor", Bin::Xor)
      .Default(Bin::None);
}

bool isCompare(Bin b) {
  return b == Bin::Eq || b == Bin::Lt || b == Bin::Le || b == Bin::Gt ||
         b == Bin::Ge || b == Bin::And || b == Bin::Or || b == Bin::Xor;
}

/// A comparison or logic op, which integers and floats share; nullopt for
/// the arithmetic ones.
template <typename T> std::optional<bool> compareOp(Bin op, T a, T b) {
  switch (op) {
  case Bin::Eq:
    return a == b;
  case Bin::Lt:
    return a < b;
  case Bin::Le:
    return a <= b;
  case Bin::Gt:
    return a > b;
  case Bin::Ge:
    return a >= b;
  case Bin::And:
    return (a != 0) && (b != 0);
  case Bin::Or:
    return (a != 0) || (b != 0);
  case Bin::Xor:
    return (a != 0) != (b != 0);
  default:
    return std::nullopt;
  }
}

/// One integer op; nullopt where the result is left to run time (division
/// by zero).
std::optional<int64_t> intOp(Bin op, int64_t a, int64_t b) {
  if (std::optional<bool> c = compareOp(op, a, b))
    return *c;
  auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  switch (op) {
  case Bin::Add:
    return static_cast<int64_t>(u(a) + u(b));
  case Bin::Sub:
    return static_cast<int64_t>(u(a) - u(b));
  case Bin::Mul:
    return static_cast<int64_t>(u(a) * u(b));
  case Bin::Div:
    if (b == 0 || (a == INT64_MIN && b == -1))
      return std::nullopt;
    return a / b;
  case Bin::Mod:
  case Bin::FMod: {
    if (b == 0 || (a == INT64_MIN && b == -1))
      return std::nullopt;
    int64_t r = a % b;
    if (op == Bin::Mod && r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  case Bin::Pow:
    return intPow(a, b);
  case Bin::Max:
    return std::max(a, b);
  case Bin::Min:
    return std::min(a, b);
  default:
    break;
  }
  return std::nullopt;
}

double floatOp(Bin op, double a, double b) {
  if (std::optional<bool> c = compareOp(op, a, b))
    return *c;
  switch (op) {
  case Bin::Add:
    return a + b;
  case Bin::Sub:
    return a - b;
  case Bin::Mul:
    return a * b;
  case Bin::Div:
    return a / b;
  case Bin::Pow:
    return std::pow(a, b);
  case Bin::Mod: {
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  case Bin::FMod:
    return std::fmod(a, b);
  case Bin::Max:
    return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case Bin::Min:
    return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  default:
    break;
  }
  return 0;
}

/// The broadcast shape of `shapes` when it is small enough to fold.
std::optional<std::vector<int64_t>>
foldShape(std::initializer_list<ArrayRef<int64_t>> shapes) {
  std::optional<std::vector<int64_t>> shape = std::vector<int64_t>();
  for (ArrayRef<int64_t> s : shapes) {
    shape = broadcast(*shape, s);
    if (!shape)
      return std::nullopt;
  }
  int64_t n = checkedNumElements(*shape);
  if (n < 0 || n > kMaxFoldElements)
    return std::nullopt;
  return shape;
}

/// Element-wise `a op b` with broadcasting; nullopt if it is not folded.
std::optional<Known> binary(Bin op, const Known &a, const Known &b,
                            Type resultType) {
  auto shape = foldShape({a.shape, b.shape});
  if (!shape)
    return std::nullopt;
  int64_t n = checkedNumElements(*shape);
  Known out;
  out.shape = *shape;
  out.isFloat = isa<FloatType>(resultType);
  bool exact = !a.isFloat && !b.isFloat;
  for (int64_t i = 0; i < n; ++i) {
    int64_t ia = broadcastIndex(i, *shape, a.shape);
    int64_t ib = broadcastIndex(i, *shape, b.shape);
    if (exact) {
      std::optional<int64_t> r = intOp(op, a.ints[ia], b.ints[ib]);
      if (!r)
        return std::nullopt;
      if (out.isFloat)
        out.floats.push_back(*r);
      else
        out.ints.push_back(wrapInt(*r, resultType));
    } else {
      double r = floatOp(op, a.at(ia), b.at(ib));
      if (out.isFloat)
        out.floats.push_back(roundFloat(r, resultType));
      else
        out.ints.push_back(wrapInt(truncToInt(r), resultType));
    }
  }
  return out;
}

std::optional<double> unaryFloat(StringRef op, double x) {
  return llvm::StringSwitch<std::optional<double>>(op)
      .Case("Neg", -x)
      .Case("Abs", std::fabs(x))
      .Case("Sign", x > 0   ? 1.0
                    : x < 0 ? -1.0
                            : x)
      .Case("Floor", std::floor(x))
      .Case("Ceil", std::ceil(x))
      .Case("Round", std::nearbyint(x))
      .Case("Sqrt", std::sqrt(x))
      .Case("Reciprocal", 1.0 / x)
      .Case("Exp", std::exp(x))
      .Case("Log", std::log(x))
      .Case("Sin", std::sin(x))
      .Case("Cos", std::cos(x))
      .Case("Tanh", std::tanh(x))
      .Case("Sigmoid", 1.0 / (1.0 + std::exp(-x)))
      .Case("Erf", std::erf(x))
      .Case("Relu", x > 0 ? x : 0.0)
      .Case("Not", x == 0 ? 1.0 : 0.0)
      .Default(std::nullopt);
}

std::optional<int64_t> unaryInt(StringRef op, int64_t x) {
  return llvm::StringSwitch<std::optional<int64_t>>(op)
      .Case("Neg", static_cast<int64_t>(-static_cast<uint64_t>(x)))
      .Case("Abs", x < 0 ? static_cast<int64_t>(-static_cast<uint64_t>(x)) : x)
      .Case("Sign", x > 0   ? 1
                    : x < 0 ? -1
                            : 0)
      .Cases({"Floor", "Ceil", "Round"}, x)
      .Case("Relu", x > 0 ? x : 0)
      .Case("Not", x == 0)
      .Default(std::nullopt);
}

} // namespace

//===----------------------------------------------------------------------===//
// Data movement on known values
//===----------------------------------------------------------------------===//

Known distopt::onnximport::knownReshape(const Known &k,
                                        std::vector<int64_t> shape) {
  Known out = k;
  out.shape = std::move(shape);
  return out;
}

Known distopt::onnximport::knownTranspose(const Known &k,
                                          ArrayRef<int64_t> perm) {
  std::vector<int64_t> shape, in = stridesOf(k.shape);
  for (int64_t p : perm)
    shape.push_back(k.shape[p]);
  std::vector<int64_t> os = stridesOf(shape);
  return pick(k, shape, [&](int64_t i) {
    int64_t src = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      src += ((i / os[d]) % shape[d]) * in[perm[d]];
    return src;
  });
}

Known distopt::onnximport::knownSlice(const Known &k, ArrayRef<int64_t> starts,
                                      ArrayRef<int64_t> steps,
                                      ArrayRef<int64_t> shape) {
  std::vector<int64_t> is = stridesOf(k.shape), os = stridesOf(shape);
  return pick(
      k, std::vector<int64_t>(shape.begin(), shape.end()), [&](int64_t i) {
        int64_t src = 0;
        for (size_t d = 0; d < shape.size(); ++d)
          src += (starts[d] + ((i / os[d]) % shape[d]) * steps[d]) * is[d];
        return src;
      });
}

Known distopt::onnximport::knownGather(const Known &k, const Known &indices,
                                       int64_t axis) {
  std::vector<int64_t> shape(k.shape.begin(), k.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), k.shape.begin() + axis + 1, k.shape.end());
  int64_t inner = 1;
  for (size_t d = axis + 1; d < k.shape.size(); ++d)
    inner *= k.shape[d];
  int64_t extent = k.shape[axis], n = indices.numElements();
  return pick(k, shape, [&](int64_t i) {
    int64_t in = i % inner, rest = i / inner;
    int64_t j = rest % n, o = rest / n;
    int64_t idx = indices.intAt(j);
    if (idx < 0)
      idx += extent;
    return (o * extent + idx) * inner + in;
  });
}

Known distopt::onnximport::knownConcat(ArrayRef<const Known *> parts,
                                       int64_t axis) {
  std::vector<int64_t> shape = parts[0]->shape;
  shape[axis] = 0;
  for (const Known *k : parts)
    shape[axis] += k->shape[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  Known out;
  out.shape = shape;
  out.isFloat = parts[0]->isFloat;
  for (int64_t o = 0; o < outer; ++o)
    for (const Known *k : parts) {
      int64_t chunk = k->shape[axis] * inner;
      for (int64_t i = 0; i < chunk; ++i) {
        if (out.isFloat)
          out.floats.push_back(k->at(o * chunk + i));
        else
          out.ints.push_back(k->intAt(o * chunk + i));
      }
    }
  return out;
}

Known distopt::onnximport::knownBroadcast(const Known &k,
                                          ArrayRef<int64_t> shape) {
  return pick(k, std::vector<int64_t>(shape.begin(), shape.end()),
              [&](int64_t i) { return broadcastIndex(i, shape, k.shape); });
}

std::optional<Known> distopt::onnximport::knownReduce(const Known &k,
                                                      ArrayRef<int64_t> axes,
                                                      bool keepdims,
                                                      StringRef op, Type et) {
  std::vector<int64_t> outShape, keptShape;
  for (size_t d = 0; d < k.shape.size(); ++d) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(d));
    keptShape.push_back(reduced ? 1 : k.shape[d]);
    if (!reduced || keepdims)
      outShape.push_back(reduced ? 1 : k.shape[d]);
  }
  int64_t n = checkedNumElements(keptShape);
  std::vector<int64_t> os = stridesOf(keptShape), is = stridesOf(k.shape);
  bool fl = isa<FloatType>(et);
  Bin bin = llvm::StringSwitch<Bin>(op)
                .Cases({"ReduceSum", "ReduceMean"}, Bin::Add)
                .Case("ReduceProd", Bin::Mul)
                .Case("ReduceMax", Bin::Max)
                .Case("ReduceMin", Bin::Min)
                .Default(Bin::None);
  if (bin == Bin::None)
    return std::nullopt;
  std::vector<std::optional<int64_t>> iacc(n);
  std::vector<std::optional<double>> facc(n);
  std::vector<int64_t> counts(n, 0);
  for (int64_t i = 0, e = k.numElements(); i < e; ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < k.shape.size(); ++d)
      if (keptShape[d] != 1 || k.shape[d] == 1)
        o += ((i / is[d]) % k.shape[d]) * os[d];
    ++counts[o];
    if (fl) {
      facc[o] = facc[o] ? floatOp(bin, *facc[o], k.at(i)) : k.at(i);
    } else {
      std::optional<int64_t> r =
          iacc[o] ? intOp(bin, *iacc[o], k.intAt(i)) : k.intAt(i);
      iacc[o] = r;
    }
  }
  Known out;
  out.shape = outShape;
  out.isFloat = fl;
  for (int64_t o = 0; o < n; ++o) {
    if (fl) {
      double v = facc[o]           ? *facc[o]
                 : bin == Bin::Mul ? 1.0
                 : bin == Bin::Max ? -INFINITY
                 : bin == Bin::Min ? INFINITY
                                   : 0.0;
      if (op == "ReduceMean")
        v = counts[o] ? v / counts[o] : NAN;
      out.floats.push_back(roundFloat(v, et));
    } else {
      int64_t v = iacc[o]           ? *iacc[o]
                  : bin == Bin::Mul ? 1
                  : bin == Bin::Max ? INT64_MIN
                  : bin == Bin::Min ? INT64_MAX
                                    : 0;
      if (op == "ReduceMean" && counts[o])
        v /= counts[o];
      out.ints.push_back(wrapInt(v, et));
    }
  }
  return out;
}

Known distopt::onnximport::knownCast(const Known &k, Type to) {
  Known out;
  out.shape = k.shape;
  out.isFloat = isa<FloatType>(to);
  int64_t n = k.numElements();
  for (int64_t i = 0; i < n; ++i) {
    if (to.isInteger(1)) {
      out.ints.push_back(k.at(i) != 0);
    } else if (out.isFloat) {
      out.floats.push_back(roundFloat(k.at(i), to));
    } else {
      int64_t v = k.isFloat ? truncToInt(k.floats[i]) : k.ints[i];
      out.ints.push_back(wrapInt(v, to));
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// tryFold: element-wise ops on known inputs
//===----------------------------------------------------------------------===//

std::optional<LogicalResult> distopt::onnximport::tryFold(ImportContext &ctx) {
  StringRef op = ctx.node.op_type();
  std::vector<const Known *> in;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) {
      in.push_back(nullptr);
      continue;
    }
    const Known *k = ctx.known(i);
    if (!k)
      return std::nullopt;
    in.push_back(k);
  }
  if (in.empty() || !in[0])
    return std::nullopt;
  Type et = ctx.type(0).getElementType();
  Type i1 = ctx.b.getI1Type();

  auto done = [&](std::optional<Known> k,
                  Type t) -> std::optional<LogicalResult> {
    if (!k)
      return std::nullopt;
    ctx.setKnownOutput(0, std::move(*k), t);
    return success();
  };

  Bin bin = binOf(op, ctx.attrInt("fmod", 0) != 0);
  // The pre-7 forms (explicit broadcast, else equal shapes) are left to the
  // handler unless the shapes are equal.
  if (bin != Bin::None && ctx.opset < 7)
    for (const Known *k : in)
      if (!k || k->shape != in[0]->shape)
        return std::nullopt;
  if (bin != Bin::None && in.size() >= 2) {
    for (const Known *k : in)
      if (!k)
        return std::nullopt;
    if (op != "Pow")
      for (unsigned i = 1; i < in.size(); ++i)
        if (ctx.type(i).getElementType() != et)
          return std::nullopt; // the handler reports the mismatch
    Type rt = isCompare(bin) ? i1 : et;
    std::optional<Known> acc = *in[0];
    for (unsigned i = 1; i < in.size() && acc; ++i)
      acc = binary(bin, *acc, *in[i], rt);
    if (acc && op == "Mean") {
      Known n = Known::ofInts({}, {static_cast<int64_t>(in.size())});
      acc = binary(Bin::Div, *acc, n, rt);
    }
    return done(acc, rt);
  }
  if (in.size() == 1 && (op == "Max" || op == "Min" || op == "Sum" ||
                         op == "Mean" || op == "Identity"))
    return done(*in[0], et);

  if (op == "Cast" || op == "CastLike") {
    Type to = op == "CastLike" ? ctx.type(1).getElementType()
                               : distopt::elementTypeOfOnnx(
                                     ctx.b.getContext(), ctx.attrInt("to", 0));
    if (!to)
      return std::nullopt;
    return done(knownCast(*in[0], to), to);
  }

  if (op == "Where" && in.size() == 3 && in[1] && in[2]) {
    if (ctx.type(1).getElementType() != ctx.type(2).getElementType() ||
        !ctx.type(0).getElementType().isInteger(1))
      return std::nullopt;
    auto shape = foldShape({in[0]->shape, in[1]->shape, in[2]->shape});
    if (!shape)
      return std::nullopt;
    int64_t n = checkedNumElements(*shape);
    Known out;
    out.shape = *shape;
    out.isFloat = in[1]->isFloat;
    for (int64_t i = 0; i < n; ++i) {
      bool c = in[0]->intAt(broadcastIndex(i, *shape, in[0]->shape)) != 0;
      const Known &src = c ? *in[1] : *in[2];
      int64_t j = broadcastIndex(i, *shape, src.shape);
      if (out.isFloat)
        out.floats.push_back(src.floats[j]);
      else
        out.ints.push_back(src.ints[j]);
    }
    return done(out, ctx.type(1).getElementType());
  }

  if (in.size() == 1 || (op == "LeakyRelu")) {
    const Known &x = *in[0];
    Known out;
    out.shape = x.shape;
    out.isFloat = x.isFloat;
    Type rt = op == "Not" ? i1 : et;
    int64_t n = x.numElements();
    if (x.isFloat) {
      double alpha = ctx.attrFloat("alpha", 0.01);
      for (int64_t i = 0; i < n; ++i) {
        std::optional<double> r =
            op == "LeakyRelu"
                ? std::optional<double>(x.floats[i] >= 0 ? x.floats[i]
                                                         : alpha * x.floats[i])
                : unaryFloat(op, x.floats[i]);
        if (!r)
          return std::nullopt;
        out.floats.push_back(roundFloat(*r, rt));
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        std::optional<int64_t> r = unaryInt(op, x.ints[i]);
        if (!r)
          return std::nullopt;
        out.ints.push_back(wrapInt(*r, rt));
      }
    }
    return done(out, rt);
  }
  return std::nullopt;
}

bool distopt::onnximport::isElementwiseFoldable(StringRef op) {
  return llvm::StringSwitch<bool>(op)
      .Cases({"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum",
              "Mean", "Equal", "Less", "LessOrEqual", "Greater",
              "GreaterOrEqual", "And", "Or", "Xor"},
             true)
      .Cases({"Neg",  "Abs",        "Sign", "Floor", "Ceil", "Round",
              "Sqrt", "Reciprocal", "Exp",  "Log",   "Sin",  "Cos",
              "Tanh", "Sigmoid",    "Erf",  "Relu",  "Not",  "LeakyRelu",
              "Cast", "CastLike",   "Where"},
             true)
      .Default(false);
}
