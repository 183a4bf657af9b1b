// Internal helpers of distrt_cuda: CUDA error handling, device buffers, and
// the device-side view of the nccl communicator.
#ifndef DISTRT_SRC_CUDA_UTIL_H_
#define DISTRT_SRC_CUDA_UTIL_H_

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "distrt/communicator.h"
#include "distrt/status.h"

namespace distrt {

Status CudaError(cudaError_t e, const char* what);

#define DISTRT_CUDA(call, what)                                                  \
  do {                                                                           \
    cudaError_t distrt_cuda_rc_ = (call);                                        \
    if (distrt_cuda_rc_ != cudaSuccess) return CudaError(distrt_cuda_rc_, what); \
  } while (0)

// OK if `device` (or, for -1, any device) exists; else FAILED_PRECONDITION
// "no CUDA device: ...".
Status RequireCudaDevice(int device);

// Stream-ordered device memory (cudaMallocAsync / cudaFreeAsync on
// `stream`), freed on destruction after the work already queued on that
// stream. Never plain cudaFree: it synchronises the whole device, which
// would wait for a send that is still waiting for its receiver.
class DeviceBuffer {
 public:
  static Status Allocate(size_t bytes, int device, cudaStream_t stream,
                         std::shared_ptr<DeviceBuffer>* out);
  ~DeviceBuffer();
  void* data() const { return ptr_; }
  size_t size() const { return bytes_; }

 private:
  DeviceBuffer() = default;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

// What the host-staging adapter and CudaExecutor need from a nccl
// communicator beyond the Communicator interface.
class NcclDeviceComm : public Communicator {
 public:
  virtual int device() const = 0;
  virtual cudaStream_t stream() const = 0;
  // Waits for the communicator's stream, bounded by its timeout.
  virtual Status WaitStream(const std::string& what) = 0;
};

}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_UTIL_H_
