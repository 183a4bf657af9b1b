// softmax, log_softmax, softmax_grad, cross_entropy_sums and _grad, layer_norm,
// batch_norm.
#include <algorithm>
#include <cmath>
#include <limits>

#include "axis_geometry.h"
#include "cross_entropy_types.h"
#include "exp_f32.h"
#include "kernel_util.h"
#include "scale_and_mask.h"

namespace distrt {
namespace {

Status VerifySame(const VerifyContext& ctx) {
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

// ---- softmax -------------------------------------------------------------------

// Float rows keep their reductions in kLanes partial results, which GCC
// vectorises without reassociation flags, and exponentiate with ExpF32.
constexpr int kLanes = 8;

DISTRT_SIMD_CLONES float MaxF32(const float* x, int64_t n) {
  float lane[kLanes];
  for (int j = 0; j < kLanes; ++j) lane[j] = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] = std::max(lane[j], x[i + j]);
  }
  float m = lane[0];
  for (int j = 1; j < kLanes; ++j) m = std::max(m, lane[j]);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

// Sum of exp(x - m); y (when given) receives the exponentials.
DISTRT_SIMD_CLONES double SumExpF32(const float* x, float m, float* y, int64_t n) {
  float lane[kLanes] = {};
  int64_t i = 0;
  if (y != nullptr) {
    for (; i + kLanes <= n; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) {
        const float e = ExpF32(x[i + j] - m);
        y[i + j] = e;
        lane[j] += e;
      }
    }
  } else {
    for (; i + kLanes <= n; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) lane[j] += ExpF32(x[i + j] - m);
    }
  }
  double sum = 0;
  for (int j = 0; j < kLanes; ++j) sum += lane[j];
  for (; i < n; ++i) {
    const float e = ExpF32(x[i] - m);
    if (y != nullptr) y[i] = e;
    sum += e;
  }
  return sum;
}

DISTRT_SIMD_CLONES void ScaleF32(float* y, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

DISTRT_SIMD_CLONES void SubF32(const float* x, float s, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] - s;
}

void SoftmaxRow(bool log, const float* x, float* y, int64_t n) {
  float m = MaxF32(x, n);
  if (std::isinf(m) && m < 0) m = 0;  // all -inf row: avoid inf - inf
  if (log) {
    const float lse = static_cast<float>(std::log(SumExpF32(x, m, nullptr, n)));
    SubF32(x, m + lse, y, n);
  } else {
    ScaleF32(y, static_cast<float>(1.0 / SumExpF32(x, m, y, n)), n);
  }
}

void SoftmaxRow(bool log, const double* px, double* py, int64_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < n; ++k) m = std::max(m, px[k]);
  if (std::isinf(m) && m < 0) m = 0;  // all -inf row: avoid inf - inf
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    double e = std::exp(px[k] - m);
    if (!log) py[k] = e;
    sum += e;
  }
  if (log) {
    double lse = std::log(sum);
    for (int64_t k = 0; k < n; ++k) py[k] = px[k] - m - lse;
  } else {
    double inv = 1.0 / sum;
    for (int64_t k = 0; k < n; ++k) py[k] *= inv;
  }
}

template <typename T>
void SoftmaxRows(bool log, const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                 ThreadPool* pool) {
  if (inner == 1) {  // fast path: contiguous rows
    int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n));
    ParallelFor(pool, outer, grain, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) SoftmaxRow(log, x + o * n, y + o * n, n);
    });
    return;
  }
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n * inner));
  ParallelFor(pool, outer, grain, [&](int64_t o0, int64_t o1) {
    std::vector<T> m(static_cast<size_t>(inner));
    std::vector<double> sum(static_cast<size_t>(inner));
    for (int64_t o = o0; o < o1; ++o) {
      const T* px = x + o * n * inner;
      T* py = y + o * n * inner;
      std::fill(m.begin(), m.end(), -std::numeric_limits<T>::infinity());
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t i = 0; i < inner; ++i) m[i] = std::max(m[i], px[k * inner + i]);
      }
      for (int64_t i = 0; i < inner; ++i) {
        if (std::isinf(m[i]) && m[i] < 0) m[i] = 0;
      }
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          T e = std::exp(px[k * inner + i] - m[i]);
          if (!log) py[k * inner + i] = e;
          sum[i] += e;
        }
      }
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          if (log) {
            py[k * inner + i] = px[k * inner + i] - m[i] - static_cast<T>(std::log(sum[i]));
          } else {
            py[k * inner + i] = static_cast<T>(py[k * inner + i] / sum[i]);
          }
        }
      }
    }
  });
}

