// conv (ONNX Conv, NCHW, 1-D..3-D, groups): im2col + GEMM.
#include <algorithm>

#include "conv_util.h"

namespace distrt {
namespace {

struct ConvParams {
  int64_t n, c, m, group, cg, mg;
  Spatial sp;
  Shape out;
};

Status ConvShape(const AttrReader& attrs, const Shape& x, const Shape& w, ConvParams* p) {
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

Status VerifyConv(const VerifyContext& ctx) {
  ConvParams p;
  DISTRT_RETURN_IF_ERROR(ConvShape(ctx.attrs(), ctx.inputs[0].shape, ctx.inputs[1].shape, &p));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, p.out});
}

// col[K x P] for one image and one group; K = cg * kD*kH*kW, P = oD*oH*oW.
template <typename T>
void Im2Col(const T* x, const ConvParams& p, T* col) {
  const Spatial& s = p.sp;
  const int64_t P = s.out_size();
  int64_t row = 0;
  for (int64_t c = 0; c < p.cg; ++c) {
    const T* xc = x + c * s.in_size();
    for (int64_t kd = 0; kd < s.k[0]; ++kd)
      for (int64_t kh = 0; kh < s.k[1]; ++kh)
        for (int64_t kw = 0; kw < s.k[2]; ++kw, ++row) {
          T* dst = col + row * P;
          for (int64_t od = 0; od < s.out[0]; ++od) {
            const int64_t id = od * s.s[0] - s.pb[0] + kd * s.d[0];
            for (int64_t oh = 0; oh < s.out[1]; ++oh) {
              const int64_t ih = oh * s.s[1] - s.pb[1] + kh * s.d[1];
              T* drow = dst + (od * s.out[1] + oh) * s.out[2];
              if (id < 0 || id >= s.in[0] || ih < 0 || ih >= s.in[1]) {
                std::fill(drow, drow + s.out[2], T(0));
                continue;
              }
              const T* xrow = xc + (id * s.in[1] + ih) * s.in[2];
              for (int64_t ow = 0; ow < s.out[2]; ++ow) {
                const int64_t iw = ow * s.s[2] - s.pb[2] + kw * s.d[2];
                drow[ow] = (iw >= 0 && iw < s.in[2]) ? xrow[iw] : T(0);
              }
            }
          }
        }
  }
}

template <typename T>
Status Conv(KernelContext& ctx, const ConvParams& p) {
  const HostTensor &x = ctx.input(0), &w = ctx.input(1);
  const T* bias = nullptr;
  if (ctx.num_inputs() > 2) {
    const HostTensor& b = ctx.input(2);
    if (b.num_elements() != p.m || b.dtype() != x.dtype()) {
      return InvalidArgumentError("conv bias is ", b.type().ToString(), ", expected ", p.m,
                                  " values");
    }
    bias = b.data<T>();
  }
  HostTensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const Spatial& s = p.sp;
  const int64_t P = s.out_size(), K = p.cg * s.k_size();
  const bool direct = s.k_size() == 1 && s.s[0] == 1 && s.s[1] == 1 && s.s[2] == 1 &&
                      s.pb[0] + s.pb[1] + s.pb[2] + s.pe[0] + s.pe[1] + s.pe[2] == 0;
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  T* py = out->data<T>();
  const int64_t tasks = p.n * p.group;
  const int threads = ctx.pool ? ctx.pool->size() : 1;
  // Columns of image n, group g: x itself for 1x1 stride-1 unpadded convs.
  auto columns = [&](int64_t t, std::vector<T>& col) -> const T* {
    const int64_t n = t / p.group, g = t % p.group;
    const T* xg = px + (n * p.c + g * p.cg) * s.in_size();
    if (direct) return xg;
    col.resize(static_cast<size_t>(K * P));
    Im2Col(xg, p, col.data());
    return col.data();
  };
  auto gemm = [&](int64_t t, const T* cols, int64_t m0, int64_t m1) {
    const int64_t n = t / p.group, g = t % p.group;
    T* yg = py + (n * p.m + g * p.mg) * P;
    GemmRowMajor(pw + (g * p.mg + m0) * K, cols, yg + m0 * P, m1 - m0, K, P);
    if (bias) {
      for (int64_t m = m0; m < m1; ++m) {
        const T b = bias[g * p.mg + m];
        for (int64_t i = 0; i < P; ++i) yg[m * P + i] += b;
      }
    }
  };
  if (tasks >= threads || p.mg < 16) {
    ParallelFor(ctx.pool, tasks, 1, [&](int64_t t0, int64_t t1) {
      std::vector<T> col;
      for (int64_t t = t0; t < t1; ++t) gemm(t, columns(t, col), 0, p.mg);
    });
  } else {
    // Few images: build the columns once, split the output channels.
    std::vector<T> col;
    for (int64_t t = 0; t < tasks; ++t) {
      const T* cols = columns(t, col);
      ParallelFor(ctx.pool, p.mg, 16, [&](int64_t m0, int64_t m1) { gemm(t, cols, m0, m1); });
    }
  }
  return OkStatus();
}

Status RunConv(KernelContext& ctx) {
  const HostTensor &x = ctx.input(0), &w = ctx.input(1);
  if (x.dtype() != w.dtype()) return InvalidArgumentError("conv x and w dtypes differ");
  ConvParams p;
  DISTRT_RETURN_IF_ERROR(ConvShape(ctx.attrs(), x.shape(), w.shape(), &p));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), p.out}));
  DISTRT_DISPATCH_FLOAT(x.dtype(), "conv", return Conv<T>(ctx, p));
  return OkStatus();
}

}  // namespace

void RegisterConvKernels(KernelRegistry& r) { r.Add({"conv", 2, 3, 1, RunConv, VerifyConv}); }

}  // namespace distrt
