// CUDA kernels for conv, conv_grad_input and conv_grad_weight on f32, f64,
// bf16 and f16 (16-bit floats compute in f32), 1-D to 3-D with groups,
// strides, pads and dilations. They are direct convolutions (portable/conv.h:
// a thread per output or input-gradient element, a warp per weight-gradient
// element, its sum split in chunks when the weight is small and the sum
// long), not GEMMs: correct everywhere, but far from cuDNN's speed on large
// convolutions. Shapes, attributes and errors are the host kernels'
// (kernels_conv.cpp); operands of mixed dtypes and ranks other than 3..5
// (the host's errors) run on the host.
#include "conv_util.h"
#include "cuda/conv.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/kernels_common.h"

namespace distrt {
namespace {

struct ConvGeom {
  portable::ConvSizes z;
  portable::Window win;
  Shape out;  // the forward's output shape
};

// The host's conv shape rules (conv_util.h, ConvShape), in the bodies' terms.
Status ConvGeometry(const AttrReader& attrs, const Shape& x, const Shape& w, ConvGeom* g) {
  ConvParams p;
  DISTRT_RETURN_IF_ERROR(ConvShape(attrs, x, w, &p));
  g->z.n = p.n;
  g->z.c = p.c;
  g->z.m = p.m;
  g->z.cg = p.cg;
  g->z.mg = p.mg;
  g->win = WindowOf(p.sp);
  g->out = std::move(p.out);
  return OkStatus();
}

// Every operand and the result of one float dtype, of rank 3..5.
bool AcceptConv(const VerifyContext& v) { return SameDTypeRank(v, 3, 5); }

Status RunConv(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  if (x.dtype() != w.dtype()) return InvalidArgumentError("conv x and w dtypes differ");
  ConvGeom p;
  DISTRT_RETURN_IF_ERROR(ConvGeometry(ctx.attrs(), x.shape(), w.shape(), &p));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), p.out}));
  const void* bias = nullptr;
  if (ctx.num_inputs() > 2) {
    const Tensor& b = ctx.input(2);
    if (b.num_elements() != p.z.m || b.dtype() != x.dtype()) {
      return InvalidArgumentError("conv bias is ", b.type().ToString(), ", expected ", p.z.m,
                                  " values");
    }
    bias = b.raw();
  }
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (y->num_elements() == 0) return OkStatus();
  DISTRT_CUDA(cuda::LaunchConv(x.dtype(), x.raw(), w.raw(), bias, y->raw(), p.z, p.win,
                               CudaOf(ctx).cuda_stream()),
              "conv kernel");
  return OkStatus();
}

// conv_grad_input (dy, w) -> dx, the declared output type being the
// forward's x; the host's checks (GradInputShape).
Status RunConvGradInput(KernelContext& ctx) {
  const Tensor &dy = ctx.input(0), &w = ctx.input(1);
  const TensorType& xt = ctx.output_types[0];
  ConvGeom p;
  DISTRT_RETURN_IF_ERROR(ConvGeometry(ctx.attrs(), xt.shape, w.shape(), &p));
  if (dy.dtype() != w.dtype() || xt.dtype != w.dtype() || dy.shape() != p.out) {
    return InvalidArgumentError("conv_grad_input: result_grad is ", dy.type().ToString(),
                                ", but conv of ", xt.ToString(), " and weight ",
                                w.type().ToString(), " gives ",
                                TensorType{w.dtype(), p.out}.ToString());
  }
  Tensor* dx;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &dx));
  if (dx->num_elements() == 0) return OkStatus();
  DISTRT_CUDA(cuda::LaunchConvGradInput(w.dtype(), dy.raw(), w.raw(), dx->raw(), p.z, p.win,
                                        CudaOf(ctx).cuda_stream()),
              "conv_grad_input kernel");
  return OkStatus();
}

// conv_grad_weight (x, dy) -> dw, the declared output type being the
// weight's; the host's checks (GradWeightShape).
Status RunConvGradWeight(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &dy = ctx.input(1);
  const TensorType& wt = ctx.output_types[0];
  ConvGeom p;
  DISTRT_RETURN_IF_ERROR(ConvGeometry(ctx.attrs(), x.shape(), wt.shape, &p));
  if (dy.dtype() != x.dtype() || wt.dtype != x.dtype() || dy.shape() != p.out) {
    return InvalidArgumentError("conv_grad_weight: result_grad is ", dy.type().ToString(),
                                ", but conv of ", x.type().ToString(), " and weight ",
                                wt.ToString(), " gives ",
                                TensorType{x.dtype(), p.out}.ToString());
  }
  Tensor* dw;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &dw));
  const int64_t wsize = dw->num_elements();
  if (wsize == 0) return OkStatus();
  const int64_t chunks = portable::ConvGradWeightChunks(wsize, p.z.n * p.win.out_size());
  Tensor partial;  // per chunk and weight element, freed in stream order
  if (chunks > 1) {
    DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(x.dtype() == DType::kF64 ? DType::kF64 : DType::kF32,
                                            {chunks * wsize}, &partial));
  }
  DISTRT_CUDA(cuda::LaunchConvGradWeight(x.dtype(), x.raw(), dy.raw(), dw->raw(),
                                         chunks > 1 ? partial.raw() : nullptr, chunks, p.z, p.win,
                                         CudaOf(ctx).cuda_stream()),
              "conv_grad_weight kernel");
  return OkStatus();
}

}  // namespace

void RegisterCudaConvKernels(KernelRegistry& r) {
  // Outputs read many input elements each: never in place.
  r.Add(CudaKernel("conv", 2, 3, RunConv, FloatDTypes(), AcceptConv, false));
  r.Add(CudaKernel("conv_grad_input", 2, 2, RunConvGradInput, FloatDTypes(), AcceptConv, false));
  r.Add(CudaKernel("conv_grad_weight", 2, 2, RunConvGradWeight, FloatDTypes(), AcceptConv, false));
}

}  // namespace distrt