// f(i, m) for elements i of [0, count) of a run that starts at flat index
// `begin`, m the mask index of each (portable::ScaleAndMask).
template <typename T, typename F>
void WalkMask(const portable::ScaleAndMask<T>& sm, int64_t begin, int64_t count, F f) {
  int64_t m = sm.mask_size == 1 ? 0 : begin % sm.mask_size;
  for (int64_t i = 0; i < count; ++i) {
    f(i, m);
    if (sm.mask_size != 1 && ++m == sm.mask_size) m = 0;
  }
}

// x as a fused softmax reads it, attention's scale and mask applied:
// elements [begin, begin + count) into z.
template <typename T>
void ScaledAndMasked(const portable::ScaleAndMask<T>& sm, const T* x, T* z, int64_t begin,
                     int64_t count) {
  WalkMask(sm, begin, count, [&](int64_t i, int64_t m) { z[i] = sm.In(x[i], m); });
}

// The mask of elements [begin, begin + count) as one contiguous run of
// the mask (a softmax row lies inside one period of it; a one-element mask
// is its own run), or null where there is no mask; false where the run
// wraps around the mask's period.
bool ContiguousMask(const portable::ScaleAndMask<float>& sm, int64_t begin, int64_t count,
                    const bool** run) {
  *run = sm.mask;
  if (sm.mask == nullptr || sm.mask_size == 1) return true;
  const int64_t m = sm.RowStart(begin);
  if (m + count > sm.mask_size) return false;
  *run = sm.mask + m;
  return true;
}

// Branch-free forms of In and Out over a row (f32, where the rounding to
// T is none), which the compiler vectorises; the per-element walk of the
// mask's period cost the masked softmax and its gradient about 2 ns an
// element.
DISTRT_SIMD_CLONES void ScaleMaskRowF32(const float* x, const bool* hidden, bool keeps, float fill,
                                        float factor, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] * factor;
    z[i] = hidden[i] != keeps ? fill : v;
  }
}

DISTRT_SIMD_CLONES void DivideMaskRowF32(const float* x, const bool* hidden, bool keeps, float fill,
                                         float divisor, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] / divisor;
    z[i] = hidden[i] != keeps ? fill : v;
  }
}

DISTRT_SIMD_CLONES void ScaleRowF32(const float* x, float factor, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] * factor;
}

DISTRT_SIMD_CLONES void DivideRowF32(const float* x, float divisor, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] / divisor;
}

// x * scale (or / scale; x itself unscaled), `fill` where hidden: In and
// Out of a contiguous run alike, Out with a fill of 0.
void ScaleAndMaskRun(const portable::ScaleAndMask<float>& sm, const bool* run, float fill,
                     const float* x, float* z, int64_t n) {
  // A one-element mask hides the whole row or none of it.
  const bool uniform = sm.mask_size == 1;
  if (run != nullptr && uniform && run[0] != sm.keeps) {
    std::fill(z, z + n, fill);
    return;
  }
  if (run == nullptr || uniform) {
    if (!sm.scaled) {
      if (z != x) std::copy(x, x + n, z);
    } else if (sm.divide) {
      DivideRowF32(x, sm.scale, z, n);
    } else {
      ScaleRowF32(x, sm.scale, z, n);
    }
    return;
  }
  if (sm.scaled && sm.divide)
    DivideMaskRowF32(x, run, sm.keeps, fill, sm.scale, z, n);
  else
    ScaleMaskRowF32(x, run, sm.keeps, fill, sm.scaled ? sm.scale : 1.0f, z, n);
}

