// CUDA kernels for max_pool, avg_pool, their gradients max_pool_grad and
// avg_pool_grad, and global_max_pool / global_avg_pool on f32, f64, bf16
// and f16 (portable/pool.h): 1-D to 3-D windows with strides, pads,
// dilations, ceil_mode and count_include_pad. Shapes, attributes and
// errors are the host kernels' (kernels_pool.cpp); f32 and f64 results are
// theirs bit for bit except the global average (its lanes sum in another
// order). Operands of mixed dtypes and inputs of other ranks than 3..5
// (the host's errors) run on the host.
#include "conv_util.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/kernels_common.h"
#include "cuda/pool.h"

namespace distrt {
namespace {

// The host's pool shape rules (conv_util.h, PoolShape), in the bodies' terms.
Status PoolGeometry(const AttrReader& attrs, const Shape& x, portable::Window* win, Shape* out) {
  Spatial sp;
  DISTRT_RETURN_IF_ERROR(PoolShape(attrs, x, &sp, out));
  *win = WindowOf(sp);
  return OkStatus();
}

bool AcceptPool(const VerifyContext& v) { return SameDTypeRank(v, 3, 5); }
bool AcceptGlobal(const VerifyContext& v) { return SameDTypeRank(v, 3, 64); }

Status RunPool(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const Tensor& x = ctx.input(0);
  portable::Window win;
  Shape s;
  DISTRT_RETURN_IF_ERROR(PoolGeometry(ctx.attrs(), x.shape(), &win, &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), s}));
  int64_t include_pad;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("count_include_pad", 0, &include_pad));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (y->num_elements() == 0) return OkStatus();
  DISTRT_CUDA(cuda::LaunchPool(x.dtype(), name == "max_pool", include_pad != 0, x.raw(), y->raw(),
                               x.dim(0) * x.dim(1), win, CudaOf(ctx).cuda_stream()),
              (name + " kernel").c_str());
  return OkStatus();
}

Status RunPoolGrad(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const Tensor &x = ctx.input(0), &dy = ctx.input(1);
  portable::Window win;
  Shape s;
  DISTRT_RETURN_IF_ERROR(PoolGeometry(ctx.attrs(), x.shape(), &win, &s));
  if (dy.dtype() != x.dtype() || dy.shape() != s) {
    return InvalidArgumentError("result_grad is ", dy.type().ToString(), ", but pooling ",
                                x.type().ToString(), " gives ",
                                TensorType{x.dtype(), s}.ToString());
  }
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  int64_t include_pad;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("count_include_pad", 0, &include_pad));
  Tensor* dx;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &dx));
  if (dx->num_elements() == 0) return OkStatus();
  const bool is_max = name == "max_pool_grad";
  const int64_t planes = x.dim(0) * x.dim(1);
  Tensor arg;  // max: each window's chosen element, freed in stream order
  if (is_max) {
    DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kI64, {planes * win.out_size()}, &arg));
  }
  DISTRT_CUDA(cuda::LaunchPoolGrad(x.dtype(), is_max, include_pad != 0, x.raw(), dy.raw(),
                                   dx->raw(), is_max ? arg.data<int64_t>() : nullptr, planes, win,
                                   CudaOf(ctx).cuda_stream()),
              (name + " kernel").c_str());
  return OkStatus();
}

Status RunGlobal(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3) {
    return InvalidArgumentError("global pooling needs NC + spatial dims, got ",
                                ShapeToString(x.shape()));
  }
  Shape s = x.shape();
  for (size_t i = 2; i < s.size(); ++i) s[i] = 1;
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), s}));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  const int64_t planes = x.dim(0) * x.dim(1);
  if (planes == 0) return OkStatus();
  DISTRT_CUDA(cuda::LaunchGlobalPool(x.dtype(), name == "global_max_pool", x.raw(), y->raw(),
                                     planes, x.num_elements() / planes, CudaOf(ctx).cuda_stream()),
              (name + " kernel").c_str());
  return OkStatus();
}

}  // namespace

void RegisterCudaPoolKernels(KernelRegistry& r) {
  // Windows overlap and outputs differ in shape: never in place.
  const uint32_t f = FloatDTypes();
  r.Add(CudaKernel("max_pool", 1, 1, RunPool, f, AcceptPool, false));
  r.Add(CudaKernel("avg_pool", 1, 1, RunPool, f, AcceptPool, false));
  r.Add(CudaKernel("max_pool_grad", 2, 2, RunPoolGrad, f, AcceptPool, false));
  r.Add(CudaKernel("avg_pool_grad", 2, 2, RunPoolGrad, f, AcceptPool, false));
  r.Add(CudaKernel("global_avg_pool", 1, 1, RunGlobal, f, AcceptGlobal, false));
  r.Add(CudaKernel("global_max_pool", 1, 1, RunGlobal, f, AcceptGlobal, false));
}

}  // namespace distrt
