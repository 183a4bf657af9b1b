// conv (ONNX Conv, NCHW, 1-D..3-D, groups): im2col + GEMM; its gradients
// conv_grad_input (GEMM + col2im) and conv_grad_weight (im2col + GEMM).
#include <algorithm>
#include <map>
#include <mutex>

#include "conv_util.h"

namespace distrt {
namespace {

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

// Columns [K x P] are "direct" (x itself) for 1x1, stride-1, unpadded convs.
bool DirectColumns(const ConvParams& p) {
  const Spatial& s = p.sp;
  return s.k_size() == 1 && s.s[0] == 1 && s.s[1] == 1 && s.s[2] == 1 &&
         s.pb[0] + s.pb[1] + s.pb[2] + s.pe[0] + s.pe[1] + s.pe[2] == 0;
}

// The columns of task t (image t / group, group t % group) of input x:
// x's own block when `direct`, else im2col into `col`.
template <typename T>
const T* ImageColumns(const T* x, const ConvParams& p, bool direct, int64_t t,
                      std::vector<T>& col) {
  const int64_t n = t / p.group, g = t % p.group;
  const T* xg = x + (n * p.c + g * p.cg) * p.sp.in_size();
  if (direct) return xg;
  col.resize(static_cast<size_t>(p.cg * p.sp.k_size() * p.sp.out_size()));
  Im2Col(xg, p, col.data());
  return col.data();
}

template <typename T>
Status Conv(KernelContext& ctx, const ConvParams& p) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  const T* bias = nullptr;
  if (ctx.num_inputs() > 2) {
    const Tensor& b = ctx.input(2);
    if (b.num_elements() != p.m || b.dtype() != x.dtype()) {
      return InvalidArgumentError("conv bias is ", b.type().ToString(), ", expected ", p.m,
                                  " values");
    }
    bias = b.data<T>();
  }
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const Spatial& s = p.sp;
  const int64_t P = s.out_size(), K = p.cg * s.k_size();
  const bool direct = DirectColumns(p);
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  T* py = out->data<T>();
  const int64_t tasks = p.n * p.group;
  const int threads = ctx.pool ? ctx.pool->size() : 1;
  auto columns = [&](int64_t t, std::vector<T>& col) {
    return ImageColumns(px, p, direct, t, col);
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
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  if (x.dtype() != w.dtype()) return InvalidArgumentError("conv x and w dtypes differ");
  ConvParams p;
  DISTRT_RETURN_IF_ERROR(ConvShape(ctx.attrs(), x.shape(), w.shape(), &p));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), p.out}));
  DISTRT_DISPATCH_FLOAT(x.dtype(), "conv", return Conv<T>(ctx, p));
  return OkStatus();
}

// ---- gradients ---------------------------------------------------------------

// The inverse of Im2Col for channels [c0, c1) of one image and group: dx
// (those channels, zeroed here) receives every column entry at the input
// position it was read from. Channels own disjoint rows of `col` and of dx,
// so channel ranges may run in parallel.
template <typename T>
void Col2Im(const T* col, const ConvParams& p, int64_t c0, int64_t c1, T* dx) {
  const Spatial& s = p.sp;
  const int64_t P = s.out_size();
  std::fill(dx + c0 * s.in_size(), dx + c1 * s.in_size(), T(0));
  int64_t row = c0 * s.k_size();
  for (int64_t c = c0; c < c1; ++c) {
    T* xc = dx + c * s.in_size();
    for (int64_t kd = 0; kd < s.k[0]; ++kd)
      for (int64_t kh = 0; kh < s.k[1]; ++kh)
        for (int64_t kw = 0; kw < s.k[2]; ++kw, ++row) {
          const T* src = col + row * P;
          for (int64_t od = 0; od < s.out[0]; ++od) {
            const int64_t id = od * s.s[0] - s.pb[0] + kd * s.d[0];
            if (id < 0 || id >= s.in[0]) continue;
            for (int64_t oh = 0; oh < s.out[1]; ++oh) {
              const int64_t ih = oh * s.s[1] - s.pb[1] + kh * s.d[1];
              if (ih < 0 || ih >= s.in[1]) continue;
              const T* srow = src + (od * s.out[1] + oh) * s.out[2];
              T* xrow = xc + (id * s.in[1] + ih) * s.in[2];
              for (int64_t ow = 0; ow < s.out[2]; ++ow) {
                const int64_t iw = ow * s.s[2] - s.pb[2] + kw * s.d[2];
                if (iw >= 0 && iw < s.in[2]) xrow[iw] += srow[ow];
              }
            }
          }
        }
  }
}

