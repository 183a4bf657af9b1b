// max_pool, avg_pool (ONNX MaxPool/AveragePool with ceil_mode, dilations,
// count_include_pad), their gradients max_pool_grad / avg_pool_grad, and the
// global pools.
#include <algorithm>
#include <cmath>
#include <limits>

#include "conv_util.h"

namespace distrt {
namespace {

Status VerifyPool(const VerifyContext& ctx) {
  Spatial sp;
  Shape s;
  DISTRT_RETURN_IF_ERROR(PoolShape(ctx.attrs(), ctx.inputs[0].shape, &sp, &s));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, s});
}

template <typename T>
void PoolPlane(bool is_max, bool include_pad, const Spatial& s, const T* x, T* y) {
  for (int64_t od = 0; od < s.out[0]; ++od)
    for (int64_t oh = 0; oh < s.out[1]; ++oh)
      for (int64_t ow = 0; ow < s.out[2]; ++ow) {
        const int64_t o[3] = {od, oh, ow};
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t count = 0, padded_count = 0;
        bool nan = false;
        for (int64_t kd = 0; kd < s.k[0]; ++kd)
          for (int64_t kh = 0; kh < s.k[1]; ++kh)
            for (int64_t kw = 0; kw < s.k[2]; ++kw) {
              const int64_t kk[3] = {kd, kh, kw};
              int64_t pos[3];
              bool inside = true, in_padded = true;
              for (int j = 0; j < 3; ++j) {
                pos[j] = o[j] * s.s[j] - s.pb[j] + kk[j] * s.d[j];
                if (pos[j] < 0 || pos[j] >= s.in[j]) inside = false;
                if (pos[j] < -s.pb[j] || pos[j] >= s.in[j] + s.pe[j]) in_padded = false;
              }
              if (in_padded) ++padded_count;
              if (!inside) continue;
              const T v = x[(pos[0] * s.in[1] + pos[1]) * s.in[2] + pos[2]];
              ++count;
              if (is_max) {
                if (std::isnan(static_cast<double>(v))) nan = true;
                acc = std::max(acc, static_cast<double>(v));
              } else {
                acc += v;
              }
            }
        T r;
        if (is_max) {
          r = nan ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(acc);
        } else {
          const int64_t div = include_pad ? padded_count : count;
          r = div > 0 ? static_cast<T>(acc / static_cast<double>(div))
                      : std::numeric_limits<T>::quiet_NaN();
        }
        y[(od * s.out[1] + oh) * s.out[2] + ow] = r;
      }
}

Status RunPool(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const Tensor& x = ctx.input(0);
  Spatial sp;
  Shape s;
  DISTRT_RETURN_IF_ERROR(PoolShape(ctx.attrs(), x.shape(), &sp, &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), s}));
  int64_t include_pad;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("count_include_pad", 0, &include_pad));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const bool is_max = name == "max_pool";
  const int64_t planes = x.dim(0) * x.dim(1);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = out->data<T>();
    ParallelFor(ctx.pool, planes, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        PoolPlane<T>(is_max, include_pad != 0, sp, px + p * sp.in_size(), py + p * sp.out_size());
      }
    });
  };
  // ONNX MaxPool also takes 8-bit integers (a max of values it holds exactly).
  if (is_max && x.dtype() == DType::kU8) {
    run(uint8_t{});
    return OkStatus();
  }
  if (is_max && x.dtype() == DType::kI8) {
    run(int8_t{});
    return OkStatus();
  }
  DISTRT_DISPATCH_FLOAT(x.dtype(), name, run(T{}));
  return OkStatus();
}

// ---- gradients ---------------------------------------------------------------

// Inputs (x, dy): dy must have the shape the forward pool gives for x.
Status PoolGradShape(const AttrReader& attrs, const TensorType& x, const TensorType& dy,
                     Spatial* sp) {
  Shape s;
  DISTRT_RETURN_IF_ERROR(PoolShape(attrs, x.shape, sp, &s));
  if (dy.dtype != x.dtype || dy.shape != s) {
    return InvalidArgumentError("result_grad is ", dy.ToString(), ", but pooling ", x.ToString(),
                                " gives ", TensorType{x.dtype, s}.ToString());
  }
  return OkStatus();
}

