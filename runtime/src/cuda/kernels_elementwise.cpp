// CUDA kernels for element-wise ops: unary math, gelu, leaky_relu, gelu's
// gradient, and broadcasting binary arithmetic, on f32, f64, bf16 and f16.
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/kernels_common.h"
#include "cuda/elementwise.h"

namespace distrt {
namespace {

using portable::BinaryOp;
using portable::UnaryOp;


struct UnaryName {
  const char* name;
  UnaryOp op;
};
const UnaryName kUnary[] = {
    {"neg", UnaryOp::kNeg},     {"abs", UnaryOp::kAbs},
    {"exp", UnaryOp::kExp},     {"log", UnaryOp::kLog},
    {"sqrt", UnaryOp::kSqrt},   {"reciprocal", UnaryOp::kReciprocal},
    {"tanh", UnaryOp::kTanh},   {"sigmoid", UnaryOp::kSigmoid},
    {"erf", UnaryOp::kErf},     {"relu", UnaryOp::kRelu},
    {"sin", UnaryOp::kSin},     {"cos", UnaryOp::kCos},
    {"floor", UnaryOp::kFloor}, {"ceil", UnaryOp::kCeil},
    {"round", UnaryOp::kRound}, {"sign", UnaryOp::kSign},
};

struct BinaryName {
  const char* name;
  BinaryOp op;
};
const BinaryName kBinary[] = {
    {"add", BinaryOp::kAdd}, {"sub", BinaryOp::kSub}, {"mul", BinaryOp::kMul},
    {"div", BinaryOp::kDiv}, {"pow", BinaryOp::kPow}, {"max", BinaryOp::kMax},
    {"min", BinaryOp::kMin},
};

Status UnaryOpOf(const proto::Instruction& inst, UnaryOp* op, double* alpha) {
  const std::string& name = inst.op();
  AttrReader attrs(inst);
  *alpha = 0;
  if (name == "gelu") {
    std::string approx;
    DISTRT_RETURN_IF_ERROR(attrs.GetString("approximate", "none", &approx));
    if (approx != "none" && approx != "tanh")
      return InvalidArgumentError("gelu: approximate must be 'none' or 'tanh', got '", approx, "'");
    *op = approx == "none" ? UnaryOp::kGeluErf : UnaryOp::kGeluTanh;
    return OkStatus();
  }
  if (name == "leaky_relu") {
    *op = UnaryOp::kLeakyRelu;
    return attrs.GetFloat("alpha", 0.01, alpha);
  }
  for (const UnaryName& u : kUnary) {
    if (name == u.name) {
      *op = u.op;
      return OkStatus();
    }
  }
  return InternalError("no CUDA unary kernel for '", name, "'");
}

BinaryOp BinaryOpOf(const std::string& name) {
  for (const BinaryName& b : kBinary)
    if (name == b.name) return b.op;
  return BinaryOp::kAdd;
}

Status RunUnary(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  UnaryOp op;
  double alpha;
  DISTRT_RETURN_IF_ERROR(UnaryOpOf(*ctx.inst, &op, &alpha));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchUnary(x.dtype(), op, x.raw(), y->raw(), x.num_elements(), alpha,
                                CudaOf(ctx).cuda_stream()),
              "unary kernel");
  return OkStatus();
}

// Same dtypes, shapes that broadcast to the output's, at most kMaxDims dims.
bool AcceptBinary(const VerifyContext& v) {
  if (v.inputs.size() != 2 || v.outputs.size() != 1) return false;
  if (v.inputs[0].dtype != v.inputs[1].dtype || v.inputs[0].dtype != v.outputs[0].dtype)
    return false;
  portable::BroadcastMap map;
  return portable::MakeBroadcastMap({v.inputs[0].shape, v.inputs[1].shape}, v.outputs[0].shape,
                                    &map);
}

Status RunBinary(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const TensorType& out = ctx.output_types[0];
  portable::BroadcastMap map;
  if (!portable::MakeBroadcastMap({a.shape(), b.shape()}, out.shape, &map)) {
    return InvalidArgumentError("shapes ", ShapeToString(a.shape()), " and ",
                                ShapeToString(b.shape()), " do not broadcast to ",
                                ShapeToString(out.shape));
  }
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchBinary(a.dtype(), BinaryOpOf(ctx.inst->op()), a.raw(), b.raw(), y->raw(),
                                 y->num_elements(), map, CudaOf(ctx).cuda_stream()),
              "binary kernel");
  return OkStatus();
}

// gelu_grad: x, dy and dx of one type (other operands run on the host,
// whose verifier names the mismatch).
bool AcceptGeluGrad(const VerifyContext& v) {
  return v.inputs.size() == 2 && v.outputs.size() == 1 && v.inputs[0] == v.inputs[1] &&
         v.outputs[0] == v.inputs[0];
}

Status RunGeluGrad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& dy = ctx.input(1);
  Tensor* dx;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &dx));
  DISTRT_CUDA(cuda::LaunchGeluGrad(x.dtype(), x.raw(), dy.raw(), dx->raw(), x.num_elements(),
                                   CudaOf(ctx).cuda_stream()),
              "gelu_grad kernel");
  return OkStatus();
}

KernelDef CudaDef(const char* name, int inputs, KernelFn run, AcceptFn accepts) {
  // in place: each thread reads its elements before it writes
  return CudaKernel(name, inputs, inputs, run, FloatDTypes(), accepts, true);
}

}  // namespace

void RegisterCudaElementwiseKernels(KernelRegistry& r) {
  for (const UnaryName& u : kUnary) r.Add(CudaDef(u.name, 1, RunUnary, AcceptSameType));
  r.Add(CudaDef("gelu", 1, RunUnary, AcceptSameType));
  r.Add(CudaDef("leaky_relu", 1, RunUnary, AcceptSameType));
  r.Add(CudaDef("gelu_grad", 2, RunGeluGrad, AcceptGeluGrad));
  for (const BinaryName& b : kBinary) r.Add(CudaDef(b.name, 2, RunBinary, AcceptBinary));
}

}  // namespace distrt
