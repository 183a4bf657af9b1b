// Optimizer updates: adam_update and sgd_update, one pass over a parameter,
// its gradient and its states, element by element in the element type and in
// the order the nn ops document (PyTorch's single-tensor Adam/AdamW/SGD), so
// a training step matches torch's to the rounding. A bf16/f16 gradient of
// an f32 parameter (a bf16 policy's, its cast folded by
// dist-fuse-for-target) is widened as it is read (bf16 element by element,
// f16 a block at a time): exact, so the update is the one of its f32 cast.
// Adam may also write the new f32 parameter rounded to bf16/f16, a block at
// a time (a compute copy kept as state, its cast folded in likewise).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernel_util.h"
#include "via_f32.h"

namespace distrt {
namespace {

// Whether the gradient (operand 1) is a 16-bit float of an f32 parameter.
bool NarrowGradient(const VerifyContext& ctx) {
  return ctx.inputs[0].dtype == DType::kF32 && IsHalfFloat(ctx.inputs[1].dtype);
}

// Parameter, gradient and states share one type (the gradient may be
// bf16/f16 for an f32 parameter); the per-step scalars are rank-0 tensors
// of its element type. The outputs are the `states` new values; with
// `may_copy`, a further one may be the new f32 parameter rounded to
// bf16/f16 (a compute copy).
Status CheckUpdate(const VerifyContext& ctx, int tensors, int scalars, size_t states,
                   bool may_copy) {
  const TensorType& p = ctx.inputs[0];
  if (p.dtype != DType::kF32 && p.dtype != DType::kF64)
    return InvalidArgumentError("optimizer updates need f32 or f64 parameters, not ", p.ToString());
  for (int i = 1; i < tensors; ++i)
    if (!(ctx.inputs[static_cast<size_t>(i)] == p) &&
        !(i == 1 && NarrowGradient(ctx) && ctx.inputs[1].shape == p.shape))
      return InvalidArgumentError("operand ", i, " is ",
                                  ctx.inputs[static_cast<size_t>(i)].ToString(), ", expected ",
                                  p.ToString());
  for (int i = tensors; i < tensors + scalars; ++i) {
    const TensorType& s = ctx.inputs[static_cast<size_t>(i)];
    if (s.dtype != p.dtype || !s.shape.empty())
      return InvalidArgumentError("operand ", i, " is ", s.ToString(), ", expected a ",
                                  DTypeName(p.dtype), " scalar");
  }
  const size_t most = may_copy ? states + 1 : states;
  if (ctx.outputs.size() != states && ctx.outputs.size() != most)
    return InvalidArgumentError("has ", ctx.outputs.size(), " outputs, expected ", states,
                                may_copy ? " (or one more: the new parameter's compute copy)" : "");
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const TensorType& o = ctx.outputs[i];
    const bool copy = i == states;
    if (copy && p.dtype == DType::kF32 && IsHalfFloat(o.dtype) && o.shape == p.shape)
      continue;  // the new parameter's compute copy
    if (copy || !(o == p))
      return InvalidArgumentError("output ", i, " is ", o.ToString(), ", expected ", p.ToString(),
                                  copy ? " (or, for an f32 parameter, its bf16 or f16 copy)" : "");
  }
  return OkStatus();
}

// Whether the only 16-bit floats are a gradient of an f32 parameter (which
// the kernel widens itself) and, for Adam, the compute copy it writes
// (output 3, which it rounds itself).
bool HalvesHandledInKernel(const VerifyContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kF32) return false;
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (i != 1 && IsHalfFloat(ctx.inputs[i].dtype)) return false;
  for (size_t i = 0; i < ctx.outputs.size(); ++i)
    if (i != 3 && IsHalfFloat(ctx.outputs[i].dtype)) return false;
  return true;
}

Status VerifyAdam(const VerifyContext& ctx) { return CheckUpdate(ctx, 4, 4, 3, true); }
Status VerifySgd(const VerifyContext& ctx) { return CheckUpdate(ctx, 3, 2, 2, false); }

template <typename T>
T Scalar(const Tensor& t) {
  return t.data<T>()[0];
}

// Adam's per-step scalars (the bias corrections folded in by the caller).
template <typename T>
struct AdamScalars {
  T grad_scale, param_scale, neg_step, bc2, b1, one_b1, b2, one_b2, e, decay;
  bool l2;  // weight decay added to the gradient (Adam), not decoupled
};

// A gradient element as the update computes with it: itself, or a bf16
// gradient's bits (uint16_t) widened to f32, which is exact.
template <typename T>
inline T GradientValue(T g) {
  return g;
}
inline float GradientValue(uint16_t bf16) { return portable::BF16BitsToFloat(bf16); }