void ScaledAndMasked(const portable::ScaleAndMask<float>& sm, const float* x, float* z,
                     int64_t begin, int64_t count) {
  const bool* run;
  if (!ContiguousMask(sm, begin, count, &run)) {
    WalkMask(sm, begin, count, [&](int64_t i, int64_t m) { z[i] = sm.In(x[i], m); });
    return;
  }
  ScaleAndMaskRun(sm, run, sm.fill, x, z, count);
}

// softmax of x with the scale and mask applied: rows through a row-sized
// copy each; another axis through a copy of the whole input.
template <typename T>
void ScaledMaskedSoftmax(bool log, const portable::ScaleAndMask<T>& sm, const T* x, T* y,
                         int64_t outer, int64_t n, int64_t inner, ThreadPool* pool) {
  if (inner != 1) {
    std::vector<T> z(static_cast<size_t>(outer * n * inner));
    ScaledAndMasked(sm, x, z.data(), 0, outer * n * inner);
    SoftmaxRows<T>(log, z.data(), y, outer, n, inner, pool);
    return;
  }
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n));
  ParallelFor(pool, outer, grain, [&](int64_t o0, int64_t o1) {
    std::vector<T> z(static_cast<size_t>(n));
    for (int64_t o = o0; o < o1; ++o) {
      ScaledAndMasked(sm, x + o * n, z.data(), o * n, n);
      SoftmaxRow(log, z.data(), y + o * n, n);
    }
  });
}

Status VerifySoftmax(const VerifyContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckScaleMaskInput(ctx.inst->op(), ctx.inputs, 1, ctx.inputs[0].shape));
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

Status RunSoftmax(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  AxisSplit split;
  DISTRT_RETURN_IF_ERROR(ReadAxisSplit(ctx.attrs(), -1, name, x.shape(), &split));
  const int64_t outer = split.outer, n = split.n, inner = split.inner;
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  if (out->num_elements() == 0) return OkStatus();
  const bool log = name == "log_softmax";
  DISTRT_DISPATCH_FLOAT(x.dtype(), name, {
    portable::ScaleAndMask<T> sm;
    DISTRT_RETURN_IF_ERROR(ReadScaleAndMask(ctx, 1, x.shape(), /*forward=*/true, &sm));
    if (sm.scaled || sm.mask != nullptr) {
      ScaledMaskedSoftmax<T>(log, sm, x.data<T>(), out->data<T>(), outer, n, inner, ctx.pool);
    } else {
      SoftmaxRows<T>(log, x.data<T>(), out->data<T>(), outer, n, inner, ctx.pool);
    }
  });
  return OkStatus();
}

// ---- softmax_grad ---------------------------------------------------------------

// dx = y * (dy - s), s = sum(dy * y) along the axis, accumulated in double:
// softmax's gradient (the fused form of its rule, dist-fuse-for-target).
// Each row (or column block) is read whole before any of it is written, so
// dx may take over y's or dy's buffer.
DISTRT_SIMD_CLONES double DotF32(const float* a, const float* b, int64_t n) {
  float lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] += a[i + j] * b[i + j];
  }
  double sum = 0;
  for (int j = 0; j < kLanes; ++j) sum += lane[j];
  for (; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

DISTRT_SIMD_CLONES void SoftmaxGradRowF32(const float* y, const float* dy, float s, float* dx,
                                          int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (dy[i] - s);
}

void SoftmaxGradRow(const float* y, const float* dy, float* dx, int64_t n) {
  SoftmaxGradRowF32(y, dy, static_cast<float>(DotF32(dy, y, n)), dx, n);
}

void SoftmaxGradRow(const double* y, const double* dy, double* dx, int64_t n) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += dy[k] * y[k];
  for (int64_t k = 0; k < n; ++k) dx[k] = y[k] * (dy[k] - s);
}

