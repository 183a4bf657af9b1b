// Normalisation kernel bodies (host and device): softmax / log_softmax over
// one axis and softmax's gradient (softmax_grad), each with attention's
// scale and mask fused in where asked (ScaleAndMask), cross-entropy's sums and
// gradient, layer_norm over the trailing dims, and inference batch_norm, on
// any float storage type (16-bit floats compute in f32). Semantics are the
// host kernels' (kernels_norm.cpp): softmax subtracts the row max (0 for a
// row of -inf) so a NaN or +inf anywhere makes the row NaN; layer_norm uses
// the biased variance and scale/bias broadcast over the normalised shape;
// batch_norm folds scale, bias, mean and variance per channel in f64.
#ifndef DISTRT_SRC_PORTABLE_NORM_H_
#define DISTRT_SRC_PORTABLE_NORM_H_

#include <cmath>
#include <cstdint>

#include "portable/hd.h"
#include "portable/index_map.h"
#include "portable/math.h"

namespace distrt {
namespace portable {

// A running (max, sum of exp(x - max)) over values seen in any order: one
// pass gives the row max and the softmax denominator. -inf values add
// nothing; a NaN makes the sum NaN, as the host's exp(NaN - max) does.
template <typename C>
struct MaxSumExp {
  C m = -static_cast<C>(HUGE_VAL);
  C s = C(0);
  DISTRT_HD void Add(C v) {
    if (v > m) {
      s = s * Exp(m - v) + C(1);
      m = v;
    } else if (v != -static_cast<C>(HUGE_VAL)) {
      s += Exp(v - m);
    }
  }
  // Folds another running pair in; the larger max rescales the other sum
  // (exp(inf - inf) is NaN: a +inf makes the row NaN, as on the host).
  DISTRT_HD void Merge(C m2, C s2) {
    const C big = m2 > m ? m2 : m;
    if (big == -static_cast<C>(HUGE_VAL)) {
      s += s2;
      return;
    }
    s = s * Exp(m - big) + s2 * Exp(m2 - big);
    m = big;
  }
};

// softmax y = exp(x - m) / sum, log_softmax y = x - (m + log(sum)), with m
// the row max (0 when the row max is -inf, avoiding inf - inf; a +inf max
// makes the row NaN, as the host's exp(inf - inf) does).
template <typename C>
struct SoftmaxFinish {
  C m, scale;  // scale: 1 / sum, or log(sum) for log_softmax
  bool log;
  DISTRT_HD SoftmaxFinish(C max, C sum, bool is_log) : log(is_log) {
    const C inf = static_cast<C>(HUGE_VAL);
    m = max == -inf ? C(0) : max;
    if (max == inf) sum = max - max;  // the host's exp(inf - inf): NaN
    scale = is_log ? Log(sum) : C(1) / sum;
  }
  DISTRT_HD C operator()(C v) const { return log ? v - (m + scale) : Exp(v - m) * scale; }
};

// Attention's scale and mask as a fused softmax applies them to its input
// (stored as T) and its gradient to its output (stored as R): where the
// mask hides element e (mask[e mod mask_size] is true, or false with
// `keeps`), the input reads `fill` (as the masking where's type holds it)
// and the gradient 0; elsewhere the input reads x * scale (x / scale with
// `divide`) rounded to T, and the gradient g rounded to R, then scaled —
// the rounding of the mul, where and mul the fused op stands for. The
// mask broadcasts over x's leading dims (x's trailing dims after leading
// 1s), so a row along the last axis lies inside one period of it, or it
// has one element. The default (no mask, no scale) reads x as it is.
template <typename C>
struct ScaleAndMask {
  const bool* mask = nullptr;
  int64_t mask_size = 1;
  C scale = C(1);
  C fill = C(0);
  bool scaled = false, divide = false, keeps = false;

