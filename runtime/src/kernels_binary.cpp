// Binary elementwise kernels with numpy broadcasting: arithmetic,
// comparisons, logic, and the ternary `where`.
#include <cmath>
#include <limits>

#include "kernel_util.h"
#include "via_f32.h"

namespace distrt {
namespace {

enum class BinOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMax,
  kMin,
  kMod,
  kShiftLeft,
  kShiftRight,
  kEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  kAnd,
  kOr,
  kXor,
};

bool IsCompare(BinOp op) { return op >= BinOp::kEqual && op <= BinOp::kGreaterEqual; }
bool IsLogic(BinOp op) { return op >= BinOp::kAnd; }

// row(r, off, lo, hi) for elements [lo, hi) of every output row r of a
// broadcast plan (off: the operands' offsets for that row), over the
// threads: one long row is split, several rows go whole.
template <typename RowFn>
void ForEachBroadcastRow(const BroadcastPlan& p, ThreadPool* pool, RowFn row) {
  const int64_t inner = p.inner;
  if (p.rows == 1) {
    int64_t zero[2] = {0, 0};
    ParallelFor(pool, inner, kElementwiseGrain,
                [&](int64_t lo, int64_t hi) { row(0, zero, lo, hi); });
    return;
  }
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, inner));
  ParallelFor(pool, p.rows, grain, [&](int64_t r0, int64_t r1) {
    ForEachRow(p, r0, r1, [&](int64_t r, const int64_t* off) { row(r, off, 0, inner); });
  });
}

// Runs out[i] = f(a[i'], b[i'']) over a broadcast plan; the four stride
// patterns of the inner dim get their own loops so they vectorise.
template <typename A, typename B, typename R, typename F>
void RunBinary(const A* a, const B* b, R* out, const BroadcastPlan& p, ThreadPool* pool, F f) {
  const int64_t inner = p.inner;
  const int64_t sa = p.strides[0].back(), sb = p.strides[1].back();
  ForEachBroadcastRow(p, pool, [&](int64_t r, const int64_t* off, int64_t lo, int64_t hi) {
    const A* pa = a + off[0];
    const B* pb = b + off[1];
    R* po = out + r * inner;
    if (sa == 1 && sb == 1) {
      for (int64_t i = lo; i < hi; ++i) po[i] = f(pa[i], pb[i]);
    } else if (sa == 1) {
      const B vb = pb[0];
      for (int64_t i = lo; i < hi; ++i) po[i] = f(pa[i], vb);
    } else if (sb == 1) {
      const A va = pa[0];
      for (int64_t i = lo; i < hi; ++i) po[i] = f(va, pb[i]);
    } else {
      const R v = f(pa[0], pb[0]);
      for (int64_t i = lo; i < hi; ++i) po[i] = v;
    }
  });
}

template <typename T>
T IntPow(T base, T exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == static_cast<T>(-1)) return (exp % 2 == 0) ? 1 : static_cast<T>(-1);
    return 0;
  }
  T result = 1;
  while (exp > 0) {
    if (exp & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    exp = static_cast<T>(exp >> 1);
  }
  return result;
}

template <typename T>
T FloatMax(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a < b ? b : a;
}
template <typename T>
T FloatMin(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return b < a ? b : a;
}

template <typename T>
Status CheckNoZero(const Tensor& t, const char* op) {
  const T* d = t.data<T>();
  for (int64_t i = 0, n = t.num_elements(); i < n; ++i) {
    if (d[i] == 0) return InvalidArgumentError("integer ", op, " by zero");
  }
  return OkStatus();
}