// dx's elements [begin, begin + count) through the mask and scale.
template <typename T>
void MaskAndScaleGradient(const portable::ScaleAndMask<T>& sm, T* dx, int64_t begin,
                          int64_t count) {
  WalkMask(sm, begin, count, [&](int64_t i, int64_t m) { dx[i] = sm.template Out<T>(dx[i], m); });
}

void MaskAndScaleGradient(const portable::ScaleAndMask<float>& sm, float* dx, int64_t begin,
                          int64_t count) {
  const bool* run;
  if (!ContiguousMask(sm, begin, count, &run)) {
    WalkMask(sm, begin, count,
             [&](int64_t i, int64_t m) { dx[i] = sm.template Out<float>(dx[i], m); });
    return;
  }
  ScaleAndMaskRun(sm, run, 0.0f, dx, dx, count);
}

template <typename T>
void SoftmaxGradRows(const T* y, const T* dy, T* dx, int64_t outer, int64_t n, int64_t inner,
                     const portable::ScaleAndMask<T>& sm, ThreadPool* pool) {
  const bool fused = sm.scaled || sm.mask != nullptr;
  if (inner == 1) {
    int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n));
    ParallelFor(pool, outer, grain, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        SoftmaxGradRow(y + o * n, dy + o * n, dx + o * n, n);
        if (fused) MaskAndScaleGradient(sm, dx + o * n, o * n, n);
      }
    });
    return;
  }
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n * inner));
  ParallelFor(pool, outer, grain, [&](int64_t o0, int64_t o1) {
    std::vector<double> sum(static_cast<size_t>(inner));
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t base = o * n * inner;
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t at = base + k * inner + i;
          sum[i] += static_cast<double>(dy[at]) * y[at];
        }
      }
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t at = base + k * inner + i;
          dx[at] = y[at] * (dy[at] - static_cast<T>(sum[i]));
        }
      }
      if (fused) MaskAndScaleGradient(sm, dx + base, base, n * inner);
    }
  });
}

Status VerifySoftmaxGrad(const VerifyContext& ctx) {
  if (ctx.inputs[1] != ctx.inputs[0]) {
    return InvalidArgumentError("softmax_grad: y is ", ctx.inputs[0].ToString(), " but dy is ",
                                ctx.inputs[1].ToString(), "; they must have one type");
  }
  DISTRT_RETURN_IF_ERROR(CheckScaleMaskInput("softmax_grad", ctx.inputs, 2, ctx.inputs[0].shape));
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

Status RunSoftmaxGrad(KernelContext& ctx) {
  const Tensor& y = ctx.input(0);
  const Tensor& dy = ctx.input(1);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], y.type()));
  AxisSplit split;
  DISTRT_RETURN_IF_ERROR(ReadAxisSplit(ctx.attrs(), -1, "softmax_grad", y.shape(), &split));
  Tensor* dx;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &dx));
  if (dx->num_elements() == 0) return OkStatus();
  DISTRT_DISPATCH_FLOAT(y.dtype(), "softmax_grad", {
    portable::ScaleAndMask<T> sm;
    DISTRT_RETURN_IF_ERROR(ReadScaleAndMask(ctx, 2, y.shape(), /*forward=*/false, &sm));
    SoftmaxGradRows<T>(y.data<T>(), dy.data<T>(), dx->data<T>(), split.outer, split.n, split.inner,
                       sm, ctx.pool);
  });
  return OkStatus();
}

// ---- cross_entropy_sums, cross_entropy_grad ------------------------------------