// conv_grad_input: inputs (dy [N, M, o...], w [M, C/group, k...]); the
// output type (the forward conv's x) is declared.
Status GradInputShape(const AttrReader& attrs, const TensorType& dy, const TensorType& w,
                      const TensorType& x, ConvParams* p) {
  DISTRT_RETURN_IF_ERROR(ConvShape(attrs, x.shape, w.shape, p));
  if (dy.dtype != w.dtype || x.dtype != w.dtype || dy.shape != p->out) {
    return InvalidArgumentError("conv_grad_input: result_grad is ", dy.ToString(), ", but conv of ",
                                x.ToString(), " and weight ", w.ToString(), " gives ",
                                TensorType{w.dtype, p->out}.ToString());
  }
  return OkStatus();
}

// conv_grad_weight: inputs (x [N, C, i...], dy [N, M, o...]); the output
// type (the weight's) is declared.
Status GradWeightShape(const AttrReader& attrs, const TensorType& x, const TensorType& dy,
                       const TensorType& w, ConvParams* p) {
  DISTRT_RETURN_IF_ERROR(ConvShape(attrs, x.shape, w.shape, p));
  if (dy.dtype != x.dtype || w.dtype != x.dtype || dy.shape != p->out) {
    return InvalidArgumentError("conv_grad_weight: result_grad is ", dy.ToString(),
                                ", but conv of ", x.ToString(), " and weight ", w.ToString(),
                                " gives ", TensorType{x.dtype, p->out}.ToString());
  }
  return OkStatus();
}

Status VerifyConvGradInput(const VerifyContext& ctx) {
  ConvParams p;
  return GradInputShape(ctx.attrs(), ctx.inputs[0], ctx.inputs[1], ctx.outputs[0], &p);
}

Status VerifyConvGradWeight(const VerifyContext& ctx) {
  ConvParams p;
  return GradWeightShape(ctx.attrs(), ctx.inputs[0], ctx.inputs[1], ctx.outputs[0], &p);
}

// dx[n, g] = col2im(w_g^T dy[n, g]) for every image n and group g.
template <typename T>
Status ConvGradInput(KernelContext& ctx, const ConvParams& p) {
  const Tensor &dy = ctx.input(0), &w = ctx.input(1);
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const Spatial& s = p.sp;
  const int64_t P = s.out_size(), ks = s.k_size(), K = p.cg * ks;
  const bool direct = DirectColumns(p);
  const T* pdy = dy.data<T>();
  const T* pw = w.data<T>();
  T* pdx = out->data<T>();
  const int64_t tasks = p.n * p.group;
  const int threads = ctx.pool ? ctx.pool->size() : 1;
  // Channels [c0, c1) of task t: their rows of w_g^T dy_g (into `col`, a
  // K x P scratch), then col2im.
  auto channels = [&](int64_t t, int64_t c0, int64_t c1, T* col) {
    const int64_t n = t / p.group, g = t % p.group;
    const T* dyg = pdy + (n * p.m + g * p.mg) * P;
    T* dxg = pdx + (n * p.c + g * p.cg) * s.in_size();
    const T* wg = pw + g * p.mg * K;
    if (direct) {  // K = cg and P = in_size: the rows are dx's channels
      GemmRowMajorEx(true, false, c1 - c0, P, p.mg, wg + c0, K, dyg, P, false, dxg + c0 * P, P);
      return;
    }
    GemmRowMajorEx(true, false, (c1 - c0) * ks, P, p.mg, wg + c0 * ks, K, dyg, P, false,
                   col + c0 * ks * P, P);
    Col2Im(col, p, c0, c1, dxg);
  };
  const size_t col_size = direct ? 0 : static_cast<size_t>(K * P);
  if (tasks >= threads || p.cg < 2) {
    ParallelFor(ctx.pool, tasks, 1, [&](int64_t t0, int64_t t1) {
      std::vector<T> col(col_size);
      for (int64_t t = t0; t < t1; ++t) channels(t, 0, p.cg, col.data());
    });
  } else {
    // Few images: split the input channels (disjoint rows of the scratch
    // and disjoint planes of dx).
    std::vector<T> col(col_size);
    for (int64_t t = 0; t < tasks; ++t) {
      ParallelFor(ctx.pool, p.cg, 1,
                  [&](int64_t c0, int64_t c1) { channels(t, c0, c1, col.data()); });
    }
  }
  return OkStatus();
}

