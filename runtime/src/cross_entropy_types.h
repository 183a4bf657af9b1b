// The operand types of cross-entropy's two fused instructions, one copy for
// the host and the device kernels:
//   cross_entropy_sums  (logits, max, labels) -> (sum_exp, label_logit)
//   cross_entropy_grad  (logits, max, scale, weight, labels) -> dx
// logits [..., n]; max, scale, weight, sum_exp and label_logit one value per
// row ([..., 1]) in the compute type (f32 or f64); labels i64 or i32 of that
// shape; dx the logits' shape. Logits and dx are in the compute type or,
// when it is f32 and the kernel reads them as stored, bf16 or f16.
#ifndef DISTRT_SRC_CROSS_ENTROPY_TYPES_H_
#define DISTRT_SRC_CROSS_ENTROPY_TYPES_H_

#include <string>
#include <vector>

#include "kernel.h"

namespace distrt {

// OK when `inputs` and `outputs` are such operands of `op`; 16-bit float
// logits and dx only with `half_storage`.
Status CheckCrossEntropyTypes(const std::string& op, const std::vector<TensorType>& inputs,
                              const std::vector<TensorType>& outputs, bool half_storage);

}  // namespace distrt

#endif  // DISTRT_SRC_CROSS_ENTROPY_TYPES_H_
