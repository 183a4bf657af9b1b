// Tensor: a dense, row-major, contiguous tensor in one device's memory (the
// host's unless allocated on another device).
#ifndef DISTRT_TENSOR_H_
#define DISTRT_TENSOR_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "distrt/device.h"
#include "distrt/dtype.h"
#include "distrt/status.h"

namespace distrt {

using Shape = std::vector<int64_t>;

// Product of the dims (1 for rank 0). Returns -1 if a dim is negative or the
// product overflows int64.
int64_t NumElements(const Shape& shape);
// "[2, 3, 4]"
std::string ShapeToString(const Shape& shape);

struct TensorType {
  DType dtype = DType::kUnspecified;
  Shape shape;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
  std::string ToString() const;  // "f32[2, 3]"
};

// Counts bytes of buffers allocated through it: current and peak. Shared by
// the buffers it allocated, so it outlives tensors returned to a caller.
class MemoryTracker {
 public:
  MemoryTracker();
  void Add(int64_t bytes);
  void Remove(int64_t bytes) { current_.fetch_sub(bytes, std::memory_order_relaxed); }
  int64_t current() const { return current_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // Restarts peak tracking from the current value.
  void ResetPeak() { peak_.store(current(), std::memory_order_relaxed); }

  // Keeps the memory of freed buffers for later allocations of the same
  // size on the same device instead of returning it: an executor's runs
  // allocate the same sizes in the same order, so from the second run on no
  // buffer costs a fresh mapping and its page faults (host) or an allocator
  // call (device). Kept memory is counted by cached_bytes(), not by
  // current() or peak(); it is freed with the tracker.
  void EnableReuse();
  int64_t cached_bytes() const;
  ~MemoryTracker();

  // For Buffer: a kept block of exactly `bytes` (rounded) bytes, or null.
  void* TakeCached(Device* device, size_t bytes);
  // For Buffer: keeps `p` if reuse is on (true), else the caller frees it.
  bool Keep(const std::shared_ptr<Device>& device, void* p, size_t bytes);

 private:
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

// An aligned (64-byte) allocation in one device's memory, optionally
// counted by a tracker.
class Buffer {
 public:
  // On the host. `zero`: clear the bytes (callers that overwrite every byte
  // may skip it).
  static Status Allocate(size_t bytes, std::shared_ptr<MemoryTracker> tracker,
                         std::shared_ptr<Buffer>* out, bool zero = true);
  // On `device` (the host when null).
  static Status AllocateOn(const std::shared_ptr<Device>& device, size_t bytes,
                           std::shared_ptr<MemoryTracker> tracker, std::shared_ptr<Buffer>* out,
                           bool zero = true);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  Device* device() const { return device_.get(); }
  const std::shared_ptr<Device>& shared_device() const { return device_; }
  // Exchanges the bytes of two buffers of equal size on one device (each
  // keeps its tracker): how a run's new value of a weight replaces the
  // weight's bytes without a copy. False, and nothing changes, when the
  // sizes or devices differ.
  bool SwapData(Buffer& other);
  // Frees the bytes and keeps the (now empty) buffer: a constant weight
  // whose every reader works from a packed copy of it, so that only the
  // copy stays in memory. data() is null afterwards.
  void ReleaseData();

 private:
  Buffer() = default;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;  // size_ rounded up to the alignment
  std::shared_ptr<MemoryTracker> tracker_;
  std::shared_ptr<Device> device_;
};

// A tensor value. Copying a Tensor shares its buffer (like a shared_ptr);
// use Clone() for a deep copy. Several tensors may view one buffer with
// different shapes (reshape is free). Element access (data<T>() as host
// memory, ToVector, Equals, DebugString) is for tensors on the host;
// CopyTo moves a tensor between devices.
class Tensor {
 public:
  Tensor() = default;

  // Zero-initialised tensor on the host. `tracker` may be null.
  static Status Allocate(DType dtype, const Shape& shape, Tensor* out,
                         std::shared_ptr<MemoryTracker> tracker = nullptr, bool zero = true);
  // The same on `device` (the host when null).
  static Status AllocateOn(const std::shared_ptr<Device>& device, DType dtype, const Shape& shape,
                           Tensor* out, std::shared_ptr<MemoryTracker> tracker = nullptr,
                           bool zero = true);
  static StatusOr<Tensor> Make(DType dtype, const Shape& shape);
  // A tensor with the given elements (row-major). Fails if the count differs.
  template <typename T>
  static StatusOr<Tensor> FromVector(const Shape& shape, const std::vector<T>& values);
  template <typename T>
  static Tensor Scalar(T value);
  // Wraps raw bytes (copied).
  static Status FromBytes(DType dtype, const Shape& shape, const void* data, size_t bytes,
                          Tensor* out);

  bool defined() const { return buffer_ != nullptr; }
  // Where the bytes live (the host for an undefined tensor).
  Device* device() const { return buffer_ ? buffer_->device() : CpuDevice().get(); }
  bool on_host() const { return device()->kind() == DeviceKind::kCpu; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  const TensorType& type() const { return type_; }
  int rank() const { return static_cast<int>(type_.shape.size()); }
  int64_t dim(int i) const { return type_.shape[static_cast<size_t>(i)]; }
  int64_t num_elements() const { return NumElements(type_.shape); }
  size_t byte_size() const { return static_cast<size_t>(num_elements()) * DTypeSize(type_.dtype); }

  void* raw() { return buffer_ ? buffer_->data() : nullptr; }
  const void* raw() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(raw());
  }

  // Same buffer, new shape with the same element count.
  Status Reshaped(const Shape& shape, Tensor* out) const;
  // A deep copy on the same device (undefined if allocation fails).
  Tensor Clone() const;
  // A copy on `device` (the host when null), counted by `tracker`; for a
  // device tensor copied to the host this waits for the device.
  Status CopyTo(const std::shared_ptr<Device>& device, Tensor* out,
                std::shared_ptr<MemoryTracker> tracker = nullptr) const;
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  // Copies the elements out as T (T must match dtype and the tensor be on
  // the host, else empty vector).
  template <typename T>
  std::vector<T> ToVector() const;

  // Bytewise equality of dtype, shape and contents.
  bool Equals(const Tensor& other) const;
  // "f32[2, 2] {1, 2, 3, 4}" (first elements only for big tensors).
  std::string DebugString(int max_elements = 16) const;

 private:
  TensorType type_;
  std::shared_ptr<Buffer> buffer_;
};

template <typename T>
StatusOr<Tensor> Tensor::FromVector(const Shape& shape, const std::vector<T>& values) {
  int64_t n = NumElements(shape);
  if (n < 0 || static_cast<size_t>(n) != values.size()) {
    return InvalidArgumentError("FromVector: shape ", ShapeToString(shape), " needs ", n,
                                " elements, got ", values.size());
  }
  Tensor t;
  DISTRT_RETURN_IF_ERROR(Allocate(DTypeOf<T>::value, shape, &t));
  T* d = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) d[i] = values[i];
  return t;
}

template <typename T>
Tensor Tensor::Scalar(T value) {
  Tensor t;
  if (Allocate(DTypeOf<T>::value, {}, &t).ok()) *t.data<T>() = value;
  return t;
}

template <typename T>
std::vector<T> Tensor::ToVector() const {
  if (DTypeOf<T>::value != dtype() || !defined() || !on_host()) return {};
  const T* d = data<T>();
  return std::vector<T>(d, d + num_elements());
}

}  // namespace distrt

#endif  // DISTRT_TENSOR_H_
