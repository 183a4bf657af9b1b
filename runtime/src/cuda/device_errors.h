// Errors that device kernels find in their data (an index out of range, an
// integer division by zero, a range whose scalars do not give its declared
// length) and that the host kernels return as a Status. A kernel cannot
// return one without synchronising the stream, so its body writes a
// harmless value and records the error in the device's ErrorSlot
// (portable/device_error.h), which lives in mapped host memory: the host
// reads it without synchronising. Every kernel of the families that use it
// (kernels_{logic,arith,cast,layout,index}.cpp) looks at the slot before it
// queues its work and fails with the recorded error, and CudaDevice's
// Synchronize (the end of every run, every copy to the host) returns it:
// the error surfaces in the run of the faulty instruction, though not at
// that instruction.
#ifndef DISTRT_SRC_CUDA_DEVICE_ERRORS_H_
#define DISTRT_SRC_CUDA_DEVICE_ERRORS_H_

#include "cuda/cuda_device.h"
#include "portable/device_error.h"

namespace distrt {

// The device-side address of `device`'s slot, made on first use.
Status DeviceErrorSlot(CudaDevice& device, portable::ErrorSlot** slot);

// The error a finished kernel recorded on `device`, as the host kernel's
// Status (OK when none), and clears the slot. Does not synchronise.
Status TakeDeviceError(CudaDevice& device);

// For a kernel's start: an earlier kernel's error, else OK with the slot
// for this kernel's body (null `slot`: only the check).
Status CheckDeviceErrors(const KernelContext& ctx, portable::ErrorSlot** slot = nullptr);

}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_DEVICE_ERRORS_H_
