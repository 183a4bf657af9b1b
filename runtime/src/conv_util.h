// Spatial parameters shared by conv and pooling (NCHW, 1-D..3-D), padded to
// three spatial dims internally (leading dims of size 1).
#ifndef DISTRT_SRC_CONV_UTIL_H_
#define DISTRT_SRC_CONV_UTIL_H_

#include "kernel_util.h"
#include "portable/window.h"

namespace distrt {

struct Spatial {
  int rank = 0;                // 1, 2 or 3 (as given)
  int64_t in[3] = {1, 1, 1};   // input extent
  int64_t k[3] = {1, 1, 1};    // kernel extent
  int64_t s[3] = {1, 1, 1};    // stride
  int64_t d[3] = {1, 1, 1};    // dilation
  int64_t pb[3] = {0, 0, 0};   // pad begin
  int64_t pe[3] = {0, 0, 0};   // pad end
  int64_t out[3] = {1, 1, 1};  // output extent
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

// Reads strides/pads/dilations (defaults 1/0/1) for `rank` spatial dims with
// the given input and kernel extents, and computes output extents.
inline Status ReadSpatial(const AttrReader& attrs, const Shape& x_shape,
                          const std::vector<int64_t>& kernel, bool ceil_mode, Spatial* sp) {
  const int r = static_cast<int>(x_shape.size()) - 2;
  if (r < 1 || r > 3) {
    return InvalidArgumentError("expected NC + 1..3 spatial dims, got shape ",
                                ShapeToString(x_shape));
  }
  if (static_cast<int>(kernel.size()) != r) {
    return InvalidArgumentError("kernel has ", kernel.size(), " dims for ", r, " spatial dims");
  }
  std::vector<int64_t> strides, pads, dilations;
  bool has_s, has_p, has_d;
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("strides", &strides, &has_s));
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("pads", &pads, &has_p));
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("dilations", &dilations, &has_d));
  if (strides.empty()) strides.assign(static_cast<size_t>(r), 1);
  if (pads.empty()) pads.assign(static_cast<size_t>(2 * r), 0);
  if (dilations.empty()) dilations.assign(static_cast<size_t>(r), 1);
  if (static_cast<int>(strides.size()) != r || static_cast<int>(pads.size()) != 2 * r ||
      static_cast<int>(dilations.size()) != r) {
    return InvalidArgumentError("strides/pads/dilations have ", strides.size(), "/", pads.size(),
                                "/", dilations.size(), " entries for ", r, " spatial dims");
  }
  sp->rank = r;
  const int lead = 3 - r;
  for (int i = 0; i < r; ++i) {
    const int j = lead + i;
    sp->in[j] = x_shape[static_cast<size_t>(2 + i)];
    sp->k[j] = kernel[static_cast<size_t>(i)];
    sp->s[j] = strides[static_cast<size_t>(i)];
    sp->d[j] = dilations[static_cast<size_t>(i)];
    sp->pb[j] = pads[static_cast<size_t>(i)];
    sp->pe[j] = pads[static_cast<size_t>(i + r)];
    if (sp->k[j] < 1 || sp->s[j] < 1 || sp->d[j] < 1 || sp->pb[j] < 0 || sp->pe[j] < 0) {
      return InvalidArgumentError("invalid kernel/stride/dilation/pad in spatial dim ", i);
    }
    const int64_t eff = (sp->k[j] - 1) * sp->d[j] + 1;
    const int64_t num = sp->in[j] + sp->pb[j] + sp->pe[j] - eff;
    if (num < 0) {
      return InvalidArgumentError("window of extent ", eff, " does not fit spatial dim ", i,
                                  " of size ", sp->in[j], " with pads ", sp->pb[j], "+", sp->pe[j]);
    }
    int64_t o = (ceil_mode ? (num + sp->s[j] - 1) / sp->s[j] : num / sp->s[j]) + 1;
    // A window that would start in the end padding is dropped (ceil_mode).
    if (ceil_mode && (o - 1) * sp->s[j] >= sp->in[j] + sp->pb[j]) --o;
    sp->out[j] = o;
  }
  return OkStatus();
}

// conv's sizes from x [n, c, spatial...], w [m, c / group, kernel...] and
// its attributes (group, kernel_shape, strides, pads, dilations), with the
// messages both the host and the device kernels give.
struct ConvParams {
  int64_t n, c, m, group, cg, mg;
  Spatial sp;
  Shape out;
};

inline Status ConvShape(const AttrReader& attrs, const Shape& x, const Shape& w, ConvParams* p) {
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size()) {
    return InvalidArgumentError("conv needs x and w of equal rank 3..5, got ", ShapeToString(x),
                                " and ", ShapeToString(w));
  }
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("group", 1, &p->group));
  p->n = x[0];
  p->c = x[1];
  p->m = w[0];
  if (p->group < 1 || p->c % p->group != 0 || p->m % p->group != 0 || w[1] != p->c / p->group) {
    return InvalidArgumentError("conv: x has ", p->c, " channels, w is ", ShapeToString(w),
                                ", group ", p->group, " do not agree");
  }
  p->cg = p->c / p->group;
  p->mg = p->m / p->group;
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  std::vector<int64_t> ks;
  bool has_k;
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("kernel_shape", &ks, &has_k));
  if (has_k && ks != kernel) {
    return InvalidArgumentError("conv kernel_shape ", ShapeToString(ks),
                                " differs from the weight's ", ShapeToString(kernel));
  }
  DISTRT_RETURN_IF_ERROR(ReadSpatial(attrs, x, kernel, /*ceil_mode=*/false, &p->sp));
  p->out = {p->n, p->m};
  for (int i = 3 - p->sp.rank; i < 3; ++i) p->out.push_back(p->sp.out[i]);
  return OkStatus();
}

// A pool's geometry from x [n, c, spatial...] and its attributes (kernel,
// ceil_mode, strides, pads, dilations), and its result's shape.
inline Status PoolShape(const AttrReader& attrs, const Shape& x, Spatial* sp, Shape* out) {
  std::vector<int64_t> kernel;
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("kernel", &kernel));
  int64_t ceil_mode;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("ceil_mode", 0, &ceil_mode));
  DISTRT_RETURN_IF_ERROR(ReadSpatial(attrs, x, kernel, ceil_mode != 0, sp));
  *out = {x[0], x[1]};
  for (int i = 3 - sp->rank; i < 3; ++i) out->push_back(sp->out[i]);
  return OkStatus();
}

// The same geometry as the kernel bodies take it (portable/window.h).
inline portable::Window WindowOf(const Spatial& s) {
  portable::Window w;
  for (int j = 0; j < 3; ++j) {
    w.in[j] = s.in[j];
    w.k[j] = s.k[j];
    w.s[j] = s.s[j];
    w.d[j] = s.d[j];
    w.pb[j] = s.pb[j];
    w.pe[j] = s.pe[j];
    w.out[j] = s.out[j];
  }
  return w;
}

}  // namespace distrt

#endif  // DISTRT_SRC_CONV_UTIL_H_
