// Unary elementwise kernels, gelu, leaky_relu, clip, identity.
#include <cmath>
#include <limits>

#include "erf_f32.h"
#include "exp_f32.h"
#include "kernel_util.h"
#include "portable/elementwise.h"
#include "via_f32.h"

namespace distrt {
// Exact GELU, also applied by matmul's epilogue (kernel_util.h).
DISTRT_ARITHMETIC_CLONES void GeluErfLoop(const float* x, float* y, int64_t n) {
  const float inv_sqrt2 = 0.70710678118654752440f;
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + ErfF32(x[i] * inv_sqrt2));
}
void GeluErfLoop(const double* x, double* y, int64_t n) {
  const double inv_sqrt2 = 0.70710678118654752440;
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5 * x[i] * (1.0 + std::erf(x[i] * inv_sqrt2));
}

// The exact GELU's gradient dy * (Phi(x) + x phi(x)) (portable::GeluGrad,
// with the host's vectorised erf and exp in f32).
DISTRT_ARITHMETIC_CLONES void GeluGradLoop(const float* x, const float* dy, float* dx, int64_t n) {
  const float inv_sqrt2 = 0.70710678118654752440f, inv_sqrt_2pi = 0.39894228040143267794f;
  for (int64_t i = 0; i < n; ++i) {
    const float cdf = 0.5f * (1.0f + ErfF32(x[i] * inv_sqrt2));
    const float pdf = ExpF32(-0.5f * x[i] * x[i]) * inv_sqrt_2pi;
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}
void GeluGradLoop(const double* x, const double* dy, double* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = portable::GeluGrad(x[i], dy[i]);
}

namespace {

template <typename T, typename R = T, typename F>
void Map(const T* in, R* out, int64_t n, ThreadPool* pool, F f) {
  ParallelFor(pool, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = f(in[i]);
  });
}

enum class UnOp {
  kNeg,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kReciprocal,
  kTanh,
  kSigmoid,
  kErf,
  kRelu,
  kNot,
  kSin,
  kCos,
  kFloor,
  kCeil,
  kRound,
  kSign,
  kAcos,
  kAsin,
  kAtan,
};
struct UnaryInfo {
  const char* name;
  UnOp op;
  bool float_only;
};
const UnaryInfo kUnaryOps[] = {
    {"neg", UnOp::kNeg, false},   {"abs", UnOp::kAbs, false},
    {"exp", UnOp::kExp, true},    {"log", UnOp::kLog, true},
    {"sqrt", UnOp::kSqrt, true},  {"reciprocal", UnOp::kReciprocal, true},
    {"tanh", UnOp::kTanh, true},  {"sigmoid", UnOp::kSigmoid, true},
    {"erf", UnOp::kErf, true},    {"relu", UnOp::kRelu, false},
    {"not", UnOp::kNot, false},   {"sin", UnOp::kSin, true},
    {"cos", UnOp::kCos, true},    {"floor", UnOp::kFloor, true},
    {"ceil", UnOp::kCeil, true},  {"round", UnOp::kRound, true},
    {"sign", UnOp::kSign, false}, {"acos", UnOp::kAcos, true},
    {"asin", UnOp::kAsin, true},  {"atan", UnOp::kAtan, true},
};

const UnaryInfo* Find(const std::string& name) {
  for (const auto& u : kUnaryOps) {
    if (name == u.name) return &u;
  }
  return nullptr;
}

template <typename T>
T Sigmoid(T x) {
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

// Float erf, exp and sigmoid by the vectorisable ErfF32 and ExpF32 (double
// keeps libm's), in non-template loops so that they can carry
// DISTRT_ARITHMETIC_CLONES.
DISTRT_ARITHMETIC_CLONES void ErfLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ErfF32(x[i]);
}
DISTRT_ARITHMETIC_CLONES void ExpLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ExpF32(x[i]);
}
// sigmoid(x) = 1 / (1 + exp(-x)): exp(-x) overflows to inf for x below
// about -88.7 and the result is 0, as it should be; NaN stays NaN.
DISTRT_ARITHMETIC_CLONES void SigmoidLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + ExpF32(-x[i]));
}
void SigmoidLoop(const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Sigmoid(x[i]);
}
void ExpLoop(const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}
void ErfLoop(const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
}