// dw_g += dy[n, g] im2col(x[n, g])^T, summed over the images n.
template <typename T>
Status ConvGradWeight(KernelContext& ctx, const ConvParams& p) {
  const Tensor &x = ctx.input(0), &dy = ctx.input(1);
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateZeroedOutput(0, &out));
  const Spatial& s = p.sp;
  const int64_t P = s.out_size(), K = p.cg * s.k_size();
  const bool direct = DirectColumns(p);
  const T* px = x.data<T>();
  const T* pdy = dy.data<T>();
  T* pdw = out->data<T>();
  const int64_t wsize = p.m * K;
  const int64_t tasks = p.n * p.group;
  const int threads = ctx.pool ? ctx.pool->size() : 1;
  auto columns = [&](int64_t t, std::vector<T>& col) {
    return ImageColumns(px, p, direct, t, col);
  };
  // Rows [m0, m1) of group t % group's block of dw (+)= dy rows x cols^T.
  auto gemm = [&](int64_t t, const T* cols, int64_t m0, int64_t m1, T* dw) {
    const int64_t n = t / p.group, g = t % p.group;
    const T* dyg = pdy + (n * p.m + g * p.mg) * P;
    GemmRowMajorEx(false, true, m1 - m0, K, P, dyg + m0 * P, P, cols, P, true,
                   dw + (g * p.mg + m0) * K, K);
  };
  if (tasks >= threads || p.mg < 16) {
    // Each chunk of images sums into its own copy of dw (the first chunk
    // into the output); the copies are added in chunk order, so the result
    // depends on the thread count only through summation order.
    std::mutex mu;
    std::map<int64_t, std::vector<T>> partial;  // by first task
    ParallelFor(ctx.pool, tasks, 1, [&](int64_t t0, int64_t t1) {
      std::vector<T> mine, col;
      T* dw = pdw;
      if (t0 != 0) {
        mine.assign(static_cast<size_t>(wsize), T(0));
        dw = mine.data();
      }
      for (int64_t t = t0; t < t1; ++t) gemm(t, columns(t, col), 0, p.mg, dw);
      if (t0 != 0) {
        std::lock_guard<std::mutex> lock(mu);
        partial.emplace(t0, std::move(mine));
      }
    });
    for (const auto& kv : partial) {
      for (int64_t i = 0; i < wsize; ++i) pdw[i] += kv.second[static_cast<size_t>(i)];
    }
  } else {
    // Few images, many output channels: split dw's rows.
    std::vector<T> col;
    for (int64_t t = 0; t < tasks; ++t) {
      const T* cols = columns(t, col);
      ParallelFor(ctx.pool, p.mg, 16, [&](int64_t m0, int64_t m1) { gemm(t, cols, m0, m1, pdw); });
    }
  }
  return OkStatus();
}

Status RunConvGradInput(KernelContext& ctx) {
  const Tensor &dy = ctx.input(0), &w = ctx.input(1);
  ConvParams p;
  DISTRT_RETURN_IF_ERROR(GradInputShape(ctx.attrs(), dy.type(), w.type(), ctx.output_types[0], &p));
  DISTRT_DISPATCH_FLOAT(w.dtype(), "conv_grad_input", return ConvGradInput<T>(ctx, p));
  return OkStatus();
}

Status RunConvGradWeight(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &dy = ctx.input(1);
  ConvParams p;
  DISTRT_RETURN_IF_ERROR(
      GradWeightShape(ctx.attrs(), x.type(), dy.type(), ctx.output_types[0], &p));
  DISTRT_DISPATCH_FLOAT(x.dtype(), "conv_grad_weight", return ConvGradWeight<T>(ctx, p));
  return OkStatus();
}

}  // namespace

void RegisterConvKernels(KernelRegistry& r) {
  r.Add({"conv", 2, 3, 1, RunConv, VerifyConv});
  r.Add({"conv_grad_input", 2, 2, 1, RunConvGradInput, VerifyConvGradInput});
  r.Add({"conv_grad_weight", 2, 2, 1, RunConvGradWeight, VerifyConvGradWeight});
}

}  // namespace distrt
