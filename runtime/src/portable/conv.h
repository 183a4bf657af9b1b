// Convolution kernel bodies (host and device): conv (ONNX Conv, NCHW, 1-D to
// 3-D, groups, strides, pads, dilations, optional bias) and its gradients
// conv_grad_input and conv_grad_weight, on any float storage type (16-bit
// floats compute in f32). They are direct: a thread per output element (or,
// for conv_grad_weight, a warp per weight element) sums its products; the
// host kernels (kernels_conv.cpp) compute the same sums as im2col + GEMM,
// so results agree within the rounding of a reordered sum.
#ifndef DISTRT_SRC_PORTABLE_CONV_H_
#define DISTRT_SRC_PORTABLE_CONV_H_

#include <cstdint>

#include "portable/hd.h"
#include "portable/window.h"

namespace distrt {
namespace portable {

// Batch and channel sizes: x [n, c, in...], w [m, cg, k...], y [n, m, out...];
// group g owns input channels [g * cg, (g + 1) * cg) and output channels
// [g * mg, (g + 1) * mg).
struct ConvSizes {
  int64_t n = 0, c = 0, m = 0, cg = 0, mg = 1;
};

// Output index o of dim j that tap k reaches from input position p, if any:
// o * s - pb + k * d == p with 0 <= o < out.
DISTRT_HD bool OutputOfTap(const Window& win, int j, int64_t p, int64_t k, int64_t* o) {
  const int64_t t = p + win.pb[j] - k * win.d[j];
  if (t < 0) return false;
  int64_t r;
  DivMod(t, win.s[j], o, &r);
  return r == 0 && *o < win.out[j];
}

// y[n, mo, o] = bias[mo] + sum over the group's channels and the window's
// taps inside x of x * w; a thread per element of y. The channel loop is
// innermost, so each tap's bounds are checked once.
template <typename T>
struct ConvBody {
  using C = typename Elem<T>::Compute;
  const T* x;
  const T* w;
  const T* bias;  // may be null
  T* y;
  ConvSizes z;
  Window win;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t o[3], n, mo;
    DivMod(SplitSpatial(i, win.out, o), z.m, &n, &mo);
    const int64_t g = Div(mo, z.mg);
    int64_t base[3], k0[3], k1[3];
    DISTRT_UNROLL
    for (int j = 0; j < 3; ++j) {
      base[j] = o[j] * win.s[j] - win.pb[j];
      TapRange(base[j], win.k[j], win.d[j], 0, win.in[j], &k0[j], &k1[j]);
    }
    const int64_t in_size = win.in_size(), ks = win.k_size();
    const T* xg = x + (n * z.c + g * z.cg) * in_size;
    const T* wm = w + mo * z.cg * ks;
    C acc = C(0);
    for (int64_t kd = k0[0]; kd < k1[0]; ++kd) {
      const int64_t id = base[0] + kd * win.d[0];
      for (int64_t kh = k0[1]; kh < k1[1]; ++kh) {
        const int64_t ih = base[1] + kh * win.d[1];
        const int64_t xrow = (id * win.in[1] + ih) * win.in[2];
        const int64_t wrow = (kd * win.k[1] + kh) * win.k[2];
        for (int64_t kw = k0[2]; kw < k1[2]; ++kw) {
          const T* px = xg + xrow + base[2] + kw * win.d[2];
          const T* pw = wm + wrow + kw;
          for (int64_t ci = 0; ci < z.cg; ++ci) acc += Load(px[ci * in_size]) * Load(pw[ci * ks]);
        }
      }
    }
    if (bias != nullptr) acc += Load(bias[mo]);
    y[i] = Store<T>(acc);
  }
};

// dx[n, ci, p] = sum over the group's output channels mo and the taps k
// that carry input position p to an output position o of dy[n, mo, o] *
// w[mo, ci - g * cg, k]; a thread per element of dx (a gather: no atomics).
template <typename T>
struct ConvGradInputBody {
  using C = typename Elem<T>::Compute;
  const T* dy;
  const T* w;
  T* dx;
  ConvSizes z;
  Window win;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t p[3], n, ci, g, cl;
    DivMod(SplitSpatial(i, win.in, p), z.c, &n, &ci);
    DivMod(ci, z.cg, &g, &cl);
    const int64_t P = win.out_size(), ks = win.k_size(), wstride = z.cg * ks;
    const T* dyg = dy + (n * z.m + g * z.mg) * P;
    const T* wg = w + (g * z.mg * z.cg + cl) * ks;
    C acc = C(0);
    int64_t od, oh, ow;
    for (int64_t kd = 0; kd < win.k[0]; ++kd) {
      if (!OutputOfTap(win, 0, p[0], kd, &od)) continue;
      for (int64_t kh = 0; kh < win.k[1]; ++kh) {
        if (!OutputOfTap(win, 1, p[1], kh, &oh)) continue;
        for (int64_t kw = 0; kw < win.k[2]; ++kw) {
          if (!OutputOfTap(win, 2, p[2], kw, &ow)) continue;
          const T* pdy = dyg + (od * win.out[1] + oh) * win.out[2] + ow;
          const T* pw = wg + (kd * win.k[1] + kh) * win.k[2] + kw;
          for (int64_t mo = 0; mo < z.mg; ++mo) acc += Load(pdy[mo * P]) * Load(pw[mo * wstride]);
        }
      }
    }
    dx[i] = Store<T>(acc);
  }
};

