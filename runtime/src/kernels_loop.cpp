// Gradient accumulation's loop: `microbatch_loop` ... `microbatch_yield` run
// the instructions between them once per microbatch (a pipeline stage's in
// the order of its schedule, cut by `microbatch_action` markers:
// scheduled_loop.h). The executor runs these instructions itself (they move values, compute nothing); the kernels
// here check their types when a program is loaded.

#include "kernel.h"
#include "kernel_util.h"

namespace distrt {
namespace {

Status RunByExecutor(KernelContext& ctx) {
  return InternalError(ctx.inst->op(), " is run by the executor, not as a kernel");
}

// Outputs: the microbatch index (an i64 scalar), then one running sum per
// value the loop accumulates.
Status VerifyLoop(const VerifyContext& ctx) {
  int64_t microbatches = 0;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("microbatches", &microbatches));
  if (microbatches < 1) return InvalidArgumentError("microbatches ", microbatches, " must be >= 1");
  if (ctx.outputs.empty() || ctx.outputs[0].dtype != DType::kI64 || !ctx.outputs[0].shape.empty()) {
    return InvalidArgumentError("output 0 must be the microbatch index, an i64 scalar");
  }
  return OkStatus();
}

// Inputs: the index, then one candidate per microbatch, each of the
// output's type.
Status VerifySelect(const VerifyContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kI64 || !ctx.inputs[0].shape.empty())
    return InvalidArgumentError("input 0 must be the microbatch index, an i64 scalar");
  for (size_t k = 1; k < ctx.inputs.size(); ++k)
    if (ctx.inputs[k] != ctx.outputs[0])
      return InvalidArgumentError("candidate ", k - 1, " is ", ctx.inputs[k].ToString(),
                                  ", the output ", ctx.outputs[0].ToString());
  return OkStatus();
}

// Inputs: the running sums after this microbatch; outputs: the sums after
// the last one, of the same types.
Status VerifyYield(const VerifyContext& ctx) {
  int64_t loop = 0;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("loop", &loop));
  if (ctx.inputs.size() != ctx.outputs.size())
    return InvalidArgumentError(ctx.inputs.size(), " inputs for ", ctx.outputs.size(), " outputs");
  for (size_t k = 0; k < ctx.inputs.size(); ++k)
    if (ctx.inputs[k] != ctx.outputs[k])
      return InvalidArgumentError("input ", k, " is ", ctx.inputs[k].ToString(), ", output ", k,
                                  " ", ctx.outputs[k].ToString());
  return OkStatus();
}

// A pipeline stage's action marker: which pass of which chunk starts here.
Status VerifyAction(const VerifyContext& ctx) {
  int64_t pass = 0, chunk = 0;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("pass", &pass));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("chunk", &chunk));
  return OkStatus();
}

}  // namespace

void RegisterLoopKernels(KernelRegistry& r) {
  for (DeviceKind device : {DeviceKind::kCpu, DeviceKind::kCuda}) {
    KernelDef loop{"microbatch_loop", 0, 0, -1, RunByExecutor, VerifyLoop};
    KernelDef select{"microbatch_select", 2, -1, 1, RunByExecutor, VerifySelect};
    KernelDef yield{"microbatch_yield", 0, -1, -1, RunByExecutor, VerifyYield};
    KernelDef action{"microbatch_action", 0, 0, 0, RunByExecutor, VerifyAction};
    for (KernelDef* def : {&loop, &select, &yield, &action}) {
      def->device = device;
      def->half_native = true;  // the executor only moves values
      r.Add(*def);
    }
  }
}

}  // namespace distrt
