// Element-wise kernel bodies (host and device): unary math with GELU and
// leaky ReLU, the exact GELU's gradient, and broadcasting binary arithmetic, on any float storage
// type (f32, f64, bf16, f16; 16-bit floats compute in f32). Semantics are the host kernels'
// (kernels_unary.cpp, kernels_binary.cpp): relu/sign keep a NaN, max/min carry it, round is half to
// even.
#ifndef DISTRT_SRC_PORTABLE_ELEMENTWISE_H_
#define DISTRT_SRC_PORTABLE_ELEMENTWISE_H_

#include "portable/hd.h"
#include "portable/index_map.h"
#include "portable/math.h"

namespace distrt {
namespace portable {

enum class UnaryOp : int {
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
  kSin,
  kCos,
  kFloor,
  kCeil,
  kRound,
  kSign,
  kGeluErf,   // exact GELU
  kGeluTanh,  // GELU's tanh approximation
  kLeakyRelu,
};

template <typename C>
DISTRT_HD C ApplyUnary(UnaryOp op, C v, C alpha) {
  switch (op) {
    case UnaryOp::kNeg:
      return -v;
    case UnaryOp::kAbs:
      return Abs(v);
    case UnaryOp::kExp:
      return Exp(v);
    case UnaryOp::kLog:
      return Log(v);
    case UnaryOp::kSqrt:
      return Sqrt(v);
    case UnaryOp::kReciprocal:
      return C(1) / v;
    case UnaryOp::kTanh:
      return Tanh(v);
    case UnaryOp::kSigmoid:
      if (v >= C(0)) return C(1) / (C(1) + Exp(-v));
      {
        const C e = Exp(v);
        return e / (C(1) + e);
      }
    case UnaryOp::kErf:
      return Erf(v);
    case UnaryOp::kRelu:
      return v > C(0) ? v : (IsNan(v) ? v : C(0));
    case UnaryOp::kSin:
      return Sin(v);
    case UnaryOp::kCos:
      return Cos(v);
    case UnaryOp::kFloor:
      return Floor(v);
    case UnaryOp::kCeil:
      return Ceil(v);
    case UnaryOp::kRound:
      return RoundEven(v);
    case UnaryOp::kSign:
      return v > C(0) ? C(1) : (v < C(0) ? C(-1) : v);
    case UnaryOp::kGeluErf:
      return C(0.5) * v * (C(1) + Erf(v * C(0.70710678118654752440)));
    case UnaryOp::kGeluTanh:
      return C(0.5) * v * (C(1) + Tanh(C(0.79788456080286535588) * (v + C(0.044715) * v * v * v)));
    case UnaryOp::kLeakyRelu:
      return v < C(0) ? v * alpha : v;
  }
  return v;
}

template <typename T>
struct UnaryBody {
  using C = typename Elem<T>::Compute;
  UnaryOp op;
  const T* x;
  T* y;
  C alpha;  // leaky_relu's slope
  DISTRT_HD void operator()(int64_t i) const { y[i] = Store<T>(ApplyUnary(op, Load(x[i]), alpha)); }
};

enum class BinaryOp : int { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };

template <typename C>
DISTRT_HD C ApplyBinary(BinaryOp op, C a, C b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kPow:
      return Pow(a, b);
    case BinaryOp::kMax:
      return NanMax(a, b);
    case BinaryOp::kMin:
      return NanMin(a, b);
  }
  return a;
}

// y = a op b with numpy broadcasting (`map` has two operands).
template <typename T>
struct BinaryBody {
  BinaryOp op;
  const T* a;
  const T* b;
  T* y;
  BroadcastMap map;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t off[kMaxOperands];
    map.Offsets(i, off);
    y[i] = Store<T>(ApplyBinary(op, Load(a[off[0]]), Load(b[off[1]])));
  }
};

// The exact GELU's gradient: dy * GELU'(x), GELU'(x) = Phi(x) + x phi(x)
// with Phi(x) = (1 + erf(x / sqrt 2)) / 2 and phi(x) = exp(-x^2 / 2) /
// sqrt(2 pi), as the gradient rule writes it (eleven element-wise ops), in
// one pass computing in C.
template <typename C>
DISTRT_HD C GeluGrad(C x, C dy) {
  const C cdf = C(0.5) * (C(1) + Erf(x * C(0.70710678118654752440)));
  const C pdf = Exp(C(-0.5) * x * x) * C(0.39894228040143267794);
  return dy * (cdf + x * pdf);
}

// gelu_grad: dx = GeluGrad(x, dy), x, dy and dx of one type and shape.
template <typename T>
struct GeluGradBody {
  const T* x;
  const T* dy;
  T* dx;
  DISTRT_HD void operator()(int64_t i) const {
    dx[i] = Store<T>(GeluGrad(Load(x[i]), Load(dy[i])));
  }
};

// UnaryBody four elements at a time: element pack p is elements
// [4p, 4p + 4), moved as one aligned load and store; the last pack may be
// partial (n need not be a multiple of 4).
template <typename T>
struct UnaryPackBody {
  using C = typename Elem<T>::Compute;
  UnaryOp op;
  const T* x;
  T* y;
  C alpha;
  int64_t n;
  DISTRT_HD void operator()(int64_t p) const {
    const int64_t i0 = p * kPack;
    if (i0 + kPack <= n) {
      const Pack<T> in = reinterpret_cast<const Pack<T>*>(x)[p];
      Pack<T> out;
      DISTRT_UNROLL
      for (int k = 0; k < kPack; ++k) out.v[k] = Store<T>(ApplyUnary(op, Load(in.v[k]), alpha));
      reinterpret_cast<Pack<T>*>(y)[p] = out;
      return;
    }
    for (int64_t i = i0; i < n; ++i) y[i] = Store<T>(ApplyUnary(op, Load(x[i]), alpha));
  }
};

// BinaryBody four elements at a time, for maps that are Packable (no
// operand walks the dims: same shape, one element, a bias, per-row
// values).
template <typename T>
struct BinaryPackBody {
  BinaryOp op;
  const T* a;
  const T* b;
  T* y;
  BroadcastMap map;
  int64_t n;
  DISTRT_HD void operator()(int64_t p) const {
    const int64_t i0 = p * kPack;
    if (i0 + kPack <= n) {
      const PackOffsets o = PackAt(map, i0);
      const Pack<T> va = LoadPack(a, o.base[0], o.step[0]);
      const Pack<T> vb = LoadPack(b, o.base[1], o.step[1]);
      Pack<T> out;
      DISTRT_UNROLL
      for (int k = 0; k < kPack; ++k)
        out.v[k] = Store<T>(ApplyBinary(op, Load(va.v[k]), Load(vb.v[k])));
      reinterpret_cast<Pack<T>*>(y)[p] = out;
      return;
    }
    int64_t off[kMaxOperands];
    for (int64_t i = i0; i < n; ++i) {
      map.Offsets(i, off);
      y[i] = Store<T>(ApplyBinary(op, Load(a[off[0]]), Load(b[off[1]])));
    }
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_ELEMENTWISE_H_
