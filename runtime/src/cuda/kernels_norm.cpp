// CUDA kernels for softmax, log_softmax, softmax_grad, cross_entropy_sums and
// cross_entropy_grad, layer_norm and inference
// batch_norm on f32, f64, bf16 and f16 (16-bit floats compute in f32), with
// the host kernels' attributes and checks (kernels_norm.cpp).
#include "axis_geometry.h"
#include "cross_entropy_types.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/dispatch.cuh"
#include "cuda/kernels_common.h"
#include "cuda/norm.h"
#include "scale_and_mask.h"
#include "via_f32.h"

namespace distrt {
namespace {


// softmax and log_softmax: y of x's type, or f32 from a 16-bit x read as
// stored (a bf16 policy's widening cast folded in).
bool SoftmaxTypes(const TensorType& x, const TensorType& y) {
  return x == y || (x.shape == y.shape && IsHalfFloat(x.dtype) && y.dtype == DType::kF32);
}

// The optional mask input (attention's, fused in) checked as the host does.
bool AcceptSoftmax(const VerifyContext& v) {
  return (v.inputs.size() == 1 || v.inputs.size() == 2) && v.outputs.size() == 1 &&
         SoftmaxTypes(v.inputs[0], v.outputs[0]) &&
         CheckScaleMaskInput(v.inst->op(), v.inputs, 1, v.inputs[0].shape).ok();
}

// softmax_grad in y's dtype: dy and dx of it, or, for an f32 y, 16-bit
// floats read and written as stored.
bool SoftmaxGradTypes(const TensorType& y, const TensorType& dy, const TensorType& dx) {
  if (dy.shape != y.shape || dx.shape != y.shape) return false;
  if (dy.dtype == y.dtype && dx.dtype == y.dtype) return true;
  return y.dtype == DType::kF32 && cuda::IsF32StorageType(dy.dtype) &&
         cuda::IsF32StorageType(dx.dtype);
}

bool AcceptSoftmaxGrad(const VerifyContext& v) {
  return (v.inputs.size() == 2 || v.inputs.size() == 3) && v.outputs.size() == 1 &&
         SoftmaxGradTypes(v.inputs[0], v.inputs[1], v.outputs[0]) &&
         CheckScaleMaskInput("softmax_grad", v.inputs, 2, v.inputs[0].shape).ok();
}

Status RunSoftmax(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const Tensor& x = ctx.input(0);
  if (!SoftmaxTypes(x.type(), ctx.output_types[0])) {
    DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  }
  AxisSplit split;
  DISTRT_RETURN_IF_ERROR(ReadAxisSplit(ctx.attrs(), -1, name, x.shape(), &split));
  const int64_t outer = split.outer, n = split.n, inner = split.inner;
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (y->num_elements() == 0) return OkStatus();
  portable::ScaleAndMask<double> sm;
  DISTRT_RETURN_IF_ERROR(ReadScaleAndMask(ctx, 1, x.shape(), /*forward=*/true, &sm));
  DISTRT_CUDA(cuda::LaunchSoftmax(x.dtype(), y->dtype(), name == "log_softmax", x.raw(), y->raw(),
                                  outer, n, inner, sm, CudaOf(ctx).cuda_stream()),
              "softmax kernel");
  return OkStatus();
}

Status RunSoftmaxGrad(KernelContext& ctx) {
  const Tensor& y = ctx.input(0);
  const Tensor& dy = ctx.input(1);
  if (!SoftmaxGradTypes(y.type(), dy.type(), ctx.output_types[0])) {
    return InvalidArgumentError("softmax_grad: y is ", y.type().ToString(), ", dy ",
                                dy.type().ToString(), " and dx ", ctx.output_types[0].ToString(),
                                "; they must have one type, or y f32 and the others f32, bf16 "
                                "or f16 of its shape");
  }
  AxisSplit split;
  DISTRT_RETURN_IF_ERROR(ReadAxisSplit(ctx.attrs(), -1, "softmax_grad", y.shape(), &split));
  Tensor* dx;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &dx));
  if (dx->num_elements() == 0) return OkStatus();
  portable::ScaleAndMask<double> sm;
  DISTRT_RETURN_IF_ERROR(ReadScaleAndMask(ctx, 2, y.shape(), /*forward=*/false, &sm));
  DISTRT_CUDA(
      cuda::LaunchSoftmaxGrad(y.dtype(), dy.dtype(), dx->dtype(), y.raw(), dy.raw(), dx->raw(),
                              split.outer, split.n, split.inner, sm, CudaOf(ctx).cuda_stream()),
      "softmax_grad kernel");
  return OkStatus();
}