// The element loops take restrict pointers: an output overlaps no input but
// its own old state, element for element (AllocateOutputOver), which a loop
// that reads element i before writing it allows, and the compiler can then
// vectorise seven streams without run-time overlap checks. G is T, or uint16_t for a
// bf16 gradient of an f32 parameter.
template <typename T, typename G, bool kL2>
inline __attribute__((always_inline)) void AdamRange(int64_t lo, int64_t hi, const T* __restrict p,
                                                     const G* __restrict g, const T* __restrict m,
                                                     const T* __restrict v, T* __restrict po,
                                                     T* __restrict mo, T* __restrict vo,
                                                     const AdamScalars<T>& s) {
  const T grad_scale = s.grad_scale, param_scale = s.param_scale, neg_step = s.neg_step;
  const T bc2 = s.bc2, b1 = s.b1, one_b1 = s.one_b1, b2 = s.b2, one_b2 = s.one_b2, e = s.e;
  const T decay = s.decay;
  for (int64_t i = lo; i < hi; ++i) {
    T gi = GradientValue(g[i]) * grad_scale;
    if (kL2) gi = gi + p[i] * decay;
    const T pi = p[i] * param_scale;
    const T mi = m[i] * b1 + gi * one_b1;
    const T vi = v[i] * b2 + (gi * one_b2) * gi;
    const T denom = std::sqrt(vi) / bc2 + e;
    mo[i] = mi;
    vo[i] = vi;
    po[i] = pi + neg_step * (mi / denom);
  }
}

template <typename T, typename G>
inline __attribute__((always_inline)) void AdamEither(int64_t lo, int64_t hi, const T* p,
                                                      const G* g, const T* m, const T* v, T* po,
                                                      T* mo, T* vo, const AdamScalars<T>& s) {
  if (s.l2)
    AdamRange<T, G, true>(lo, hi, p, g, m, v, po, mo, vo, s);
  else
    AdamRange<T, G, false>(lo, hi, p, g, m, v, po, mo, vo, s);
}

// The float loops have an AVX2 clone (DISTRT_SIMD_CLONES): per element Adam
// takes a square root and two divisions, which the baseline build does four
// at a time and AVX2 eight.
DISTRT_SIMD_CLONES void AdamLoop(int64_t lo, int64_t hi, const float* p, const float* g,
                                 const float* m, const float* v, float* po, float* mo, float* vo,
                                 const AdamScalars<float>& s) {
  AdamEither(lo, hi, p, g, m, v, po, mo, vo, s);
}
DISTRT_SIMD_CLONES void AdamLoop(int64_t lo, int64_t hi, const float* p, const uint16_t* bf16_g,
                                 const float* m, const float* v, float* po, float* mo, float* vo,
                                 const AdamScalars<float>& s) {
  AdamEither(lo, hi, p, bf16_g, m, v, po, mo, vo, s);
}
void AdamLoop(int64_t lo, int64_t hi, const double* p, const double* g, const double* m,
              const double* v, double* po, double* mo, double* vo, const AdamScalars<double>& s) {
  AdamEither(lo, hi, p, g, m, v, po, mo, vo, s);
}

// loop(lo, hi, g) over [lo, hi) with g[0..hi-lo) the gradient there: a T
// pointer when the gradient is a T, the bf16 bits (uint16_t) of a bf16
// gradient of an f32 parameter, or an f16 gradient's widened blocks.
template <typename T, typename F>
void WithGradient(const Tensor& grad, int64_t lo, int64_t hi, F loop) {
  if constexpr (!std::is_same_v<T, float>) {
    return loop(lo, hi, grad.data<T>() + lo);
  } else {
    if (grad.dtype() == DType::kF32) return loop(lo, hi, grad.data<float>() + lo);
    if (grad.dtype() == DType::kBF16) return loop(lo, hi, grad.data<uint16_t>() + lo);
    const char* g = static_cast<const char*>(grad.raw()) + lo * DTypeSize(grad.dtype());
    ForEachWidenedBlock(g, grad.dtype(), hi - lo, [&](int64_t b, int64_t len, const float* block) {
      loop(lo + b, lo + b + len, block);
    });
  }
}

template <typename T, typename G, bool kL2>
void SgdRange(int64_t lo, int64_t hi, const T* __restrict p, const G* __restrict g,
              const T* __restrict buf, T* __restrict po, T* __restrict bo, T grad_scale, T neg_lr,
              T mom, T decay, bool nesterov) {
  for (int64_t i = lo; i < hi; ++i) {
    T gi = GradientValue(g[i]) * grad_scale;
    if (kL2) gi = gi + p[i] * decay;
    const T bi = buf[i] * mom + gi;
    const T step = nesterov ? gi + bi * mom : bi;
    bo[i] = bi;
    po[i] = p[i] + neg_lr * step;
  }
}

