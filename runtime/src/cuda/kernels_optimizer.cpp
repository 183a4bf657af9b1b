// CUDA kernels for the fused optimizer updates adam_update and sgd_update
// (f32, f64: the types they verify for), with the host kernels' attributes
// (kernels_optimizer.cpp). The per-step scalars stay on the device: the
// body reads them, nothing is copied to the host.
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/optimizer.h"

namespace distrt {
namespace {

// Tensors of the parameter's type, then 0-d scalars of its dtype, outputs
// of its type.
bool AcceptUpdate(const VerifyContext& v, size_t tensors, size_t scalars) {
  if (v.inputs.size() != tensors + scalars) return false;
  const TensorType& p = v.inputs[0];
  if (p.dtype != DType::kF32 && p.dtype != DType::kF64) return false;
  for (size_t i = 0; i < v.inputs.size(); ++i) {
    const TensorType& t = v.inputs[i];
    if (i < tensors ? !(t == p) : (t.dtype != p.dtype || !t.shape.empty())) return false;
  }
  for (const TensorType& o : v.outputs)
    if (!(o == p)) return false;
  return true;
}
bool AcceptAdam(const VerifyContext& v) { return AcceptUpdate(v, 4, 4); }
bool AcceptSgd(const VerifyContext& v) { return AcceptUpdate(v, 3, 2); }

Status RunAdamUpdate(KernelContext& ctx) {
  AttrReader attrs = ctx.attrs();
  double beta1 = 0, beta2 = 0, eps = 0, wd = 0;
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("beta1", &beta1));
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("beta2", &beta2));
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("eps", &eps));
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("weight_decay", &wd));
  // Possibly the parameter's and states' own buffers (write_into).
  Tensor *p_out, *m_out, *v_out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutputOver(0, 0, &p_out));
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutputOver(1, 2, &m_out));
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutputOver(2, 3, &v_out));
  const Tensor& p = ctx.input(0);
  DISTRT_CUDA(cuda::LaunchAdam(p.dtype(), p.raw(), ctx.input(1).raw(), ctx.input(2).raw(),
                               ctx.input(3).raw(), p_out->raw(), m_out->raw(), v_out->raw(),
                               ctx.input(4).raw(), ctx.input(5).raw(), ctx.input(6).raw(),
                               ctx.input(7).raw(), beta1, beta2, eps, wd, p.num_elements(),
                               CudaOf(ctx).cuda_stream()),
              "adam_update kernel");
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
  const Tensor& p = ctx.input(0);
  DISTRT_CUDA(
      cuda::LaunchSgd(p.dtype(), p.raw(), ctx.input(1).raw(), ctx.input(2).raw(), p_out->raw(),
                      b_out->raw(), ctx.input(3).raw(), ctx.input(4).raw(), momentum, wd,
                      nesterov != 0, p.num_elements(), CudaOf(ctx).cuda_stream()),
      "sgd_update kernel");
  return OkStatus();
}

KernelDef CudaDef(const char* name, int inputs, int outputs, KernelFn run, AcceptFn accepts) {
  KernelDef d;
  d.name = name;
  d.min_inputs = d.max_inputs = inputs;
  d.num_outputs = outputs;
  d.run = run;
  // Element i of every output is written after element i of every input is
  // read (by the same thread): outputs may take over dying inputs' buffers,
  // and write into the parameter and states themselves.
  d.in_place_ok = true;
  d.updates_in_place = true;
  d.device = DeviceKind::kCuda;
  d.dtypes = DTypeMask({DType::kF32, DType::kF64});
  d.accepts = accepts;
  return d;
}

}  // namespace

void RegisterCudaOptimizerKernels(KernelRegistry& r) {
  r.Add(CudaDef("adam_update", 8, 3, RunAdamUpdate, AcceptAdam));
  r.Add(CudaDef("sgd_update", 5, 2, RunSgdUpdate, AcceptSgd));
}

}  // namespace distrt