template <typename T>
Status FloatUnary(UnOp op, const T* x, T* y, int64_t n, ThreadPool* pool) {
  switch (op) {
    case UnOp::kExp:
      ParallelFor(pool, n, kElementwiseGrain,
                  [&](int64_t lo, int64_t hi) { ExpLoop(x + lo, y + lo, hi - lo); });
      break;
    case UnOp::kLog:
      Map(x, y, n, pool, [](T v) { return std::log(v); });
      break;
    case UnOp::kSqrt:
      Map(x, y, n, pool, [](T v) { return std::sqrt(v); });
      break;
    case UnOp::kReciprocal:
      Map(x, y, n, pool, [](T v) { return T(1) / v; });
      break;
    case UnOp::kTanh:
      Map(x, y, n, pool, [](T v) { return std::tanh(v); });
      break;
    case UnOp::kSigmoid:
      ParallelFor(pool, n, kElementwiseGrain,
                  [&](int64_t lo, int64_t hi) { SigmoidLoop(x + lo, y + lo, hi - lo); });
      break;
    case UnOp::kErf:
      ParallelFor(pool, n, kElementwiseGrain,
                  [&](int64_t lo, int64_t hi) { ErfLoop(x + lo, y + lo, hi - lo); });
      break;
    case UnOp::kSin:
      Map(x, y, n, pool, [](T v) { return std::sin(v); });
      break;
    case UnOp::kCos:
      Map(x, y, n, pool, [](T v) { return std::cos(v); });
      break;
    case UnOp::kAcos:
      Map(x, y, n, pool, [](T v) { return std::acos(v); });
      break;
    case UnOp::kAsin:
      Map(x, y, n, pool, [](T v) { return std::asin(v); });
      break;
    case UnOp::kAtan:
      Map(x, y, n, pool, [](T v) { return std::atan(v); });
      break;
    case UnOp::kFloor:
      Map(x, y, n, pool, [](T v) { return std::floor(v); });
      break;
    case UnOp::kCeil:
      Map(x, y, n, pool, [](T v) { return std::ceil(v); });
      break;
    // Round half to even (the default rounding mode), as ONNX Round.
    case UnOp::kRound:
      Map(x, y, n, pool, [](T v) { return std::nearbyint(v); });
      break;
    default:
      return InternalError("not a float unary op");
  }
  return OkStatus();
}

template <typename T>
Status AnyUnary(UnOp op, const T* x, T* y, int64_t n, ThreadPool* pool) {
  switch (op) {
    case UnOp::kNeg:
      Map(x, y, n, pool, [](T v) { return WrapSub(T(0), v); });
      break;
    case UnOp::kAbs:
      Map(x, y, n, pool, [](T v) -> T {
        if constexpr (std::is_unsigned<T>::value) {
          return v;
        } else {
          return v < 0 ? WrapSub(T(0), v) : v;
        }
      });
      break;
    case UnOp::kRelu:
      Map(x, y, n, pool, [](T v) -> T { return v > T(0) ? v : (v != v ? v : T(0)); });
      break;
    case UnOp::kSign:
      Map(x, y, n, pool, [](T v) -> T {
        if (v > T(0)) return T(1);
        if (v < T(0)) return static_cast<T>(-1);
        return v;  // 0 (and NaN stays NaN)
      });
      break;
    default:
      if constexpr (std::is_floating_point<T>::value) return FloatUnary(op, x, y, n, pool);
      return InternalError("not an integer unary op");
  }
  return OkStatus();
}

