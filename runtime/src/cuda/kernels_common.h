// What the CUDA kernel families of kernels_{logic,arith,cast,layout,index}.cpp
// share: dtype masks and the KernelDef they register.
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

}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_KERNELS_COMMON_H_