  DISTRT_HD bool Hidden(int64_t m) const { return mask != nullptr && mask[m] != keeps; }
  // The mask index of a row's first element, at flat index `start`, and
  // how it moves along the row.
  DISTRT_HD int64_t RowStart(int64_t start) const {
    return mask_size == 1 ? 0 : Mod(start, mask_size);
  }
  DISTRT_HD int64_t Step() const { return mask_size == 1 ? 0 : 1; }
  // The same in compute type D (a launcher's f64 copy for an f32 body).
  template <typename D>
  DISTRT_HD ScaleAndMask<D> As() const {
    return {mask, mask_size, static_cast<D>(scale), static_cast<D>(fill), scaled, divide, keeps};
  }
  // Element v of the input, at mask index m.
  template <typename T>
  DISTRT_HD C In(T v, int64_t m) const {
    if (Hidden(m)) return fill;
    C c = Load(v);
    if (scaled) c = Load(Store<T>(divide ? c / scale : c * scale));
    return c;
  }
  // The gradient g of the element at mask index m, before its store as R.
  template <typename R>
  DISTRT_HD C Out(C g, int64_t m) const {
    if (Hidden(m)) return C(0);
    if (!scaled) return g;
    const C r = Load(Store<R>(g));
    return divide ? r / scale : r * scale;
  }
};

// Whether a row-wise body (a warp per row) runs [outer, n, inner] rather
// than the column body (a thread per column): rows contiguous and long
// enough for a warp to share.
inline bool WarpPerRow(int64_t n, int64_t inner) { return inner == 1 && n >= 32; }

// Rows: x is [rows, n] (the softmax axis last); a warp per row, two passes:
// the running (max, sum) and then the outputs. y is stored as R: T, or f32
// for a 16-bit x (a widening cast folded in).
template <typename T, typename R = T>
struct SoftmaxRowsBody {
  using C = typename Elem<T>::Compute;
  const T* x;
  R* y;
  int64_t n;
  bool log;
  ScaleAndMask<C> in = {};
  template <typename Lanes>
  DISTRT_HD void operator()(int64_t row, const Lanes& lanes) const {
    const T* px = x + row * n;
    R* py = y + row * n;
    const int64_t m0 = in.RowStart(row * n), dm = in.Step();
    // Two running pairs per lane: two loads in flight.
    MaxSumExp<C> a, b;
    int64_t j = lanes.lane;
    for (; j + Lanes::count < n; j += 2 * Lanes::count) {
      a.Add(in.In(px[j], m0 + j * dm));
      b.Add(in.In(px[j + Lanes::count], m0 + (j + Lanes::count) * dm));
    }
    if (j < n) a.Add(in.In(px[j], m0 + j * dm));
    a.Merge(b.m, b.s);
    // Across lanes: the row max, then every lane's sum rescaled to it.
    const C m = lanes.Max(a.m);
    C mine = a.s;
    if (m != -static_cast<C>(HUGE_VAL)) mine = a.s * Exp(a.m - m);
    const C sum = lanes.Sum(mine);
    const SoftmaxFinish<C> f(m, sum, log);
    for (j = lanes.lane; j < n; j += Lanes::count) py[j] = Store<R>(f(in.In(px[j], m0 + j * dm)));
  }
};

// Columns: x is [outer, n, inner]; thread t = o * inner + i handles
// x[o, :, i] (coalesced over i).
template <typename T, typename R = T>
struct SoftmaxColsBody {
  using C = typename Elem<T>::Compute;
  const T* x;
  R* y;
  int64_t n;
  int64_t inner;
  bool log;
  ScaleAndMask<C> in = {};
  DISTRT_HD void operator()(int64_t t) const {
    int64_t i, o;
    DivMod(t, inner, &o, &i);
    const int64_t base = o * n * inner + i;
    const T* px = x + base;
    R* py = y + base;
    // The mask index of element k (a column crosses rows of the mask).
    auto at = [&](int64_t k) {
      return in.mask_size == 1 ? 0 : Mod(base + k * inner, in.mask_size);
    };
    MaxSumExp<C> a;
    for (int64_t k = 0; k < n; ++k) a.Add(in.In(px[k * inner], at(k)));
    const SoftmaxFinish<C> f(a.m, a.s, log);
    for (int64_t k = 0; k < n; ++k) py[k * inner] = Store<R>(f(in.In(px[k * inner], at(k))));
  }
};

// softmax_grad dx = y * (dy - s), s = sum(dy * y) along the axis (the host's
// softmax_grad; the sum accumulates in the compute type, y's). dy is stored
// as D and dx as R: T, or 16-bit floats for an f32 y (casts folded in).
// Rows: [rows, n], a warp per row; each row is read whole before any of it
// is written.
template <typename T, typename D = T, typename R = T>
struct SoftmaxGradRowsBody {
  using C = typename Elem<T>::Compute;
  const T* y;
  const D* dy;
  R* dx;
  int64_t n;
  ScaleAndMask<C> out = {};
  template <typename Lanes>
  DISTRT_HD void operator()(int64_t row, const Lanes& lanes) const {
    const T* py = y + row * n;
    const D* pd = dy + row * n;
    R* px = dx + row * n;
    const int64_t m0 = out.RowStart(row * n), dm = out.Step();
    C mine = C(0);
    for (int64_t j = lanes.lane; j < n; j += Lanes::count) mine += Load(pd[j]) * Load(py[j]);
    const C s = lanes.Sum(mine);
    for (int64_t j = lanes.lane; j < n; j += Lanes::count)
      px[j] = Store<R>(out.template Out<R>(Load(py[j]) * (Load(pd[j]) - s), m0 + j * dm));
  }
};

// Columns: [outer, n, inner]; thread t = o * inner + i handles column (o, i).
template <typename T, typename D = T, typename R = T>
struct SoftmaxGradColsBody {
  using C = typename Elem<T>::Compute;
  const T* y;
  const D* dy;
  R* dx;
  int64_t n;
  int64_t inner;
  ScaleAndMask<C> out = {};
  DISTRT_HD void operator()(int64_t t) const {
    int64_t i, o;
    DivMod(t, inner, &o, &i);
    const int64_t base = o * n * inner + i;
    C s = C(0);
    for (int64_t k = 0; k < n; ++k) s += Load(dy[base + k * inner]) * Load(y[base + k * inner]);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t at = base + k * inner;
      const int64_t m = out.mask_size == 1 ? 0 : Mod(at, out.mask_size);
      dx[at] = Store<R>(out.template Out<R>(Load(y[at]) * (Load(dy[at]) - s), m));
    }
  }
};

// Cross-entropy's fused forms (dist-fuse-for-target writes them from the
// loss a training step builds), over logits x [rows, n] whose classes are
// first_class, first_class + 1, ... (a rank's share of the vocabulary),
// with per-row values in the compute type C: x is read widened from its
// storage type T to C; the gradient is stored as R.
//
// cross_entropy_sums, a warp per row: sum_exp = sum_j exp(x_j - max) and
// label_logit = x_label - max (0 when the label is not one of the classes).
template <typename T, typename C, typename I>
struct CrossEntropySumsBody {
  const T* x;
  const C* max;
  const I* labels;
  C* sum_exp;
  C* label_logit;
  int64_t n;
  int64_t first_class;
  template <typename Lanes>
  DISTRT_HD void operator()(int64_t row, const Lanes& lanes) const {
    const T* px = x + row * n;
    const C m = max[row];
    // Two partial sums per lane: two loads in flight.
    C a = C(0), b = C(0);
    int64_t j = lanes.lane;
    for (; j + Lanes::count < n; j += 2 * Lanes::count) {
      a += Exp(static_cast<C>(Load(px[j])) - m);
      b += Exp(static_cast<C>(Load(px[j + Lanes::count])) - m);
    }
    if (j < n) a += Exp(static_cast<C>(Load(px[j])) - m);
    const C s = lanes.Sum(a + b);
    if (lanes.lane != 0) return;
    sum_exp[row] = s;
    const int64_t k = static_cast<int64_t>(labels[row]) - first_class;
    label_logit[row] = k >= 0 && k < n ? static_cast<C>(Load(px[k])) - m : C(0);
  }
};

// cross_entropy_grad, a warp per row (no index division per element; the
// row's values read once):
// dx_j = exp(x_j - max) * scale - (j is the label ? weight : 0).
template <typename T, typename C, typename I, typename R>
struct CrossEntropyGradBody {
  const T* x;
  const C* max;
  const C* scale;
  const C* weight;
  const I* labels;
  R* dx;
  int64_t n;
  int64_t first_class;
  template <typename Lanes>
  DISTRT_HD void operator()(int64_t row, const Lanes& lanes) const {
    const T* px = x + row * n;
    R* pd = dx + row * n;
    const C m = max[row], f = scale[row];
    const int64_t k = static_cast<int64_t>(labels[row]) - first_class;
    for (int64_t j = lanes.lane; j < n; j += Lanes::count) {
      C g = Exp(static_cast<C>(Load(px[j])) - m) * f;
      if (j == k) g -= weight[row];
      pd[j] = Store<R>(static_cast<typename Elem<R>::Compute>(g));
    }
  }
};

// layer_norm of x [rows, n]: mean, then the biased variance about it, then
// y = (x - mean) * inv_std * scale + bias. `params` maps an index of the
// normalised shape to scale's (operand 0) and bias's (operand 1) offsets;
// bias may be null.
template <typename T>
struct LayerNormBody {
  using C = typename Elem<T>::Compute;
  const T* x;
  const T* scale;
  const T* bias;
  T* y;
  int64_t n;
  C eps;
  BroadcastMap params;
  template <typename Lanes>
  DISTRT_HD void operator()(int64_t row, const Lanes& lanes) const {
    const T* px = x + row * n;
    T* py = y + row * n;
    C s0 = C(0), s1 = C(0);
    int64_t j = lanes.lane;
    for (; j + Lanes::count < n; j += 2 * Lanes::count) {
      s0 += Load(px[j]);
      s1 += Load(px[j + Lanes::count]);
    }
    if (j < n) s0 += Load(px[j]);
    const C mean = lanes.Sum(s0 + s1) / static_cast<C>(n);
    C q0 = C(0), q1 = C(0);
    for (j = lanes.lane; j + Lanes::count < n; j += 2 * Lanes::count) {
      const C d0 = Load(px[j]) - mean, d1 = Load(px[j + Lanes::count]) - mean;
      q0 += d0 * d0;
      q1 += d1 * d1;
    }
    if (j < n) {
      const C d = Load(px[j]) - mean;
      q0 += d * d;
    }
    const C var = lanes.Sum(q0 + q1) / static_cast<C>(n);
    const C inv = C(1) / Sqrt(var + eps);
    for (j = lanes.lane; j < n; j += Lanes::count) {
      int64_t off[kMaxOperands];
      params.Offsets(j, off);
      C v = (Load(px[j]) - mean) * inv * Load(scale[off[0]]);
      if (bias != nullptr) v += Load(bias[off[1]]);
      py[j] = Store<T>(v);
    }
  }
};

// batch_norm's per-channel factors, in f64 as the host folds them:
// mul = scale / sqrt(var + eps), add = bias - mean * mul.
template <typename T>
struct BatchNormFactorsBody {
  using C = typename Elem<T>::Compute;
  const T* scale;
  const T* bias;
  const T* mean;
  const T* var;
  C* mul;
  C* add;
  double eps;
  DISTRT_HD void operator()(int64_t k) const {
    const double m =
        static_cast<double>(Load(scale[k])) / Sqrt(static_cast<double>(Load(var[k])) + eps);
    mul[k] = static_cast<C>(m);
    add[k] =
        static_cast<C>(static_cast<double>(Load(bias[k])) - static_cast<double>(Load(mean[k])) * m);
  }
};

// y = x * mul[c] + add[c] for x [N, C, spatial...]; element i is in channel
// (i / spatial) % channels.
template <typename T>
struct BatchNormBody {
  using C = typename Elem<T>::Compute;
  const T* x;
  const C* mul;
  const C* add;
  T* y;
  int64_t channels;
  int64_t spatial;
  DISTRT_HD void operator()(int64_t i) const {
    const int64_t k = Mod(Div(i, spatial), channels);
    y[i] = Store<T>(Load(x[i]) * mul[k] + add[k]);
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_NORM_H_
