// How softmax and softmax_grad read attention's scale and mask (the fused
// forms of dist-fuse-for-target: nn.fused_softmax, nn.fused_softmax_grad):
// the attributes `scale` (with `divide` = 1 a divisor), `fill` (softmax
// only, required with a mask) and `mask_keeps`, and the mask, the input
// after the tensors the op reads. One copy for the host and the device
// kernels, so that both accept the same programs and name the same errors;
// the semantics are portable::ScaleAndMask's (portable/norm.h).
#ifndef DISTRT_SRC_SCALE_AND_MASK_H_
#define DISTRT_SRC_SCALE_AND_MASK_H_

#include <string>

#include "kernel_util.h"
#include "portable/norm.h"

namespace distrt {

// Whether `mask` broadcasts over `x`'s leading dims only: its dims are x's
// trailing dims after leading 1s, so that x's element e reads element
// e mod size(mask).
inline bool IsTrailingBroadcast(const Shape& mask, const Shape& x) {
  if (mask.size() > x.size()) return false;
  size_t lead = 0;
  while (lead < mask.size() && mask[lead] == 1) ++lead;
  for (size_t i = lead; i < mask.size(); ++i) {
    if (mask[i] != x[x.size() - mask.size() + i]) return false;
  }
  return true;
}

// The load-time check of a mask input (`inputs` holds it at `mask_input`
// when present) against x.
inline Status CheckScaleMaskInput(const std::string& op, const std::vector<TensorType>& inputs,
                                  size_t mask_input, const Shape& x) {
  if (inputs.size() <= mask_input) return OkStatus();
  const TensorType& mask = inputs[mask_input];
  if (mask.dtype != DType::kBool || !IsTrailingBroadcast(mask.shape, x)) {
    return InvalidArgumentError(op, ": the mask is ", mask.ToString(), " for an input of shape ",
                                ShapeToString(x),
                                "; it must be bool of the input's trailing dims after leading 1s");
  }
  return OkStatus();
}

// The scale and mask an instruction asks for, in compute type C.
template <typename C>
Status ReadScaleAndMask(const KernelContext& ctx, int mask_input, const Shape& x, bool forward,
                        portable::ScaleAndMask<C>* out) {
  const std::string& op = ctx.inst->op();
  const AttrReader attrs = ctx.attrs();
  portable::ScaleAndMask<C> s;
  int64_t divide = 0, keeps = 0;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("divide", 0, &divide));
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("mask_keeps", 0, &keeps));
  if (attrs.Has("scale")) {
    double scale;
    DISTRT_RETURN_IF_ERROR(attrs.GetFloat("scale", &scale));
    s.scaled = true;
    s.scale = static_cast<C>(scale);
  } else if (divide != 0) {
    return InvalidArgumentError(op, ": `divide` without a `scale`");
  }
  s.divide = divide != 0;
  s.keeps = keeps != 0;
  if (ctx.num_inputs() > mask_input) {
    const Tensor& mask = ctx.input(mask_input);
    std::vector<TensorType> types(static_cast<size_t>(mask_input));
    types.push_back(mask.type());
    DISTRT_RETURN_IF_ERROR(CheckScaleMaskInput(op, types, static_cast<size_t>(mask_input), x));
    s.mask = mask.data<bool>();
    s.mask_size = mask.num_elements();
    if (forward) {
      double fill;
      if (!attrs.Has("fill")) return InvalidArgumentError(op, ": a mask needs a `fill` value");
      DISTRT_RETURN_IF_ERROR(attrs.GetFloat("fill", &fill));
      s.fill = static_cast<C>(fill);
    }
  } else if (keeps != 0) {
    return InvalidArgumentError(op, ": `mask_keeps` without a mask input");
  }
  *out = s;
  return OkStatus();
}

}  // namespace distrt

#endif  // DISTRT_SRC_SCALE_AND_MASK_H_
