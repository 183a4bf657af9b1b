// Pooling kernel bodies (host and device): max_pool / avg_pool (ONNX
// MaxPool / AveragePool, 1-D to 3-D, strides, pads, dilations, ceil_mode
// through the output extents, count_include_pad), their gradients
// max_pool_grad / avg_pool_grad, and global_max_pool / global_avg_pool, on
// any float storage type. Semantics are the host kernels'
// (kernels_pool.cpp): a max carries a NaN from its window; a window with no
// element inside the input gives -inf (max) or, when its divisor is 0, NaN
// (avg); averages sum in f64 for f32 and f64, as the host does (in f32 for
// 16-bit floats); max_pool_grad gives each window's gradient to its first
// maximum in scan order, or to its last NaN; gradients gather, adding the
// windows that reach an element in the host's (output scan) order, so f32
// and f64 results are the host's bit for bit.
#ifndef DISTRT_SRC_PORTABLE_POOL_H_
#define DISTRT_SRC_PORTABLE_POOL_H_

#include <cmath>
#include <cstdint>

#include "portable/hd.h"
#include "portable/window.h"

namespace distrt {
namespace portable {

// What averages sum in.
template <typename T>
struct PoolAcc {
  using type = double;
};
template <>
struct PoolAcc<bf16_t> {
  using type = float;
};
template <>
struct PoolAcc<f16_t> {
  using type = float;
};

template <typename C>
DISTRT_HD C QuietNan() {
  return static_cast<C>(NAN);
}

// The taps of output element o's window that fall inside the input, per
// dim [k0, k1), and its count_include_pad divisor (taps inside the input
// plus its declared pads).
struct WindowTaps {
  int64_t base[3], k0[3], k1[3];
  int64_t inside = 1, padded = 1;
  DISTRT_HD WindowTaps(const Window& win, const int64_t o[3]) {
    DISTRT_UNROLL
    for (int j = 0; j < 3; ++j) {
      base[j] = o[j] * win.s[j] - win.pb[j];
      TapRange(base[j], win.k[j], win.d[j], 0, win.in[j], &k0[j], &k1[j]);
      int64_t a, b;
      TapRange(base[j], win.k[j], win.d[j], -win.pb[j], win.in[j] + win.pe[j], &a, &b);
      inside *= k1[j] - k0[j];
      padded *= b - a;
    }
  }
  // Offset in the input plane of tap (kd, kh, kw).
  DISTRT_HD int64_t Offset(const Window& win, int64_t kd, int64_t kh, int64_t kw) const {
    return ((base[0] + kd * win.d[0]) * win.in[1] + base[1] + kh * win.d[1]) * win.in[2] +
           base[2] + kw * win.d[2];
  }
};

// max_pool / avg_pool: a thread per output element of [planes, out...].
template <typename T>
struct PoolBody {
  using C = typename Elem<T>::Compute;
  using A = typename PoolAcc<T>::type;
  const T* x;
  T* y;
  Window win;
  bool is_max;
  bool include_pad;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t o[3];
    const int64_t plane = SplitSpatial(i, win.out, o);
    const WindowTaps w(win, o);
    const T* px = x + plane * win.in_size();
    if (is_max) {
      C acc = -static_cast<C>(HUGE_VAL);
      bool nan = false;
      for (int64_t kd = w.k0[0]; kd < w.k1[0]; ++kd)
        for (int64_t kh = w.k0[1]; kh < w.k1[1]; ++kh)
          for (int64_t kw = w.k0[2]; kw < w.k1[2]; ++kw) {
            const C v = Load(px[w.Offset(win, kd, kh, kw)]);
            if (v != v) nan = true;
            if (acc < v) acc = v;  // the first of equal values stays, as std::max keeps it
          }
      y[i] = Store<T>(nan ? QuietNan<C>() : acc);
      return;
    }
    A acc = A(0);
    for (int64_t kd = w.k0[0]; kd < w.k1[0]; ++kd)
      for (int64_t kh = w.k0[1]; kh < w.k1[1]; ++kh)
        for (int64_t kw = w.k0[2]; kw < w.k1[2]; ++kw)
          acc += static_cast<A>(Load(px[w.Offset(win, kd, kh, kw)]));
    const int64_t div = include_pad ? w.padded : w.inside;
    y[i] = Store<T>(div > 0 ? static_cast<C>(acc / static_cast<A>(div)) : QuietNan<C>());
  }
};

// max_pool_grad, first pass: per output element of [planes, out...], the
// input-plane offset of the element its window's gradient goes to (the
// first maximum in scan order; a NaN takes it, the last NaN winning), or
// -1 for a window with nothing inside the input.
template <typename T>
struct MaxPoolArgBody {
  using C = typename Elem<T>::Compute;
  const T* x;
  int64_t* arg;
  Window win;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t o[3];
    const int64_t plane = SplitSpatial(i, win.out, o);
    const WindowTaps w(win, o);
    const T* px = x + plane * win.in_size();
    int64_t best = -1;
    C best_v = C(0);
    for (int64_t kd = w.k0[0]; kd < w.k1[0]; ++kd)
      for (int64_t kh = w.k0[1]; kh < w.k1[1]; ++kh)
        for (int64_t kw = w.k0[2]; kw < w.k1[2]; ++kw) {
          const int64_t off = w.Offset(win, kd, kh, kw);
          const C v = Load(px[off]);
          if (best < 0 || v > best_v || v != v) {
            best = off;
            best_v = v;
          }
        }
    arg[i] = best;
  }
};

