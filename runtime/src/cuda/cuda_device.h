// CudaDevice: one GPU as a distrt Device, with its own stream (so ranks
// sharing a GPU queue independently), a cuBLASLt handle and workspace for
// the GEMMs, and stream-ordered memory.
#ifndef DISTRT_SRC_CUDA_CUDA_DEVICE_H_
#define DISTRT_SRC_CUDA_CUDA_DEVICE_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>

#include "distrt/cuda.h"
#include "distrt/device.h"
#include "kernel.h"

namespace distrt {

class CudaDevice : public Device {
 public:
  static Status Open(int index, const CudaDeviceOptions& options, std::shared_ptr<Device>* out);
  ~CudaDevice() override;

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  int index() const override { return index_; }
  void* Allocate(size_t bytes) override;
  void Free(void* p) override;
  Status Zero(void* p, size_t bytes) override;
  Status CopyFromHost(void* dst, const void* src, size_t bytes) override;
  Status CopyToHost(void* dst, const void* src, size_t bytes) override;
  Status CopyWithin(void* dst, const void* src, size_t bytes) override;
  Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                size_t rows) override;
  Status Synchronize() override;
  void* stream() const override { return stream_; }
  int64_t FreeMemory() const override;
  Status Reserve(size_t bytes) override;
  std::string Description() const override;

  cudaStream_t cuda_stream() const { return stream_; }
  // Makes this device the calling thread's current one (cheap when it is).
  Status Activate() const;
  cublasLtHandle_t lt() const { return lt_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  int sm_version() const { return sm_version_; }  // 90 for sm_90
  // What kernels keep per device (GEMM plans), by key. A device serves one
  // executor thread at a time.
  KernelStates& states() { return states_; }

 private:
  CudaDevice() = default;
  int index_ = 0;
  int sm_version_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::chrono::milliseconds timeout_{0};
  KernelStates states_;
};

// The CUDA device a device kernel runs on; the executor hands device
// kernels only contexts on a CudaDevice.
inline CudaDevice& CudaOf(const KernelContext& ctx) {
  return static_cast<CudaDevice&>(*ctx.device);
}

// Every CUDA kernel family, added to the registry once, when the first
// CUDA device is opened.
void RegisterCudaKernels(KernelRegistry& r);
void RegisterCudaElementwiseKernels(KernelRegistry& r);
void RegisterCudaMatmulKernels(KernelRegistry& r);
void RegisterCudaReduceKernels(KernelRegistry& r);
void RegisterCudaNormKernels(KernelRegistry& r);
void RegisterCudaOptimizerKernels(KernelRegistry& r);
void RegisterCudaLogicKernels(KernelRegistry& r);
void RegisterCudaArithKernels(KernelRegistry& r);
void RegisterCudaCastKernels(KernelRegistry& r);
void RegisterCudaLayoutKernels(KernelRegistry& r);
void RegisterCudaIndexKernels(KernelRegistry& r);
void RegisterCudaConvKernels(KernelRegistry& r);
void RegisterCudaPoolKernels(KernelRegistry& r);
void RegisterCudaCumSumKernels(KernelRegistry& r);
void RegisterCudaTopKKernels(KernelRegistry& r);
void RegisterCudaElementsKernels(KernelRegistry& r);
void RegisterCudaEinsumKernels(KernelRegistry& r);

}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_CUDA_DEVICE_H_
