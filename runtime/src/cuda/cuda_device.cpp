#include "cuda/cuda_device.h"

#include <mutex>
#include <thread>

#include "cuda/cuda_util.h"
#include "cuda/device_errors.h"

namespace distrt {

namespace {

// cuBLASLt's scratch for split-K and its other algorithms; 32 MiB is what
// NVIDIA recommends for Hopper.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

}  // namespace

Status CudaDevice::Open(int index, const CudaDeviceOptions& options,
                        std::shared_ptr<Device>* out) {
  DISTRT_RETURN_IF_ERROR(RequireCudaDevice(index));
  if (index < 0) return InvalidArgumentError("CUDA device index ", index, " is negative");
  static std::once_flag registered;
  std::call_once(registered, [] { RegisterCudaKernels(KernelRegistry::Get()); });
  std::shared_ptr<CudaDevice> d(new CudaDevice());
  d->index_ = index;
  d->timeout_ = options.timeout;
  DISTRT_CUDA(cudaSetDevice(index), "cudaSetDevice");
  cudaDeviceProp prop;
  DISTRT_CUDA(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
  d->sm_version_ = prop.major * 10 + prop.minor;
  DISTRT_CUDA(cudaStreamCreateWithFlags(&d->stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  // Freed blocks stay with the pool instead of going back to the driver:
  // the allocator caches, runs after the first allocate nothing new.
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, index) == cudaSuccess) {
    uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  }
  if (cublasLtCreate(&d->lt_) != CUBLAS_STATUS_SUCCESS) {
    return InternalError("cublasLtCreate failed on CUDA device ", index);
  }
  DISTRT_CUDA(cudaMalloc(&d->workspace_, kWorkspaceBytes), "cudaMalloc (cuBLASLt workspace)");
  d->workspace_bytes_ = kWorkspaceBytes;
  *out = std::move(d);
  return OkStatus();
}

CudaDevice::~CudaDevice() {
  cudaSetDevice(index_);
  if (stream_) cudaStreamSynchronize(stream_);
  states_ = KernelStates();  // GEMM plans before the cuBLASLt handle
  if (workspace_) cudaFree(workspace_);
  if (lt_) cublasLtDestroy(lt_);
  if (stream_) cudaStreamDestroy(stream_);
}

Status CudaDevice::Activate() const {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == index_) return OkStatus();
  DISTRT_CUDA(cudaSetDevice(index_), "cudaSetDevice");
  return OkStatus();
}

void* CudaDevice::Allocate(size_t bytes) {
  if (!Activate().ok()) return nullptr;
  void* p = nullptr;
  if (cudaMallocAsync(&p, bytes, stream_) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return nullptr;
  }
  return p;
}

void CudaDevice::Free(void* p) {
  if (p == nullptr) return;
  Status active = Activate();
  (void)active;  // nothing to report from a free
  cudaFreeAsync(p, stream_);
}

Status CudaDevice::Zero(void* p, size_t bytes) {
  DISTRT_RETURN_IF_ERROR(Activate());
  DISTRT_CUDA(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemsetAsync");
  return OkStatus();
}

Status CudaDevice::CopyFromHost(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return OkStatus();
  DISTRT_RETURN_IF_ERROR(Activate());
  DISTRT_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync (to the device)");
  return OkStatus();
}

Status CudaDevice::CopyToHost(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return OkStatus();
  DISTRT_RETURN_IF_ERROR(Activate());
  DISTRT_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (to the host)");
  return Synchronize();
}

Status CudaDevice::CopyWithin(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return OkStatus();
  DISTRT_RETURN_IF_ERROR(Activate());
  DISTRT_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_),
              "cudaMemcpyAsync (on the device)");
  return OkStatus();
}

Status CudaDevice::Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                          size_t width, size_t rows) {
  if (width == 0 || rows == 0) return OkStatus();
  DISTRT_RETURN_IF_ERROR(Activate());
  DISTRT_CUDA(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows,
                                cudaMemcpyDeviceToDevice, stream_),
              "cudaMemcpy2DAsync");
  return OkStatus();
}

// Polls instead of cudaStreamSynchronize, so that a kernel or collective
// that never finishes (a peer that died) becomes an error after the timeout.
Status CudaDevice::Synchronize() {
  DISTRT_RETURN_IF_ERROR(Activate());
  const auto start = std::chrono::steady_clock::now();
  for (int spins = 0;; ++spins) {
    const cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaSuccess) return TakeDeviceError(*this);  // what kernels found in their data
    if (e != cudaErrorNotReady) return CudaError(e, "waiting for the CUDA stream");
    const auto waited = std::chrono::steady_clock::now() - start;
    if (timeout_.count() > 0 && waited > timeout_) {
      return DeadlineExceededError(name(), ": queued work did not finish in ",
                                   std::chrono::duration<double>(timeout_).count(), " s");
    }
    if (spins > 1000) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    } else {
      std::this_thread::yield();
    }
  }
}

int64_t CudaDevice::FreeMemory() const {
  if (!Activate().ok()) return -1;
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return -1;
  return static_cast<int64_t>(free_bytes);
}

// One allocation of the whole size, given back at once: the pool (whose
// release threshold keeps freed memory) holds it for the run's buffers.
Status CudaDevice::Reserve(size_t bytes) {
  if (bytes == 0) return OkStatus();
  DISTRT_RETURN_IF_ERROR(Activate());
  void* p = nullptr;
  if (cudaMallocAsync(&p, bytes, stream_) != cudaSuccess) {
    cudaGetLastError();
    return ResourceExhaustedError(name(), ": cannot reserve ", bytes >> 20,
                                  " MiB for the runs' buffers");
  }
  DISTRT_CUDA(cudaFreeAsync(p, stream_), "cudaFreeAsync");
  return Synchronize();
}

std::string CudaDevice::Description() const {
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, index_) != cudaSuccess) return name();
  return StrCat(prop.name, ", sm_", prop.major, prop.minor, ", ", prop.multiProcessorCount,
                " SMs, ", static_cast<double>(prop.totalGlobalMem) / (1 << 30), " GiB");
}

Status OpenCudaDevice(int index, std::shared_ptr<Device>* out, const CudaDeviceOptions& options) {
  return CudaDevice::Open(index, options, out);
}

void RegisterCudaKernels(KernelRegistry& r) {
  RegisterCudaElementwiseKernels(r);
  RegisterCudaMatmulKernels(r);
  RegisterCudaReduceKernels(r);
  RegisterCudaNormKernels(r);
  RegisterCudaOptimizerKernels(r);
  RegisterCudaLogicKernels(r);
  RegisterCudaArithKernels(r);
  RegisterCudaCastKernels(r);
  RegisterCudaLayoutKernels(r);
  RegisterCudaIndexKernels(r);
  RegisterCudaConvKernels(r);
  RegisterCudaPoolKernels(r);
  RegisterCudaCumSumKernels(r);
  RegisterCudaTopKKernels(r);
  RegisterCudaElementsKernels(r);
  RegisterCudaEinsumKernels(r);
}

}  // namespace distrt