Status VerifyPoolGrad(const VerifyContext& ctx) {
  Spatial sp;
  DISTRT_RETURN_IF_ERROR(PoolGradShape(ctx.attrs(), ctx.inputs[0], ctx.inputs[1], &sp));
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

// Windows are products of per-dim index sets, so each dim's part is
// tabulated once: for output index o of dim j, the input indices the
// window covers inside the input (in kernel order) and how many of its taps
// fall inside the input plus its declared pads (the count_include_pad
// divisor), as PoolPlane computes them.
struct WindowTable {
  std::vector<int64_t> pos[3];    // inside indices, window after window
  std::vector<int64_t> start[3];  // per output index: offset into pos (+1 entry)
  std::vector<int64_t> padded[3];
};

WindowTable MakeWindowTable(const Spatial& s) {
  WindowTable t;
  for (int j = 0; j < 3; ++j) {
    t.start[j].push_back(0);
    for (int64_t o = 0; o < s.out[j]; ++o) {
      int64_t padded = 0;
      for (int64_t k = 0; k < s.k[j]; ++k) {
        const int64_t p = o * s.s[j] - s.pb[j] + k * s.d[j];
        if (p >= -s.pb[j] && p < s.in[j] + s.pe[j]) ++padded;
        if (p >= 0 && p < s.in[j]) t.pos[j].push_back(p);
      }
      t.start[j].push_back(static_cast<int64_t>(t.pos[j].size()));
      t.padded[j].push_back(padded);
    }
  }
  return t;
}

// One plane of dx (zeroed here) from one plane of dy. Max: all of a
// window's gradient goes to the first maximum in scan order (a NaN wins, as
// in PyTorch's max_pool backward, which also takes the last NaN). Avg:
// spread over the window's elements inside the input, divided by the
// forward's divisor.
template <typename T>
void PoolGradPlane(bool is_max, bool include_pad, const Spatial& s, const WindowTable& w,
                   const T* x, const T* dy, T* dx) {
  std::fill(dx, dx + s.in_size(), T(0));
  for (int64_t od = 0; od < s.out[0]; ++od) {
    const int64_t* p0 = w.pos[0].data() + w.start[0][od];
    const int64_t n0 = w.start[0][od + 1] - w.start[0][od];
    for (int64_t oh = 0; oh < s.out[1]; ++oh) {
      const int64_t* p1 = w.pos[1].data() + w.start[1][oh];
      const int64_t n1 = w.start[1][oh + 1] - w.start[1][oh];
      for (int64_t ow = 0; ow < s.out[2]; ++ow) {
        const int64_t* p2 = w.pos[2].data() + w.start[2][ow];
        const int64_t n2 = w.start[2][ow + 1] - w.start[2][ow];
        const T g = dy[(od * s.out[1] + oh) * s.out[2] + ow];
        const int64_t count = n0 * n1 * n2;
        if (count == 0) continue;
        if (is_max) {
          int64_t best = -1;
          T best_v = T(0);
          for (int64_t a = 0; a < n0; ++a)
            for (int64_t b = 0; b < n1; ++b) {
              const int64_t row = (p0[a] * s.in[1] + p1[b]) * s.in[2];
              for (int64_t c = 0; c < n2; ++c) {
                const T v = x[row + p2[c]];
                if (best < 0 || v > best_v || std::isnan(static_cast<double>(v))) {
                  best = row + p2[c];
                  best_v = v;
                }
              }
            }
          dx[best] += g;
          continue;
        }
        const int64_t div =
            include_pad ? w.padded[0][od] * w.padded[1][oh] * w.padded[2][ow] : count;
        const T share = static_cast<T>(static_cast<double>(g) / static_cast<double>(div));
        for (int64_t a = 0; a < n0; ++a)
          for (int64_t b = 0; b < n1; ++b) {
            T* row = dx + (p0[a] * s.in[1] + p1[b]) * s.in[2];
            for (int64_t c = 0; c < n2; ++c) row[p2[c]] += share;
          }
      }
    }
  }
}

Status RunPoolGrad(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const Tensor &x = ctx.input(0), &dy = ctx.input(1);
  Spatial sp;
  DISTRT_RETURN_IF_ERROR(PoolGradShape(ctx.attrs(), x.type(), dy.type(), &sp));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  int64_t include_pad;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("count_include_pad", 0, &include_pad));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const bool is_max = name == "max_pool_grad";
  const int64_t planes = x.dim(0) * x.dim(1);
  const WindowTable table = MakeWindowTable(sp);
  DISTRT_DISPATCH_FLOAT(x.dtype(), name, {
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    T* pdx = out->data<T>();
    // Windows overlap within a plane, never across planes.
    ParallelFor(ctx.pool, planes, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        PoolGradPlane<T>(is_max, include_pad != 0, sp, table, px + p * sp.in_size(),
                         pdy + p * sp.out_size(), pdx + p * sp.in_size());
      }
    });
  });
  return OkStatus();
}

Status GlobalShape(const Shape& x, Shape* out) {
  if (x.size() < 3) {
    return InvalidArgumentError("global pooling needs NC + spatial dims, got ", ShapeToString(x));
  }
  *out = x;
  for (size_t i = 2; i < out->size(); ++i) (*out)[i] = 1;
  return OkStatus();
}

Status VerifyGlobal(const VerifyContext& ctx) {
  Shape s;
  DISTRT_RETURN_IF_ERROR(GlobalShape(ctx.inputs[0].shape, &s));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, s});
}