// Cross-entropy's fused forms over logits [rows, n] whose classes are
// first_class, first_class + 1, ... (cross_entropy_types.h; the bodies
// the device runs are portable/norm.h's). The host runs them in f32 or
// f64; 16-bit logits come widened (via_f32.h).
std::vector<int64_t> RowLabels(const Tensor& labels) {
  std::vector<int64_t> out(static_cast<size_t>(labels.num_elements()));
  for (size_t r = 0; r < out.size(); ++r) {
    out[r] = labels.dtype() == DType::kI64 ? labels.data<int64_t>()[r]
                                           : labels.data<int32_t>()[r];
  }
  return out;
}

DISTRT_SIMD_CLONES void ExpScaleRowF32(const float* x, float m, float scale, float* dx,
                                       int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = ExpF32(x[i] - m) * scale;
}

double SumExpRow(const float* x, float m, int64_t n) { return SumExpF32(x, m, nullptr, n); }
double SumExpRow(const double* x, double m, int64_t n) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += std::exp(x[k] - m);
  return s;
}
void ExpScaleRow(const float* x, float m, float scale, float* dx, int64_t n) {
  ExpScaleRowF32(x, m, scale, dx, n);
}
void ExpScaleRow(const double* x, double m, double scale, double* dx, int64_t n) {
  for (int64_t k = 0; k < n; ++k) dx[k] = std::exp(x[k] - m) * scale;
}

template <typename T>
void CrossEntropySums(const T* x, const T* max, const std::vector<int64_t>& labels, T* sum_exp,
                      T* label_logit, int64_t n, int64_t first_class, ThreadPool* pool) {
  const int64_t rows = static_cast<int64_t>(labels.size());
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n));
  ParallelFor(pool, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* px = x + r * n;
      sum_exp[r] = static_cast<T>(SumExpRow(px, max[r], n));
      const int64_t k = labels[static_cast<size_t>(r)] - first_class;
      label_logit[r] = k >= 0 && k < n ? px[k] - max[r] : T(0);
    }
  });
}

template <typename T>
void CrossEntropyGrad(const T* x, const T* max, const T* scale, const T* weight,
                      const std::vector<int64_t>& labels, T* dx, int64_t n, int64_t first_class,
                      ThreadPool* pool) {
  const int64_t rows = static_cast<int64_t>(labels.size());
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n));
  ParallelFor(pool, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      ExpScaleRow(x + r * n, max[r], scale[r], dx + r * n, n);
      const int64_t k = labels[static_cast<size_t>(r)] - first_class;
      if (k >= 0 && k < n) dx[r * n + k] -= weight[r];
    }
  });
}

Status VerifyCrossEntropy(const VerifyContext& ctx) {
  return CheckCrossEntropyTypes(ctx.inst->op(), ctx.inputs, ctx.outputs, /*half_storage=*/false);
}

Status RunCrossEntropy(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const Tensor& x = ctx.input(0);
  int64_t first_class;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("first_class", 0, &first_class));
  const std::vector<int64_t> labels = RowLabels(ctx.input(ctx.num_inputs() - 1));
  const int64_t n = x.shape().back();
  if (name == "cross_entropy_sums") {
    Tensor *sum_exp, *label_logit;
    DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &sum_exp));
    DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(1, &label_logit));
    DISTRT_DISPATCH_FLOAT(x.dtype(), name,
                          CrossEntropySums<T>(x.data<T>(), ctx.input(1).data<T>(), labels,
                                              sum_exp->data<T>(), label_logit->data<T>(), n,
                                              first_class, ctx.pool));
    return OkStatus();
  }
  Tensor* dx;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &dx));
  DISTRT_DISPATCH_FLOAT(x.dtype(), name,
                        CrossEntropyGrad<T>(x.data<T>(), ctx.input(1).data<T>(),
                                            ctx.input(2).data<T>(), ctx.input(3).data<T>(), labels,
                                            dx->data<T>(), n, first_class, ctx.pool));
  return OkStatus();
}

// ---- layer_norm ----------------------------------------------------------------

