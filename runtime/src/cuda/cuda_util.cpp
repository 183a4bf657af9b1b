// Device discovery and device buffers.
#include <cuda_runtime_api.h>

#include "cuda/cuda_util.h"
#include "distrt/cuda.h"

namespace distrt {

Status CudaError(cudaError_t e, const char* what) {
  return InternalError(what, " failed: ", cudaGetErrorName(e), ": ", cudaGetErrorString(e));
}

int CudaDeviceCount(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = StrCat("no CUDA device: cudaGetDeviceCount: ", cudaGetErrorString(e));
    cudaGetLastError();  // clear the sticky-free error state
    return 0;
  }
  if (n <= 0 && why) *why = "no CUDA device: cudaGetDeviceCount found none";
  return n < 0 ? 0 : n;
}

Status RequireCudaDevice(int device) {
  std::string why;
  const int n = CudaDeviceCount(&why);
  if (n == 0) return FailedPreconditionError(why);
  if (device >= n) {
    return FailedPreconditionError("CUDA device ", device, " does not exist (", n,
                                   " device(s) visible)");
  }
  return OkStatus();
}

Status DeviceBuffer::Allocate(size_t bytes, int device, cudaStream_t stream,
                              std::shared_ptr<DeviceBuffer>* out) {
  std::shared_ptr<DeviceBuffer> b(new DeviceBuffer());
  b->device_ = device;
  b->bytes_ = bytes;
  b->stream_ = stream;
  if (bytes > 0) {
    DISTRT_CUDA(cudaSetDevice(device), "cudaSetDevice");
    cudaError_t e = cudaMallocAsync(&b->ptr_, bytes, stream);
    if (e != cudaSuccess) {
      b->ptr_ = nullptr;
      return ResourceExhaustedError("cudaMallocAsync of ", bytes, " bytes on device ", device,
                                    " failed: ", cudaGetErrorString(e));
    }
  }
  *out = std::move(b);
  return OkStatus();
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) {
    int current = -1;
    cudaGetDevice(&current);
    if (current != device_) cudaSetDevice(device_);
    cudaFreeAsync(ptr_, stream_);
    if (current >= 0 && current != device_) cudaSetDevice(current);
  }
}

}  // namespace distrt