// dw[mo, cl, k] = sum over images and the output positions o whose tap k
// lands inside x of dy[n, mo, o] * x[n, g * cg + cl, o * s - pb + k * d]:
// a row per (chunk, weight element), row = chunk * wsize + widx, its lanes
// striding over the chunk's share of those positions (a box per tap, so
// no bounds checks in the loop). With one chunk the row writes dw; with
// several it writes its partial sum (compute type) to partial[row] and
// ConvGradWeightFinishBody adds the chunks.
template <typename T>
struct ConvGradWeightBody {
  using C = typename Elem<T>::Compute;
  const T* x;
  const T* dy;
  T* dw;
  C* partial;  // null when chunks == 1
  ConvSizes z;
  Window win;
  int64_t chunks;
  template <typename Lanes>
  DISTRT_HD void operator()(int64_t row, const Lanes& lanes) const {
    const int64_t ks = win.k_size(), wsize = z.m * z.cg * ks;
    int64_t chunk, widx, kk[3], mo, cl;
    DivMod(row, wsize, &chunk, &widx);
    DivMod(SplitSpatial(widx, win.k, kk), z.cg, &mo, &cl);
    const int64_t ci = Div(mo, z.mg) * z.cg + cl;
    int64_t o0[3], o1[3], ext[3], off[3];
    DISTRT_UNROLL
    for (int j = 0; j < 3; ++j) {
      off[j] = kk[j] * win.d[j] - win.pb[j];
      TapRange(off[j], win.out[j], win.s[j], 0, win.in[j], &o0[j], &o1[j]);
      ext[j] = o1[j] - o0[j];
    }
    const int64_t total = z.n * ext[0] * ext[1] * ext[2];
    const int64_t q0 = Div(total * chunk, chunks), q1 = Div(total * (chunk + 1), chunks);
    const int64_t P = win.out_size(), in_size = win.in_size();
    const T* pdy = dy + mo * P;
    const T* px = x + ci * in_size;
    C acc = C(0);
    for (int64_t q = q0 + lanes.lane; q < q1; q += Lanes::count) {
      int64_t b[3];
      const int64_t nn = SplitSpatial(q, ext, b);
      const int64_t od = o0[0] + b[0], oh = o0[1] + b[1], ow = o0[2] + b[2];
      const int64_t id = od * win.s[0] + off[0], ih = oh * win.s[1] + off[1],
                    iw = ow * win.s[2] + off[2];
      acc += Load(pdy[nn * z.m * P + (od * win.out[1] + oh) * win.out[2] + ow]) *
             Load(px[nn * z.c * in_size + (id * win.in[1] + ih) * win.in[2] + iw]);
    }
    acc = lanes.Sum(acc);
    if (lanes.lane == 0) {
      if (partial != nullptr)
        partial[row] = acc;
      else
        dw[widx] = Store<T>(acc);
    }
  }
};

// dw[i] = the sum of its chunks' partial sums, in chunk order.
template <typename T>
struct ConvGradWeightFinishBody {
  using C = typename Elem<T>::Compute;
  const C* partial;
  T* dw;
  int64_t wsize;
  int64_t chunks;
  DISTRT_HD void operator()(int64_t i) const {
    C acc = C(0);
    for (int64_t c = 0; c < chunks; ++c) acc += partial[c * wsize + i];
    dw[i] = Store<T>(acc);
  }
};

// How many chunks conv_grad_weight splits each weight element's sum into:
// enough rows (a warp each on a GPU) to occupy the device when the weight
// is small, but no chunk shorter than about 2048 positions (`positions`:
// images times output positions, the sum's length before pads).
inline int64_t ConvGradWeightChunks(int64_t wsize, int64_t positions) {
  if (wsize <= 0) return 1;
  const int64_t kRows = 8192, kMinChunk = 2048;
  int64_t c = (kRows + wsize - 1) / wsize;
  const int64_t by_length = positions / kMinChunk;
  if (c > by_length) c = by_length;
  return c < 1 ? 1 : c;
}

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_CONV_H_