Status CheckSameType(const KernelContext& ctx) {
  return CheckOutputType(ctx.output_types[0], ctx.input(0).type());
}

Status VerifySameType(const VerifyContext& ctx) {
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

// n elements of an element-wise kernel over the threads. loop(in, out, len)
// is the f32/f64 loop; bf16/f16 tensors run it on widened blocks
// (MapWidenedBlocks: the bits of the f32 loop, without f32 copies).
template <size_t kInputs, typename Loop>
Status RunElementwise(const Tensor* const (&x)[kInputs], Tensor* out, ThreadPool* pool,
                      const char* name, Loop loop) {
  const int64_t n = out->num_elements();
  const DType dtype = out->dtype();
  if (IsHalfFloat(dtype)) {
    const int64_t size = static_cast<int64_t>(DTypeSize(dtype));
    ParallelFor(pool, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      const void* src[kInputs];
      for (size_t k = 0; k < kInputs; ++k)
        src[k] = static_cast<const char*>(x[k]->raw()) + lo * size;
      MapWidenedBlocks(src, static_cast<char*>(out->raw()) + lo * size, dtype, hi - lo,
                       [&](const float* const* in, float* y, int64_t len) { loop(in, y, len); });
    });
    return OkStatus();
  }
  DISTRT_DISPATCH_FLOAT(dtype, name, {
    ParallelFor(pool, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      const T* in[kInputs];
      for (size_t k = 0; k < kInputs; ++k) in[k] = x[k]->template data<T>() + lo;
      loop(in, out->template data<T>() + lo, hi - lo);
    });
  });
  return OkStatus();
}

Status RunUnary(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const UnaryInfo* info = Find(name);
  if (info == nullptr) return InternalError("unary kernel '", name, "' has no entry");
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckSameType(ctx));
  if (info->op == UnOp::kNot && x.dtype() != DType::kBool) {
    return InvalidArgumentError("'not' needs a bool operand, got ", DTypeName(x.dtype()));
  }
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const int64_t n = x.num_elements();
  if (info->op == UnOp::kNot) {
    Map(x.data<uint8_t>(), out->data<uint8_t>(), n, ctx.pool,
        [](uint8_t v) -> uint8_t { return v == 0; });
    return OkStatus();
  }
  if (IsHalfFloat(x.dtype())) {  // every op here is defined on floats
    return RunElementwise<1>({&x}, out, ctx.pool, name.c_str(), [&](auto in, auto* y, int64_t len) {
      using T = std::remove_pointer_t<decltype(y)>;
      (void)AnyUnary<T>(info->op, in[0], y, len, nullptr);
    });
  }
  if (info->float_only) {
    DISTRT_DISPATCH_FLOAT(x.dtype(), name,
                          return FloatUnary<T>(info->op, x.data<T>(), out->data<T>(), n, ctx.pool));
  }
  DISTRT_DISPATCH_NUMERIC(x.dtype(), name,
                          return AnyUnary<T>(info->op, x.data<T>(), out->data<T>(), n, ctx.pool));
  return OkStatus();
}

Status RunIdentity(KernelContext& ctx) { return ctx.SetOutput(0, ctx.input(0)); }

// GELU's tanh approximation.
template <typename T>
void GeluTanhLoop(const T* x, T* y, int64_t n) {
  const T k = static_cast<T>(0.79788456080286535588);  // sqrt(2/pi)
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    y[i] = T(0.5) * v * (T(1) + std::tanh(k * (v + T(0.044715) * v * v * v)));
  }
}

Status RunGelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckSameType(ctx));
  std::string approx;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetString("approximate", "none", &approx));
  if (approx != "none" && approx != "tanh") {
    return InvalidArgumentError("gelu: approximate must be 'none' or 'tanh', got '", approx, "'");
  }
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const bool exact = approx == "none";
  return RunElementwise<1>({&x}, out, ctx.pool, "gelu", [&](auto in, auto* y, int64_t n) {
    if (exact) {
      GeluErfLoop(in[0], y, n);
    } else {
      GeluTanhLoop(in[0], y, n);
    }
  });
}