// Cross-entropy's fused forms (cross_entropy_types.h), 16-bit float logits
// and gradient read and written as stored.
bool AcceptCrossEntropy(const VerifyContext& v) {
  return CheckCrossEntropyTypes(v.inst->op(), v.inputs, v.outputs, /*half_storage=*/true).ok();
}

Status RunCrossEntropy(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  std::vector<TensorType> inputs, outputs = ctx.output_types;
  for (int i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i).type());
  DISTRT_RETURN_IF_ERROR(CheckCrossEntropyTypes(name, inputs, outputs, /*half_storage=*/true));
  int64_t first_class;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("first_class", 0, &first_class));
  const Tensor& x = ctx.input(0);
  const Tensor& labels = ctx.input(ctx.num_inputs() - 1);
  const DType compute = ctx.input(1).dtype();
  const int64_t n = x.shape().back();
  const int64_t rows = n == 0 ? 0 : x.num_elements() / n;
  cudaStream_t stream = CudaOf(ctx).cuda_stream();
  if (name == "cross_entropy_sums") {
    Tensor *sum_exp, *label_logit;
    DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &sum_exp));
    DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(1, &label_logit));
    if (rows == 0) return OkStatus();
    DISTRT_CUDA(cuda::LaunchCrossEntropySums(x.dtype(), compute, labels.dtype(), x.raw(),
                                             ctx.input(1).raw(), labels.raw(), sum_exp->raw(),
                                             label_logit->raw(), rows, n, first_class, stream),
                "cross_entropy_sums kernel");
    return OkStatus();
  }
  Tensor* dx;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &dx));
  if (dx->num_elements() == 0) return OkStatus();
  DISTRT_CUDA(cuda::LaunchCrossEntropyGrad(x.dtype(), compute, labels.dtype(), dx->dtype(), x.raw(),
                                           ctx.input(1).raw(), ctx.input(2).raw(),
                                           ctx.input(3).raw(), labels.raw(), dx->raw(), rows, n,
                                           first_class, stream),
              "cross_entropy_grad kernel");
  return OkStatus();
}

// Refused: normalised shapes of more dims than a broadcast map holds.
bool AcceptLayerNorm(const VerifyContext& v) {
  if (!SameDTypes(v)) return false;
  int64_t axis;
  const int rank = static_cast<int>(v.inputs[0].shape.size());
  if (!v.attrs().GetInt("axis", -1, &axis).ok() || !NormalizeAxis(axis, rank, &axis).ok())
    return true;  // the kernel reports the error, as the host's does
  return rank - axis <= portable::kMaxDims;
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
  const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  const bool has_bias = ctx.num_inputs() > 2;
  const char* what[] = {"scale", "bias"};
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const Shape& ps = ctx.input(i).shape();
    Shape b;
    Status st = BroadcastShapes(ps, norm_shape, &b);
    if (!st.ok() || b != norm_shape) {
      return InvalidArgumentError("layer_norm ", what[i - 1], " of shape ", ShapeToString(ps),
                                  " does not broadcast to the normalised shape ",
                                  ShapeToString(norm_shape));
    }
  }
  const Shape& scale_shape = ctx.input(1).shape();
  portable::BroadcastMap params;
  if (!portable::MakeBroadcastMap({scale_shape, has_bias ? ctx.input(2).shape() : scale_shape},
                                  norm_shape, &params)) {
    return InvalidArgumentError("layer_norm: normalised shape ", ShapeToString(norm_shape),
                                " has more than ", portable::kMaxDims, " dims");
  }
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  const int64_t n = NumElements(norm_shape);
  const int64_t rows = n == 0 ? 0 : x.num_elements() / n;
  if (rows == 0) return OkStatus();
  DISTRT_CUDA(cuda::LaunchLayerNorm(x.dtype(), x.raw(), ctx.input(1).raw(),
                                    has_bias ? ctx.input(2).raw() : nullptr, y->raw(), rows, n, eps,
                                    params, CudaOf(ctx).cuda_stream()),
              "layer_norm kernel");
  return OkStatus();
}