template <typename T>
Status Arith(BinOp op, int64_t fmod, const Tensor& A, const Tensor& B, Tensor* out,
             const BroadcastPlan& p, ThreadPool* pool) {
  const T* a = A.data<T>();
  const T* b = B.data<T>();
  T* o = out->data<T>();
  constexpr bool kInt = std::is_integral<T>::value;
  switch (op) {
    case BinOp::kAdd:
      RunBinary(a, b, o, p, pool, [](T x, T y) { return WrapAdd(x, y); });
      break;
    case BinOp::kSub:
      RunBinary(a, b, o, p, pool, [](T x, T y) { return WrapSub(x, y); });
      break;
    case BinOp::kMul:
      RunBinary(a, b, o, p, pool, [](T x, T y) { return WrapMul(x, y); });
      break;
    case BinOp::kDiv:
      if constexpr (kInt) {
        DISTRT_RETURN_IF_ERROR(CheckNoZero<T>(B, "division"));
        RunBinary(a, b, o, p, pool, [](T x, T y) -> T {
          if constexpr (std::is_signed<T>::value) {
            if (y == -1) return WrapSub(T(0), x);  // avoids INT_MIN / -1
          }
          return static_cast<T>(x / y);
        });
      } else {
        RunBinary(a, b, o, p, pool, [](T x, T y) { return x / y; });
      }
      break;
    case BinOp::kPow:
      if constexpr (kInt) {
        RunBinary(a, b, o, p, pool, [](T x, T y) { return IntPow<T>(x, y); });
      } else if (B.num_elements() == 1 && b[0] == T(2)) {
        // x^2 (RMSNorm's square): x * x is the correctly rounded square,
        // as pow's, without a libm call per element.
        RunBinary(a, b, o, p, pool, [](T x, T) { return x * x; });
      } else if (B.num_elements() == 1 && b[0] == T(1)) {
        RunBinary(a, b, o, p, pool, [](T x, T) { return x; });  // its gradient's x^1
      } else {
        RunBinary(a, b, o, p, pool, [](T x, T y) { return static_cast<T>(std::pow(x, y)); });
      }
      break;
    case BinOp::kMax:
      if constexpr (kInt) {
        RunBinary(a, b, o, p, pool, [](T x, T y) { return x < y ? y : x; });
      } else {
        RunBinary(a, b, o, p, pool, [](T x, T y) { return FloatMax(x, y); });
      }
      break;
    case BinOp::kMin:
      if constexpr (kInt) {
        RunBinary(a, b, o, p, pool, [](T x, T y) { return y < x ? y : x; });
      } else {
        RunBinary(a, b, o, p, pool, [](T x, T y) { return FloatMin(x, y); });
      }
      break;
    case BinOp::kMod:
      if constexpr (kInt) {
        DISTRT_RETURN_IF_ERROR(CheckNoZero<T>(B, "modulo"));
        if (fmod) {  // sign of the dividend (C)
          RunBinary(a, b, o, p, pool, [](T x, T y) -> T {
            if constexpr (std::is_signed<T>::value) {
              if (y == -1) return 0;
            }
            return static_cast<T>(x % y);
          });
        } else {  // sign of the divisor (Python)
          RunBinary(a, b, o, p, pool, [](T x, T y) -> T {
            if constexpr (std::is_signed<T>::value) {
              if (y == -1) return 0;
              T r = static_cast<T>(x % y);
              if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
              return r;
            } else {
              return static_cast<T>(x % y);
            }
          });
        }
      } else {
        if (fmod) {
          RunBinary(a, b, o, p, pool, [](T x, T y) { return static_cast<T>(std::fmod(x, y)); });
        } else {
          RunBinary(a, b, o, p, pool, [](T x, T y) {
            T r = static_cast<T>(std::fmod(x, y));
            if (r != 0 && ((r < 0) != (y < 0))) r += y;
            return r;
          });
        }
      }
      break;
    case BinOp::kShiftLeft:
    case BinOp::kShiftRight:
      if constexpr (std::is_unsigned<T>::value) {
        // A shift by the width or more is undefined in C++; it gives 0.
        constexpr T kBits = static_cast<T>(sizeof(T) * 8);
        if (op == BinOp::kShiftLeft) {
          RunBinary(a, b, o, p, pool,
                    [](T x, T y) -> T { return y >= kBits ? T(0) : static_cast<T>(x << y); });
        } else {
          RunBinary(a, b, o, p, pool,
                    [](T x, T y) -> T { return y >= kBits ? T(0) : static_cast<T>(x >> y); });
        }
        break;
      } else {
        return UnimplementedError("bit shifts need unsigned integers");
      }
    default:
      return InternalError("not an arithmetic op");
  }
  return OkStatus();
}