// Expands a parameter (scale/bias) that broadcasts to `norm_shape` into a
// dense vector of NumElements(norm_shape) values.
template <typename T>
Status ExpandParam(const Tensor& p, const Shape& norm_shape, const char* what,
                   std::vector<T>* out) {
  Shape b;
  Status st = BroadcastShapes(p.shape(), norm_shape, &b);
  if (!st.ok() || b != norm_shape) {
    return InvalidArgumentError("layer_norm ", what, " of shape ", ShapeToString(p.shape()),
                                " does not broadcast to the normalised shape ",
                                ShapeToString(norm_shape));
  }
  const int64_t n = NumElements(norm_shape);
  out->resize(static_cast<size_t>(n));
  if (p.num_elements() == n) {
    std::copy(p.data<T>(), p.data<T>() + n, out->begin());
    return OkStatus();
  }
  BroadcastPlan plan = MakeBroadcastPlan(norm_shape, {p.shape()});
  const T* src = p.data<T>();
  ForEachRow(plan, 0, plan.rows, [&](int64_t r, const int64_t* off) {
    const int64_t s = plan.strides[0].back();
    for (int64_t i = 0; i < plan.inner; ++i) (*out)[r * plan.inner + i] = src[off[0] + i * s];
  });
  return OkStatus();
}

// One float row: mean and variance summed in kLanes partial results (see
// softmax), combined in double.
DISTRT_SIMD_CLONES void LayerNormRow(const float* x, const float* scale, const float* bias,
                                     double eps, float* y, int64_t n) {
  float lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] += x[i + j];
  }
  double mean = 0;
  for (int j = 0; j < kLanes; ++j) mean += lane[j];
  for (; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  const float m = static_cast<float>(mean);
  float vlane[kLanes] = {};
  i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const float d = x[i + j] - m;
      vlane[j] += d * d;
    }
  }
  double var = 0;  // biased (population) variance, like ONNX LayerNormalization
  for (int j = 0; j < kLanes; ++j) var += vlane[j];
  for (; i < n; ++i) var += static_cast<double>(x[i] - m) * (x[i] - m);
  var /= static_cast<double>(n);
  const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
  if (bias != nullptr) {
    for (i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * scale[i] + bias[i];
  } else {
    for (i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * scale[i];
  }
}

void LayerNormRow(const double* row, const double* scale, const double* bias, double eps,
                  double* dst, int64_t n) {
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += row[i];
  mean /= static_cast<double>(n);
  double var = 0;
  for (int64_t i = 0; i < n; ++i) var += (row[i] - mean) * (row[i] - mean);
  var /= static_cast<double>(n);
  const double inv = 1.0 / std::sqrt(var + eps);
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = (row[i] - mean) * inv * scale[i] + (bias != nullptr ? bias[i] : 0.0);
  }
}

// A parameter's values over the normalised shape: its own buffer when it
// has that many elements (no copy), else expanded into *storage.
template <typename T>
Status ParamValues(const Tensor& p, const Shape& norm_shape, const char* what,
                   std::vector<T>* storage, const T** values) {
  if (p.shape() == norm_shape) {
    *values = p.data<T>();
    return OkStatus();
  }
  DISTRT_RETURN_IF_ERROR(ExpandParam<T>(p, norm_shape, what, storage));
  *values = storage->data();
  return OkStatus();
}

template <typename T>
Status LayerNorm(KernelContext& ctx, int64_t axis, double eps) {
  const Tensor& x = ctx.input(0);
  Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  std::vector<T> scale_storage, bias_storage;
  const T* scale = nullptr;
  const T* bias = nullptr;
  DISTRT_RETURN_IF_ERROR(ParamValues<T>(ctx.input(1), norm_shape, "scale", &scale_storage, &scale));
  if (ctx.num_inputs() > 2) {
    DISTRT_RETURN_IF_ERROR(ParamValues<T>(ctx.input(2), norm_shape, "bias", &bias_storage, &bias));
  }
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const int64_t n = NumElements(norm_shape);
  const int64_t rows = n == 0 ? 0 : x.num_elements() / n;
  const T* px = x.data<T>();
  T* py = out->data<T>();
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n));
  ParallelFor(ctx.pool, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) LayerNormRow(px + r * n, scale, bias, eps, py + r * n, n);
  });
  return OkStatus();
}