Status RunAdamUpdate(KernelContext& ctx) {
  AttrReader attrs = ctx.attrs();
  double beta1 = 0, beta2 = 0, eps = 0, wd = 0;
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("beta1", &beta1));
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("beta2", &beta2));
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("eps", &eps));
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("weight_decay", &wd));
  // Each new state over at most its old one (the loops' restrict pointers).
  Tensor *p_out, *m_out, *v_out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutputOver(0, 0, &p_out));
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutputOver(1, 2, &m_out));
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutputOver(2, 3, &v_out));
  // The compute copy (an f32 parameter's, checked by VerifyAdam).
  Tensor* copy = nullptr;
  if (ctx.output_types.size() == 4) DISTRT_RETURN_IF_ERROR(ctx.AllocateOutputOver(3, -1, &copy));
  const Tensor& param = ctx.input(0);
  const Tensor& grad = ctx.input(1);
  DISTRT_DISPATCH_FLOAT(param.dtype(), "adam_update", {
    const T* p = param.data<T>();
    const T* m = ctx.input(2).data<T>();
    const T* v = ctx.input(3).data<T>();
    AdamScalars<T> s;
    s.grad_scale = Scalar<T>(ctx.input(4));
    s.param_scale = Scalar<T>(ctx.input(5));
    s.neg_step = -Scalar<T>(ctx.input(6));
    s.bc2 = Scalar<T>(ctx.input(7));
    s.b1 = static_cast<T>(beta1);
    s.one_b1 = static_cast<T>(1.0 - beta1);
    s.b2 = static_cast<T>(beta2);
    s.one_b2 = static_cast<T>(1.0 - beta2);
    s.e = static_cast<T>(eps);
    s.decay = static_cast<T>(wd);
    s.l2 = wd != 0;
    T* po = p_out->data<T>();
    T* mo = m_out->data<T>();
    T* vo = v_out->data<T>();
    auto update = [&](int64_t lo, int64_t hi) {
      WithGradient<T>(grad, lo, hi, [&](int64_t b, int64_t e, const auto* g) {
        AdamLoop(0, e - b, p + b, g, m + b, v + b, po + b, mo + b, vo + b, s);
      });
    };
    ParallelFor(ctx.pool, param.num_elements(), kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      if (!copy) return update(lo, hi);
      // A block at a time, rounded while its new values are still in cache
      // (f32 to bf16/f16, which cannot fail).
      const int64_t width = static_cast<int64_t>(DTypeSize(copy->dtype()));
      for (int64_t b = lo; b < hi; b += kWidenedBlock) {
        const int64_t e = std::min(hi, b + kWidenedBlock);
        update(b, e);
        (void)CastBuffer(po + b, param.dtype(), static_cast<char*>(copy->raw()) + b * width,
                         copy->dtype(), e - b);
      }
    });
  });
  return OkStatus();
}

Status RunSgdUpdate(KernelContext& ctx) {
  AttrReader attrs = ctx.attrs();
  double momentum = 0, wd = 0;
  int64_t nesterov = 0;
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("momentum", &momentum));
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("weight_decay", &wd));
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("nesterov", &nesterov));
  Tensor *p_out, *b_out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutputOver(0, 0, &p_out));
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutputOver(1, 2, &b_out));
  const Tensor& param = ctx.input(0);
  const Tensor& grad = ctx.input(1);
  DISTRT_DISPATCH_FLOAT(param.dtype(), "sgd_update", {
    const T* p = param.data<T>();
    const T* buf = ctx.input(2).data<T>();
    const T grad_scale = Scalar<T>(ctx.input(3)), neg_lr = -Scalar<T>(ctx.input(4));
    const T mom = static_cast<T>(momentum), decay = static_cast<T>(wd);
    const bool l2 = wd != 0;
    T* po = p_out->data<T>();
    T* bo = b_out->data<T>();
    auto loop = [&](int64_t b, int64_t e, const auto* g) {
      using G = std::remove_const_t<std::remove_pointer_t<decltype(g)>>;
      if (l2)
        SgdRange<T, G, true>(0, e - b, p + b, g, buf + b, po + b, bo + b, grad_scale, neg_lr, mom,
                             decay, nesterov != 0);
      else
        SgdRange<T, G, false>(0, e - b, p + b, g, buf + b, po + b, bo + b, grad_scale, neg_lr, mom,
                              decay, nesterov != 0);
    };
    ParallelFor(ctx.pool, param.num_elements(), kElementwiseGrain,
                [&](int64_t lo, int64_t hi) { WithGradient<T>(grad, lo, hi, loop); });
  });
  return OkStatus();
}

}  // namespace

void RegisterOptimizerKernels(KernelRegistry& r) {
  // Element i of every output is written after element i of every input is
  // read: outputs may take over dying inputs' buffers.
  // They may also write into the parameter and states themselves.
  // A 16-bit gradient of an f32 parameter is read as stored; any other
  // 16-bit operand goes through the executor's f32 copies.
  // Adam's fourth output, when there is one, is the new parameter rounded
  // to bf16/f16 (a compute copy kept as state), which the kernel writes
  // itself.
  KernelDef adam{"adam_update", 8, 8, -1, RunAdamUpdate, VerifyAdam, false, true, true};
  adam.half_native_for = HalvesHandledInKernel;
  r.Add(adam);
  KernelDef sgd{"sgd_update", 5, 5, 2, RunSgdUpdate, VerifySgd, false, true, true};
  sgd.half_native_for = HalvesHandledInKernel;
  r.Add(sgd);
}

}  // namespace distrt
