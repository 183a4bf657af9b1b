// Optimizer update bodies (host and device): adam_update and sgd_update,
// element by element in the element type and in the host kernels' order
// (kernels_optimizer.cpp: PyTorch's single-tensor Adam/AdamW/SGD). The
// per-step scalars are 0-d tensors where the parameter lives, read through
// pointers in the body so a step never waits on a copy to the host.
// Element i of every output is written after element i of every input is
// read, so outputs may be the inputs' own buffers (updates in place).
#ifndef DISTRT_SRC_PORTABLE_OPTIMIZER_H_
#define DISTRT_SRC_PORTABLE_OPTIMIZER_H_

#include <cstdint>

#include "portable/hd.h"
#include "portable/math.h"

namespace distrt {
namespace portable {

// p' = p * param_scale - step * m' / (sqrt(v') / bc2 + eps) with
// g = g * grad_scale (+ decay * p for L2 decay), m' = b1 m + (1 - b1) g,
// v' = b2 v + (1 - b2) g g. param_scale is AdamW's decoupled shrink, step
// lr / (1 - beta1^t), bc2 sqrt(1 - beta2^t).
template <typename T>
struct AdamBody {
  const T* p;
  const T* g;
  const T* m;
  const T* v;
  T* po;
  T* mo;
  T* vo;
  const T* grad_scale;  // 0-d tensors
  const T* param_scale;
  const T* step;
  const T* bc2;
  T b1, one_b1, b2, one_b2, eps, decay;
  bool l2;
  DISTRT_HD void operator()(int64_t i) const {
    const T pv = p[i];
    T gi = g[i] * *grad_scale;
    if (l2) gi = gi + pv * decay;
    const T pi = pv * *param_scale;
    const T mi = m[i] * b1 + gi * one_b1;
    const T vi = v[i] * b2 + (gi * one_b2) * gi;
    const T denom = Sqrt(vi) / *bc2 + eps;
    const T neg_step = -*step;
    mo[i] = mi;
    vo[i] = vi;
    po[i] = pi + neg_step * (mi / denom);
  }
};

// buf' = momentum buf + g, p' = p - lr (nesterov ? g + momentum buf' : buf')
// with g = g * grad_scale (+ decay * p).
template <typename T>
struct SgdBody {
  const T* p;
  const T* g;
  const T* buf;
  T* po;
  T* bo;
  const T* grad_scale;  // 0-d tensors
  const T* lr;
  T momentum, decay;
  bool l2, nesterov;
  DISTRT_HD void operator()(int64_t i) const {
    const T pv = p[i];
    T gi = g[i] * *grad_scale;
    if (l2) gi = gi + pv * decay;
    const T bi = buf[i] * momentum + gi;
    const T step = nesterov ? gi + bi * momentum : bi;
    const T neg_lr = -*lr;
    bo[i] = bi;
    po[i] = pv + neg_lr * step;
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_OPTIMIZER_H_