template <typename T>
Status Compare(BinOp op, const Tensor& A, const Tensor& B, Tensor* out,
               const BroadcastPlan& p, ThreadPool* pool) {
  const T* a = A.data<T>();
  const T* b = B.data<T>();
  uint8_t* o = out->data<uint8_t>();
  switch (op) {
    case BinOp::kEqual:
      RunBinary(a, b, o, p, pool, [](T x, T y) -> uint8_t { return x == y; });
      break;
    case BinOp::kLess:
      RunBinary(a, b, o, p, pool, [](T x, T y) -> uint8_t { return x < y; });
      break;
    case BinOp::kLessEqual:
      RunBinary(a, b, o, p, pool, [](T x, T y) -> uint8_t { return x <= y; });
      break;
    case BinOp::kGreater:
      RunBinary(a, b, o, p, pool, [](T x, T y) -> uint8_t { return x > y; });
      break;
    case BinOp::kGreaterEqual:
      RunBinary(a, b, o, p, pool, [](T x, T y) -> uint8_t { return x >= y; });
      break;
    default:
      return InternalError("not a comparison");
  }
  return OkStatus();
}

struct BinaryInfo {
  const char* name;
  BinOp op;
};
const BinaryInfo kBinaryOps[] = {
    {"add", BinOp::kAdd},
    {"sub", BinOp::kSub},
    {"mul", BinOp::kMul},
    {"div", BinOp::kDiv},
    {"pow", BinOp::kPow},
    {"max", BinOp::kMax},
    {"min", BinOp::kMin},
    {"mod", BinOp::kMod},
    {"shift_left", BinOp::kShiftLeft},
    {"shift_right", BinOp::kShiftRight},
    {"equal", BinOp::kEqual},
    {"less", BinOp::kLess},
    {"less_equal", BinOp::kLessEqual},
    {"greater", BinOp::kGreater},
    {"greater_equal", BinOp::kGreaterEqual},
    {"and", BinOp::kAnd},
    {"or", BinOp::kOr},
    {"xor", BinOp::kXor},
};

BinOp OpOf(const std::string& name) {
  for (const auto& b : kBinaryOps) {
    if (name == b.name) return b.op;
  }
  return BinOp::kAdd;
}

// ---- 16-bit arithmetic without f32 copies -----------------------------------------

// add, sub, mul and div on bf16 or f16 operands read each element widened
// to f32 (exact), compute in f32 and round once to nearest even: the bits
// the f32 kernel gives on widened copies, without the copies and their
// passes over memory (a training step's residual adds in bf16).
bool IsHalfArith(BinOp op) {
  return op == BinOp::kAdd || op == BinOp::kSub || op == BinOp::kMul || op == BinOp::kDiv;
}

bool ArithInHalf(const VerifyContext& ctx) {
  return IsHalfArith(OpOf(ctx.inst->op())) && ctx.inputs.size() == 2 &&
         IsHalfFloat(ctx.inputs[0].dtype) && ctx.inputs[1].dtype == ctx.inputs[0].dtype;
}

