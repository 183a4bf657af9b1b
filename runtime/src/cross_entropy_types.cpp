#include "cross_entropy_types.h"

#include "kernel_util.h"

namespace distrt {

Status CheckCrossEntropyTypes(const std::string& op, const std::vector<TensorType>& inputs,
                              const std::vector<TensorType>& outputs, bool half_storage) {
  const bool sums = op == "cross_entropy_sums";
  const size_t want_inputs = sums ? 3 : 5, want_outputs = sums ? 2 : 1;
  if (inputs.size() != want_inputs || outputs.size() != want_outputs) {
    return InvalidArgumentError(op, " takes ", want_inputs, " inputs and ", want_outputs,
                                " outputs, got ", inputs.size(), " and ", outputs.size());
  }
  const TensorType& logits = inputs[0];
  if (logits.shape.empty()) return InvalidArgumentError(op, ": logits of rank 0 have no classes");
  const DType c = inputs[1].dtype;
  if (c != DType::kF32 && c != DType::kF64) {
    return InvalidArgumentError(op, ": the per-row values compute in f32 or f64, got ",
                                inputs[1].ToString());
  }
  auto storable = [&](DType d) {
    return d == c || (half_storage && c == DType::kF32 && (d == DType::kBF16 || d == DType::kF16));
  };
  TensorType row{c, logits.shape};
  row.shape.back() = 1;
  if (!storable(logits.dtype)) {
    return InvalidArgumentError(op, ": logits ", logits.ToString(), " cannot be read in ",
                                DTypeName(c));
  }
  for (size_t i = 1; i + 1 < inputs.size(); ++i) {
    if (inputs[i] != row) {
      return InvalidArgumentError(op, " input ", i, " is ", inputs[i].ToString(), ", expected ",
                                  row.ToString(), " (one value per row of the logits)");
    }
  }
  const TensorType& labels = inputs.back();
  if ((labels.dtype != DType::kI64 && labels.dtype != DType::kI32) || labels.shape != row.shape) {
    return InvalidArgumentError(op, ": labels are ", labels.ToString(), ", expected i64 or i32 of shape ",
                                ShapeToString(row.shape));
  }
  if (sums) {
    for (const TensorType& out : outputs) {
      if (out != row) {
        return InvalidArgumentError(op, " outputs ", out.ToString(), ", expected ",
                                    row.ToString());
      }
    }
    return OkStatus();
  }
  if (outputs[0].shape != logits.shape || !storable(outputs[0].dtype)) {
    return InvalidArgumentError(op, " outputs ", outputs[0].ToString(),
                                ", expected the logits' shape ", ShapeToString(logits.shape),
                                " in ", DTypeName(c));
  }
  return OkStatus();
}

}  // namespace distrt