// gelu_grad (dist-fuse-for-target's form of the exact GELU's gradient
// rule): x, dy and dx of one type.
Status VerifyGeluGrad(const VerifyContext& ctx) {
  if (ctx.inputs[1] != ctx.inputs[0]) {
    return InvalidArgumentError("gelu_grad: x is ", ctx.inputs[0].ToString(), " but dy is ",
                                ctx.inputs[1].ToString(), "; they must have one type");
  }
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

Status RunGeluGrad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& dy = ctx.input(1);
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  return RunElementwise<2>({&x, &dy}, out, ctx.pool, "gelu_grad",
                           [](auto in, auto* dx, int64_t n) { GeluGradLoop(in[0], in[1], dx, n); });
}

Status RunLeakyRelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckSameType(ctx));
  double alpha;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetFloat("alpha", 0.01, &alpha));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  DISTRT_DISPATCH_FLOAT(x.dtype(), "leaky_relu", {
    const T a = static_cast<T>(alpha);
    Map(x.data<T>(), out->data<T>(), x.num_elements(), ctx.pool,
        [=](T v) { return v < T(0) ? v * a : v; });
  });
  return OkStatus();
}

template <typename T>
T ClampAttr(double v) {
  if constexpr (std::is_integral<T>::value) {
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) {
      return std::numeric_limits<T>::lowest();
    }
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

Status RunClip(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckSameType(ctx));
  AttrReader attrs = ctx.attrs();
  const bool has_min = attrs.Has("min"), has_max = attrs.Has("max");
  double lo = 0, hi = 0;
  if (has_min) DISTRT_RETURN_IF_ERROR(attrs.GetFloat("min", &lo));
  if (has_max) DISTRT_RETURN_IF_ERROR(attrs.GetFloat("max", &hi));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  DISTRT_DISPATCH_NUMERIC(x.dtype(), "clip", {
    const T tlo = has_min ? ClampAttr<T>(lo) : std::numeric_limits<T>::lowest();
    const T thi = has_max ? ClampAttr<T>(hi) : std::numeric_limits<T>::max();
    Map(x.data<T>(), out->data<T>(), x.num_elements(), ctx.pool, [=](T v) {
      // ONNX Clip: max(min(x, max), min); NaN passes through.
      T r = v;
      if (r < tlo) r = tlo;
      if (r > thi) r = thi;
      return r;
    });
  });
  return OkStatus();
}

}  // namespace

void RegisterUnaryKernels(KernelRegistry& r) {
  // Unary ops, gelu and gelu_grad read bf16/f16 themselves: RunElementwise's
  // widened blocks.
  for (const auto& u : kUnaryOps) {
    KernelDef def{u.name, 1, 1, 1, RunUnary, VerifySameType, false, true};
    def.half_native = u.op != UnOp::kNot;
    r.Add(def);
  }
  // Only shares its input's buffer: the same kernel serves every device and
  // dtype.
  KernelDef identity{"identity", 1, 1, 1, RunIdentity, VerifySameType};
  identity.half_native = true;
  r.Add(identity);
  identity.device = DeviceKind::kCuda;
  r.Add(identity);
  KernelDef gelu{"gelu", 1, 1, 1, RunGelu, VerifySameType, false, true};
  gelu.half_native = true;
  r.Add(gelu);
  r.Add({"leaky_relu", 1, 1, 1, RunLeakyRelu, VerifySameType, false, true});
  KernelDef gelu_grad{"gelu_grad", 2, 2, 1, RunGeluGrad, VerifyGeluGrad, false, true};
  gelu_grad.half_native = true;
  r.Add(gelu_grad);
  r.Add({"clip", 1, 1, 1, RunClip, VerifySameType, false, true});
}

}  // namespace distrt