// o[i] = store(f(load(a[i * sa]), load(b[i * sb]))) for strides of 0 or 1:
// inlined into each clone of the row functions below, so it vectorises for
// their CPU.
template <typename In, typename Out, typename Load, typename Store, typename F>
__attribute__((always_inline)) inline void ArithRow(const In* a, int64_t sa, const In* b,
                                                    int64_t sb, Out* o, int64_t n, Load load,
                                                    Store store, F f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = store(f(load(a[i]), load(b[i])));
  } else if (sa == 1) {
    const float vb = load(b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = store(f(load(a[i]), vb));
  } else if (sb == 1) {
    const float va = load(a[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = store(f(va, load(b[i])));
  } else {
    const Out v = store(f(load(a[0]), load(b[0])));
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

template <typename In, typename Out, typename Load, typename Store>
__attribute__((always_inline)) inline void ArithRowOf(BinOp op, const In* a, int64_t sa,
                                                      const In* b, int64_t sb, Out* o, int64_t n,
                                                      Load load, Store store) {
  switch (op) {
    case BinOp::kAdd:
      return ArithRow(a, sa, b, sb, o, n, load, store, [](float x, float y) { return x + y; });
    case BinOp::kSub:
      return ArithRow(a, sa, b, sb, o, n, load, store, [](float x, float y) { return x - y; });
    case BinOp::kMul:
      return ArithRow(a, sa, b, sb, o, n, load, store, [](float x, float y) { return x * y; });
    default:
      return ArithRow(a, sa, b, sb, o, n, load, store, [](float x, float y) { return x / y; });
  }
}

// bf16 in one pass: widening is a shift, rounding a branch-free select.
DISTRT_ARITHMETIC_CLONES void BF16ArithRow(BinOp op, const uint16_t* a, int64_t sa,
                                           const uint16_t* b, int64_t sb, uint16_t* o, int64_t n) {
  ArithRowOf(
      op, a, sa, b, sb, o, n, [](uint16_t v) { return portable::BF16BitsToFloat(v); },
      [](float v) { return portable::FloatToBF16Bits(v); });
}

// f32 operands and result: f16 rows go through it a widened block at a time.
DISTRT_ARITHMETIC_CLONES void F32ArithRow(BinOp op, const float* a, int64_t sa, const float* b,
                                          int64_t sb, float* o, int64_t n) {
  auto same = [](float v) { return v; };
  ArithRowOf(op, a, sa, b, sb, o, n, same, same);
}

// f16: blocks of each row widened (F16C where the CPU has it) into this
// thread's buffers, the f32 row, rounded back.
void F16ArithRow(BinOp op, const uint16_t* a, int64_t sa, const uint16_t* b, int64_t sb,
                 uint16_t* o, int64_t n) {
  float wa[kWidenedBlock], wb[kWidenedBlock], wo[kWidenedBlock];
  for (int64_t s0 = 0; s0 < n; s0 += kWidenedBlock) {
    const int64_t len = std::min(kWidenedBlock, n - s0);
    WidenToF32(a + s0 * sa, DType::kF16, wa, sa != 0 ? len : 1, nullptr);
    WidenToF32(b + s0 * sb, DType::kF16, wb, sb != 0 ? len : 1, nullptr);
    F32ArithRow(op, wa, sa, wb, sb, wo, len);
    NarrowFromF32(wo, o + s0, DType::kF16, len, nullptr);
  }
}

void RunHalfArith(BinOp op, DType dtype, const uint16_t* a, const uint16_t* b, uint16_t* out,
                  const BroadcastPlan& p, ThreadPool* pool) {
  const int64_t sa = p.strides[0].back(), sb = p.strides[1].back();
  auto row_fn = dtype == DType::kBF16 ? BF16ArithRow : F16ArithRow;
  ForEachBroadcastRow(p, pool, [&](int64_t r, const int64_t* off, int64_t lo, int64_t hi) {
    row_fn(op, a + off[0] + lo * sa, sa, b + off[1] + lo * sb, sb, out + r * p.inner + lo, hi - lo);
  });
}

// Expected output type of a binary op (also used by the verifier).
Status BinaryResultType(BinOp op, const std::string& name, const TensorType& a, const TensorType& b,
                        TensorType* out) {
  if (op != BinOp::kPow && a.dtype != b.dtype) {
    return InvalidArgumentError("operands have different dtypes ", DTypeName(a.dtype), " and ",
                                DTypeName(b.dtype));
  }
  const bool shift = op == BinOp::kShiftLeft || op == BinOp::kShiftRight;
  if (shift && a.dtype != DType::kU8 && a.dtype != DType::kU16 && a.dtype != DType::kU32 &&
      a.dtype != DType::kU64) {
    return InvalidArgumentError("'", name, "' needs unsigned integer operands, got ",
                                DTypeName(a.dtype));
  }
  if (IsLogic(op) && a.dtype != DType::kBool) {
    return InvalidArgumentError("'", name, "' needs bool operands, got ", DTypeName(a.dtype));
  }
  DISTRT_RETURN_IF_ERROR(BroadcastShapes(a.shape, b.shape, &out->shape));
  out->dtype = (IsCompare(op) || IsLogic(op)) ? DType::kBool : a.dtype;
  return OkStatus();
}

Status VerifyBinary(const VerifyContext& ctx) {
  const std::string& name = ctx.inst->op();
  TensorType t;
  DISTRT_RETURN_IF_ERROR(BinaryResultType(OpOf(name), name, ctx.inputs[0], ctx.inputs[1], &t));
  return CheckOutputType(ctx.outputs[0], t);
}

Status RunBinaryKernel(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const BinOp op = OpOf(name);
  const Tensor& a = ctx.input(0);
  Tensor b = ctx.input(1);
  TensorType rt;
  DISTRT_RETURN_IF_ERROR(BinaryResultType(op, name, a.type(), b.type(), &rt));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], rt));
  if (op == BinOp::kPow && b.dtype() != a.dtype()) {  // exponent converted to the base's type
    Tensor conv;
    DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(a.dtype(), b.shape(), &conv));
    DISTRT_RETURN_IF_ERROR(CastBuffer(b.raw(), b.dtype(), conv.raw(), a.dtype(), b.num_elements()));
    b = conv;
  }
  int64_t fmod = 0;
  if (op == BinOp::kMod) DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("fmod", 0, &fmod));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  if (out->num_elements() == 0) return OkStatus();
  BroadcastPlan plan = MakeBroadcastPlan(rt.shape, {a.shape(), b.shape()});
  if (IsLogic(op)) {
    const uint8_t* pa = a.data<uint8_t>();
    const uint8_t* pb = b.data<uint8_t>();
    uint8_t* po = out->data<uint8_t>();
    auto norm = [](uint8_t v) -> uint8_t { return v != 0; };
    switch (op) {
      case BinOp::kAnd:
        RunBinary(pa, pb, po, plan, ctx.pool,
                  [&](uint8_t x, uint8_t y) -> uint8_t { return norm(x) & norm(y); });
        break;
      case BinOp::kOr:
        RunBinary(pa, pb, po, plan, ctx.pool,
                  [&](uint8_t x, uint8_t y) -> uint8_t { return norm(x) | norm(y); });
        break;
      default:
        RunBinary(pa, pb, po, plan, ctx.pool,
                  [&](uint8_t x, uint8_t y) -> uint8_t { return norm(x) ^ norm(y); });
        break;
    }
    return OkStatus();
  }
  if (IsHalfArith(op) && IsHalfFloat(a.dtype())) {
    RunHalfArith(op, a.dtype(), a.data<uint16_t>(), b.data<uint16_t>(), out->data<uint16_t>(), plan,
                 ctx.pool);
    return OkStatus();
  }
  if (IsCompare(op)) {
    DISTRT_DISPATCH_NUMERIC_BOOL(a.dtype(), name, return Compare<T>(op, a, b, out, plan, ctx.pool));
  }
  DISTRT_DISPATCH_NUMERIC(a.dtype(), name, return Arith<T>(op, fmod, a, b, out, plan, ctx.pool));
  return OkStatus();
}