Status RunGlobal(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const Tensor& x = ctx.input(0);
  Shape s;
  DISTRT_RETURN_IF_ERROR(GlobalShape(x.shape(), &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), s}));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const bool is_max = name == "global_max_pool";
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t n = planes == 0 ? 0 : x.num_elements() / planes;
  DISTRT_DISPATCH_FLOAT(x.dtype(), name, {
    const T* px = x.data<T>();
    T* py = out->data<T>();
    ParallelFor(ctx.pool, planes, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* row = px + p * n;
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        bool nan = false;
        for (int64_t i = 0; i < n; ++i) {
          if (is_max) {
            if (std::isnan(static_cast<double>(row[i]))) nan = true;
            acc = std::max(acc, static_cast<double>(row[i]));
          } else {
            acc += row[i];
          }
        }
        py[p] = nan ? std::numeric_limits<T>::quiet_NaN()
                    : static_cast<T>(is_max ? acc : acc / static_cast<double>(n));
      }
    });
  });
  return OkStatus();
}

}  // namespace

// max_pool_indices: the flattened input position of each window's first
// maximum (ONNX MaxPool's Indices); storage_order 1 numbers the spatial
// dimensions column-major.
Status VerifyPoolIndices(const VerifyContext& ctx) {
  Spatial sp;
  Shape s;
  DISTRT_RETURN_IF_ERROR(PoolShape(ctx.attrs(), ctx.inputs[0].shape, &sp, &s));
  return CheckOutputType(ctx.outputs[0], TensorType{DType::kI64, s});
}

template <typename T>
void PoolIndicesPlane(bool column_major, int64_t base, const Spatial& s, const T* x, int64_t* y) {
  for (int64_t od = 0; od < s.out[0]; ++od)
    for (int64_t oh = 0; oh < s.out[1]; ++oh)
      for (int64_t ow = 0; ow < s.out[2]; ++ow) {
        const int64_t o[3] = {od, oh, ow};
        bool found = false;
        double best = 0;
        int64_t at[3] = {0, 0, 0};
        for (int64_t kd = 0; kd < s.k[0]; ++kd)
          for (int64_t kh = 0; kh < s.k[1]; ++kh)
            for (int64_t kw = 0; kw < s.k[2]; ++kw) {
              const int64_t kk[3] = {kd, kh, kw};
              int64_t pos[3];
              bool inside = true;
              for (int j = 0; j < 3; ++j) {
                pos[j] = o[j] * s.s[j] - s.pb[j] + kk[j] * s.d[j];
                if (pos[j] < 0 || pos[j] >= s.in[j]) inside = false;
              }
              if (!inside) continue;
              const double v = static_cast<double>(x[(pos[0] * s.in[1] + pos[1]) * s.in[2] + pos[2]]);
              if (!found || v > best) {
                found = true;
                best = v;
                std::copy(pos, pos + 3, at);
              }
            }
        const int64_t local = column_major ? at[0] + s.in[0] * (at[1] + s.in[1] * at[2])
                                           : (at[0] * s.in[1] + at[1]) * s.in[2] + at[2];
        y[(od * s.out[1] + oh) * s.out[2] + ow] = base + local;
      }
}

Status RunPoolIndices(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Spatial sp;
  Shape s;
  DISTRT_RETURN_IF_ERROR(PoolShape(ctx.attrs(), x.shape(), &sp, &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{DType::kI64, s}));
  int64_t column_major;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("storage_order", 0, &column_major));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_plane = sp.in[0] * sp.in[1] * sp.in[2];
  const int64_t out_plane = sp.out[0] * sp.out[1] * sp.out[2];
  DISTRT_DISPATCH_NUMERIC(x.dtype(), "max_pool_indices", {
    const T* px = x.data<T>();
    int64_t* py = out->data<int64_t>();
    ParallelFor(ctx.pool, planes, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        PoolIndicesPlane<T>(column_major != 0, p * in_plane, sp, px + p * in_plane,
                            py + p * out_plane);
    });
  });
  return OkStatus();
}

void RegisterPoolKernels(KernelRegistry& r) {
  r.Add({"max_pool", 1, 1, 1, RunPool, VerifyPool});
  r.Add({"avg_pool", 1, 1, 1, RunPool, VerifyPool});
  r.Add({"max_pool_indices", 1, 1, 1, RunPoolIndices, VerifyPoolIndices});
  r.Add({"max_pool_grad", 2, 2, 1, RunPoolGrad, VerifyPoolGrad});
  r.Add({"avg_pool_grad", 2, 2, 1, RunPoolGrad, VerifyPoolGrad});
  r.Add({"global_avg_pool", 1, 1, 1, RunGlobal, VerifyGlobal});
  r.Add({"global_max_pool", 1, 1, 1, RunGlobal, VerifyGlobal});
}

}  // namespace distrt