// Calls f(od, oh, ow) for each output element whose window covers input
// position p (in the input's own plane), in output scan order: per dim
// the taps from last to first reach increasing outputs.
template <typename F>
DISTRT_HD void ForCoveringWindows(const Window& win, const int64_t p[3], const F& f) {
  for (int64_t kd = win.k[0] - 1; kd >= 0; --kd) {
    int64_t od;
    const int64_t td = p[0] + win.pb[0] - kd * win.d[0];
    if (td < 0) continue;
    int64_t rd;
    DivMod(td, win.s[0], &od, &rd);
    if (rd != 0) continue;
    if (od >= win.out[0]) break;
    for (int64_t kh = win.k[1] - 1; kh >= 0; --kh) {
      int64_t oh;
      const int64_t th = p[1] + win.pb[1] - kh * win.d[1];
      if (th < 0) continue;
      int64_t rh;
      DivMod(th, win.s[1], &oh, &rh);
      if (rh != 0) continue;
      if (oh >= win.out[1]) break;
      for (int64_t kw = win.k[2] - 1; kw >= 0; --kw) {
        int64_t ow;
        const int64_t tw = p[2] + win.pb[2] - kw * win.d[2];
        if (tw < 0) continue;
        int64_t rw;
        DivMod(tw, win.s[2], &ow, &rw);
        if (rw != 0) continue;
        if (ow >= win.out[2]) break;
        f(od, oh, ow);
      }
    }
  }
}

// max_pool_grad, second pass: a thread per element of dx [planes, in...]
// adds the gradients of the windows whose chosen element it is (arg from
// MaxPoolArgBody), in output scan order.
template <typename T>
struct MaxPoolGradBody {
  using C = typename Elem<T>::Compute;
  const T* dy;
  const int64_t* arg;
  T* dx;
  Window win;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t p[3];
    const int64_t plane = SplitSpatial(i, win.in, p);
    const int64_t self = (p[0] * win.in[1] + p[1]) * win.in[2] + p[2];
    const int64_t ob = plane * win.out_size();
    const T* pdy = dy + ob;
    const int64_t* parg = arg + ob;
    C acc = C(0);
    ForCoveringWindows(win, p, [&](int64_t od, int64_t oh, int64_t ow) {
      const int64_t o = (od * win.out[1] + oh) * win.out[2] + ow;
      if (parg[o] == self) acc += Load(pdy[o]);
    });
    dx[i] = Store<T>(acc);
  }
};

// avg_pool_grad: a thread per element of dx [planes, in...] adds, for each
// window covering it, the window's gradient over the forward's divisor
// (the share computed in PoolAcc's type and rounded to the compute type,
// as the host rounds it to T), in output scan order.
template <typename T>
struct AvgPoolGradBody {
  using C = typename Elem<T>::Compute;
  using A = typename PoolAcc<T>::type;
  const T* dy;
  T* dx;
  Window win;
  bool include_pad;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t p[3];
    const int64_t plane = SplitSpatial(i, win.in, p);
    const T* pdy = dy + plane * win.out_size();
    C acc = C(0);
    ForCoveringWindows(win, p, [&](int64_t od, int64_t oh, int64_t ow) {
      const int64_t o[3] = {od, oh, ow};
      const WindowTaps w(win, o);
      const int64_t div = include_pad ? w.padded : w.inside;
      const A g = static_cast<A>(Load(pdy[(od * win.out[1] + oh) * win.out[2] + ow]));
      acc += static_cast<C>(g / static_cast<A>(div));
    });
    dx[i] = Store<T>(acc);
  }
};

// global_max_pool / global_avg_pool: a row per plane of n elements, its
// lanes striding over it.
template <typename T>
struct GlobalPoolBody {
  using C = typename Elem<T>::Compute;
  using A = typename PoolAcc<T>::type;
  const T* x;
  T* y;
  int64_t n;
  bool is_max;
  template <typename Lanes>
  DISTRT_HD void operator()(int64_t row, const Lanes& lanes) const {
    const T* px = x + row * n;
    if (is_max) {
      C acc = -static_cast<C>(HUGE_VAL);
      for (int64_t j = lanes.lane; j < n; j += Lanes::count) {
        const C v = Load(px[j]);
        if (v > acc || v != v) acc = v;  // a NaN stays: nothing compares above it
      }
      acc = lanes.Max(acc);
      if (lanes.lane == 0) y[row] = Store<T>(acc != acc ? QuietNan<C>() : acc);
      return;
    }
    A acc = A(0);
    for (int64_t j = lanes.lane; j < n; j += Lanes::count) acc += static_cast<A>(Load(px[j]));
    acc = lanes.Sum(acc);
    if (lanes.lane == 0) y[row] = Store<T>(static_cast<C>(acc / static_cast<A>(n)));
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_POOL_H_
