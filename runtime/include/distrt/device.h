// Devices: where a tensor's bytes live and where kernels run. The executor
// runs one program on one device; kernels register per (op, device kind,
// dtype) and the executor moves values between the host and the device where
// an instruction has no kernel on the device (see docs/runtime.md, "Devices").
#ifndef DISTRT_DEVICE_H_
#define DISTRT_DEVICE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "distrt/status.h"

namespace distrt {

enum class DeviceKind : int { kCpu = 0, kCuda = 1 };
const char* DeviceKindName(DeviceKind kind);  // "cpu", "cuda"

// A device as a user names it: "cpu", "cuda" (device 0), "cuda:1".
struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;
  std::string ToString() const;
};
Status ParseDeviceSpec(const std::string& text, DeviceSpec* out);

// One device's memory, copies and work queue. Work a device queues (its
// kernels, its copies) runs in the order it was queued; the host waits for
// it only where a method says so. A Device outlives every buffer allocated
// on it (buffers hold it by shared_ptr).
class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual int index() const { return 0; }
  std::string name() const;  // "cpu", "cuda:0"

  // Raw memory, aligned to at least 64 bytes; null when out of memory.
  // Free may be called with work that reads the block still queued: the
  // block is reused only after that work.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* p) = 0;
  // Zero-fills, queued.
  virtual Status Zero(void* p, size_t bytes) = 0;

  // Copies, queued after the work already queued. CopyToHost returns once
  // the bytes are on the host; the others may return before the copy ran
  // (the source must stay valid until then, which holds for buffers freed
  // through Free).
  virtual Status CopyFromHost(void* dst, const void* src, size_t bytes) = 0;
  virtual Status CopyToHost(void* dst, const void* src, size_t bytes) = 0;
  virtual Status CopyWithin(void* dst, const void* src, size_t bytes) = 0;
  // `rows` rows of `width` bytes within this device, row r from src + r *
  // src_pitch to dst + r * dst_pitch (pieces of a tensor along one dim).
  virtual Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                        size_t width, size_t rows) = 0;
  // Waits for everything queued so far.
  virtual Status Synchronize() = 0;

  // The queue kernels launch on (a cudaStream_t), null for the CPU.
  virtual void* stream() const { return nullptr; }
  // Free memory the device reports (bytes), -1 if unknown.
  virtual int64_t FreeMemory() const { return -1; }
  // Readies `bytes` for the coming allocations at once (a GPU's pool grows
  // to it here instead of during the first run); nothing on the host.
  virtual Status Reserve(size_t bytes) { return OkStatus(); }
  // "NVIDIA H200, 132 SMs, 139.8 GiB", or the CPU's model name.
  virtual std::string Description() const { return name(); }
};

// The host: plain aligned memory, memcpy, nothing queued. One per process.
const std::shared_ptr<Device>& CpuDevice();

}  // namespace distrt

#endif  // DISTRT_DEVICE_H_