// ---- where ---------------------------------------------------------------------

Status WhereResultType(const TensorType& c, const TensorType& a, const TensorType& b,
                       TensorType* out) {
  if (c.dtype != DType::kBool) {
    return InvalidArgumentError("condition must be bool, got ", DTypeName(c.dtype));
  }
  if (a.dtype != b.dtype) {
    return InvalidArgumentError("branches have different dtypes ", DTypeName(a.dtype), " and ",
                                DTypeName(b.dtype));
  }
  Shape s;
  DISTRT_RETURN_IF_ERROR(BroadcastShapes(c.shape, a.shape, &s));
  DISTRT_RETURN_IF_ERROR(BroadcastShapes(s, b.shape, &out->shape));
  out->dtype = a.dtype;
  return OkStatus();
}

Status VerifyWhere(const VerifyContext& ctx) {
  TensorType t;
  DISTRT_RETURN_IF_ERROR(WhereResultType(ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], &t));
  return CheckOutputType(ctx.outputs[0], t);
}

// One row of `where` whose operands are contiguous (stride 1) or a single
// repeated value (stride 0): both branches are read and selected without a
// branch, so the loop vectorises. T holds the element's bits.
template <typename T, int kSa, int kSb>
void WhereRowSelect(const uint8_t* c, const T* a, const T* b, T* o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T va = a[i * kSa], vb = b[i * kSb];
    o[i] = c[i] != 0 ? va : vb;
  }
}

