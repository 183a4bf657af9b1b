// What the CUDA kernel families (kernels_*.cpp) share: dtype masks, the
// KernelDef they register and the common accepts checks.
#ifndef DISTRT_SRC_CUDA_KERNELS_COMMON_H_
#define DISTRT_SRC_CUDA_KERNELS_COMMON_H_

#include "kernel.h"

namespace distrt {

inline uint32_t FloatDTypes() {
  return DTypeMask({DType::kF32, DType::kF64, DType::kBF16, DType::kF16});
}
inline uint32_t IntDTypes() { return DTypeMask({DType::kI64, DType::kI32}); }
// Every dtype the host kernels know (data movement works on bytes).
inline uint32_t AllDTypes() {
  return FloatDTypes() | DTypeMask({DType::kI64, DType::kI32, DType::kI16, DType::kI8,
                                    DType::kU8, DType::kBool});
}

inline KernelDef CudaKernel(const char* name, int min_inputs, int max_inputs, KernelFn run,
                            uint32_t dtypes, AcceptFn accepts, bool in_place_ok) {
  KernelDef d;
  d.name = name;
  d.min_inputs = min_inputs;
  d.max_inputs = max_inputs;
  d.num_outputs = 1;
  d.run = run;
  d.in_place_ok = in_place_ok;
  d.device = DeviceKind::kCuda;
  d.dtypes = dtypes;
  d.accepts = accepts;
  return d;
}

// One input and one output of the same type (shape and dtype).
inline bool AcceptSameType(const VerifyContext& v) {
  return v.inputs.size() == 1 && v.outputs.size() == 1 && v.inputs[0] == v.outputs[0];
}

// Every operand and the one result of the first input's dtype.
inline bool SameDTypes(const VerifyContext& v) {
  if (v.inputs.empty() || v.outputs.size() != 1) return false;
  for (const TensorType& t : v.inputs)
    if (t.dtype != v.inputs[0].dtype) return false;
  return v.outputs[0].dtype == v.inputs[0].dtype;
}

// SameDTypes, with the first input of rank lo..hi.
inline bool SameDTypeRank(const VerifyContext& v, size_t lo, size_t hi) {
  if (!SameDTypes(v)) return false;
  const size_t r = v.inputs[0].shape.size();
  return r >= lo && r <= hi;
}

}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_KERNELS_COMMON_H_