Status RunBatchNorm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  if (x.rank() < 2) return InvalidArgumentError("batch_norm needs rank >= 2, got ", x.rank());
  double eps;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetFloat("epsilon", 1e-5, &eps));
  const int64_t c = x.dim(1);
  for (int i = 1; i < 5; ++i) {
    const Tensor& p = ctx.input(i);
    if (p.num_elements() != c || p.dtype() != x.dtype()) {
      return InvalidArgumentError("batch_norm input ", i, " is ", p.type().ToString(),
                                  ", expected ", c, " ", DTypeName(x.dtype()), " values");
    }
  }
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (y->num_elements() == 0) return OkStatus();
  int64_t spatial = 1;
  for (int i = 2; i < x.rank(); ++i) spatial *= x.dim(i);
  Tensor factors;  // mul and add per channel, freed in stream order
  DISTRT_RETURN_IF_ERROR(
      ctx.AllocateTemp(x.dtype() == DType::kF64 ? DType::kF64 : DType::kF32, {2 * c}, &factors));
  DISTRT_CUDA(cuda::LaunchBatchNorm(x.dtype(), x.raw(), ctx.input(1).raw(), ctx.input(2).raw(),
                                    ctx.input(3).raw(), ctx.input(4).raw(), factors.raw(), y->raw(),
                                    x.num_elements(), c, spatial, eps, CudaOf(ctx).cuda_stream()),
              "batch_norm kernel");
  return OkStatus();
}

KernelDef CudaDef(const char* name, int min_inputs, int max_inputs, KernelFn run,
                  AcceptFn accepts) {
  // A row (or column, or element) is read in full before any of it is
  // written, by the threads that write it: the output may take over x.
  return CudaKernel(name, min_inputs, max_inputs, run, FloatDTypes(), accepts, true);
}

}  // namespace

void RegisterCudaNormKernels(KernelRegistry& r) {
  r.Add(CudaDef("softmax", 1, 2, RunSoftmax, AcceptSoftmax));
  r.Add(CudaDef("log_softmax", 1, 1, RunSoftmax, AcceptSoftmax));
  r.Add(CudaDef("softmax_grad", 2, 3, RunSoftmaxGrad, AcceptSoftmaxGrad));
  {
    // The sums read a row's max after writing its sum: no take-over; the
    // gradient's element i is written after logit i is read.
    KernelDef sums = CudaKernel("cross_entropy_sums", 3, 3, RunCrossEntropy, FloatDTypes(),
                                AcceptCrossEntropy, false);
    sums.num_outputs = 2;
    r.Add(sums);
    r.Add(CudaKernel("cross_entropy_grad", 5, 5, RunCrossEntropy, FloatDTypes(),
                     AcceptCrossEntropy, true));
  }
  r.Add(CudaDef("layer_norm", 2, 3, RunLayerNorm, AcceptLayerNorm));
  r.Add(CudaDef("batch_norm", 5, 5, RunBatchNorm, SameDTypes));
}

}  // namespace distrt