template <typename T>
void WhereRow(const uint8_t* c, const T* a, int64_t sa, const T* b, int64_t sb, T* o, int64_t n) {
  if (sa == 1 && sb == 1) return WhereRowSelect<T, 1, 1>(c, a, b, o, n);
  if (sa == 1 && sb == 0) return WhereRowSelect<T, 1, 0>(c, a, b, o, n);
  if (sa == 0 && sb == 1) return WhereRowSelect<T, 0, 1>(c, a, b, o, n);
  return WhereRowSelect<T, 0, 0>(c, a, b, o, n);
}

template <size_t kBytes>
void WhereLoop(const uint8_t* c, const uint8_t* a, const uint8_t* b, uint8_t* o,
               const BroadcastPlan& p, ThreadPool* pool) {
  const int64_t inner = p.inner;
  const int64_t sc = p.strides[0].back(), sa = p.strides[1].back(), sb = p.strides[2].back();
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, inner));
  ParallelFor(pool, p.rows, grain, [&](int64_t r0, int64_t r1) {
    ForEachRow(p, r0, r1, [&](int64_t r, const int64_t* off) {
      const uint8_t* pc = c + off[0];
      const uint8_t* pa = a + off[1] * kBytes;
      const uint8_t* pb = b + off[2] * kBytes;
      uint8_t* po = o + r * inner * static_cast<int64_t>(kBytes);
      if constexpr (kBytes == 2 || kBytes == 4 || kBytes == 8) {
        using T = typename std::conditional<
            kBytes == 2, uint16_t,
            typename std::conditional<kBytes == 4, uint32_t, uint64_t>::type>::type;
        if (sc == 1 && sa <= 1 && sb <= 1) {
          return WhereRow(pc, reinterpret_cast<const T*>(pa), sa, reinterpret_cast<const T*>(pb),
                          sb, reinterpret_cast<T*>(po), inner);
        }
      }
      for (int64_t i = 0; i < inner; ++i) {
        const uint8_t* src = pc[i * sc] ? pa + i * sa * kBytes : pb + i * sb * kBytes;
        std::memcpy(po + i * static_cast<int64_t>(kBytes), src, kBytes);
      }
    });
  });
}

Status RunWhere(KernelContext& ctx) {
  const Tensor &c = ctx.input(0), &a = ctx.input(1), &b = ctx.input(2);
  TensorType rt;
  DISTRT_RETURN_IF_ERROR(WhereResultType(c.type(), a.type(), b.type(), &rt));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], rt));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  if (out->num_elements() == 0) return OkStatus();
  BroadcastPlan plan = MakeBroadcastPlan(rt.shape, {c.shape(), a.shape(), b.shape()});
  const auto* pc = c.data<uint8_t>();
  const auto* pa = a.data<uint8_t>();
  const auto* pb = b.data<uint8_t>();
  auto* po = out->data<uint8_t>();
  switch (DTypeSize(a.dtype())) {
    case 1:
      WhereLoop<1>(pc, pa, pb, po, plan, ctx.pool);
      break;
    case 2:
      WhereLoop<2>(pc, pa, pb, po, plan, ctx.pool);
      break;
    case 4:
      WhereLoop<4>(pc, pa, pb, po, plan, ctx.pool);
      break;
    case 8:
      WhereLoop<8>(pc, pa, pb, po, plan, ctx.pool);
      break;
    default:
      return UnimplementedError("where: unsupported element size");
  }
  return OkStatus();
}

}  // namespace

void RegisterBinaryKernels(KernelRegistry& r) {
  for (const auto& b : kBinaryOps) {
    KernelDef def{b.name, 2, 2, 1, RunBinaryKernel, VerifyBinary, false, true};
    def.half_native_for = ArithInHalf;
    r.Add(def);
  }
  KernelDef where{"where", 3, 3, 1, RunWhere, VerifyWhere, false, true};
  where.half_native = true;  // selects elements by their bytes
  r.Add(where);
}

}  // namespace distrt