Status RunLayerNorm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  int64_t axis;
  double eps;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("axis", -1, &axis));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetFloat("epsilon", 1e-5, &eps));
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(axis, x.rank(), &axis));
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.input(i).dtype() != x.dtype()) {
      return InvalidArgumentError("layer_norm input ", i, " is ", DTypeName(ctx.input(i).dtype()),
                                  " but x is ", DTypeName(x.dtype()));
    }
  }
  DISTRT_DISPATCH_FLOAT(x.dtype(), "layer_norm", return LayerNorm<T>(ctx, axis, eps));
  return OkStatus();
}

// ---- batch_norm ----------------------------------------------------------------

template <typename T>
Status BatchNorm(KernelContext& ctx, double eps) {
  const Tensor& x = ctx.input(0);
  const int64_t c = x.dim(1);
  for (int i = 1; i < 5; ++i) {
    const Tensor& p = ctx.input(i);
    if (p.num_elements() != c || p.dtype() != x.dtype()) {
      return InvalidArgumentError("batch_norm input ", i, " is ", p.type().ToString(),
                                  ", expected ", c, " ", DTypeName(x.dtype()), " values");
    }
  }
  const T *scale = ctx.input(1).data<T>(), *bias = ctx.input(2).data<T>(),
          *mean = ctx.input(3).data<T>(), *var = ctx.input(4).data<T>();
  std::vector<T> mul(static_cast<size_t>(c)), add(static_cast<size_t>(c));
  for (int64_t k = 0; k < c; ++k) {
    double m = scale[k] / std::sqrt(static_cast<double>(var[k]) + eps);
    mul[k] = static_cast<T>(m);
    add[k] = static_cast<T>(bias[k] - mean[k] * m);
  }
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  int64_t spatial = 1;
  for (int i = 2; i < x.rank(); ++i) spatial *= x.dim(i);
  const int64_t planes = x.dim(0) * c;
  const T* px = x.data<T>();
  T* py = out->data<T>();
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, spatial));
  ParallelFor(ctx.pool, planes, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t k = p % c;
      const T m = mul[k], a = add[k];
      for (int64_t i = 0; i < spatial; ++i) py[p * spatial + i] = px[p * spatial + i] * m + a;
    }
  });
  return OkStatus();
}

Status RunBatchNorm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  if (x.rank() < 2) return InvalidArgumentError("batch_norm needs rank >= 2, got ", x.rank());
  double eps;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetFloat("epsilon", 1e-5, &eps));
  DISTRT_DISPATCH_FLOAT(x.dtype(), "batch_norm", return BatchNorm<T>(ctx, eps));
  return OkStatus();
}

}  // namespace

void RegisterNormKernels(KernelRegistry& r) {
  // softmax and softmax_grad take attention's mask as an optional last input.
  r.Add({"softmax", 1, 2, 1, RunSoftmax, VerifySoftmax, false, true});
  r.Add({"log_softmax", 1, 1, 1, RunSoftmax, VerifySame, false, true});
  r.Add({"softmax_grad", 2, 3, 1, RunSoftmaxGrad, VerifySoftmaxGrad, false, true});
  // The gradient's element i is written after logit i is read: it may take
  // over the logits. The sums read a row's max after writing its sum.
  r.Add({"cross_entropy_sums", 3, 3, 2, RunCrossEntropy, VerifyCrossEntropy, false, false});
  r.Add({"cross_entropy_grad", 5, 5, 1, RunCrossEntropy, VerifyCrossEntropy, false, true});
  r.Add({"layer_norm", 2, 3, 1, RunLayerNorm, VerifySame, false, true});
  r.Add({"batch_norm", 5, 5, 1, RunBatchNorm, VerifySame, false, true});
}

}  // namespace distrt
