// HostTensor: a dense, row-major, contiguous tensor in host memory.
#ifndef DISTRT_TENSOR_H_
#define DISTRT_TENSOR_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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
  // size instead of returning it to the system. An executor's runs allocate
  // the same sizes in the same order, so from the second run on no buffer
  // costs a fresh mapping and its page faults. Kept memory is counted by
  // cached_bytes(), not by current() or peak(); it is freed with the
  // tracker.
  void EnableReuse();
  int64_t cached_bytes() const;
  ~MemoryTracker();

  // For Buffer: a kept block of exactly `bytes` (rounded) bytes, or null.
  void* TakeCached(size_t bytes);
  // For Buffer: keeps `p` if reuse is on (true), else the caller frees it.
  bool Keep(void* p, size_t bytes);

 private:
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

// An aligned (64-byte) heap allocation, optionally counted by a tracker.
class Buffer {
 public:
  // `zero`: clear the bytes (callers that overwrite every byte may skip it).
  static Status Allocate(size_t bytes, std::shared_ptr<MemoryTracker> tracker,
                         std::shared_ptr<Buffer>* out, bool zero = true);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Exchanges the bytes of two buffers of equal size (each keeps its
  // tracker): how a run's new value of a weight replaces the weight's bytes
  // without a copy. False, and nothing changes, when the sizes differ.
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
};

// A tensor value. Copying a HostTensor shares its buffer (like a shared_ptr);
// use Clone() for a deep copy. Several tensors may view one buffer with
// different shapes (reshape is free).
class HostTensor {
 public:
  HostTensor() = default;

  // Zero-initialised tensor. `tracker` may be null.
  static Status Allocate(DType dtype, const Shape& shape, HostTensor* out,
                         std::shared_ptr<MemoryTracker> tracker = nullptr, bool zero = true);
  static StatusOr<HostTensor> Make(DType dtype, const Shape& shape);
  // A tensor with the given elements (row-major). Fails if the count differs.
  template <typename T>
  static StatusOr<HostTensor> FromVector(const Shape& shape, const std::vector<T>& values);
  template <typename T>
  static HostTensor Scalar(T value);
  // Wraps raw bytes (copied).
  static Status FromBytes(DType dtype, const Shape& shape, const void* data, size_t bytes,
                          HostTensor* out);

  bool defined() const { return buffer_ != nullptr; }
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
  Status Reshaped(const Shape& shape, HostTensor* out) const;
  HostTensor Clone() const;
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  // Copies the elements out as T (T must match dtype, else empty vector).
  template <typename T>
  std::vector<T> ToVector() const;

  // Bytewise equality of dtype, shape and contents.
  bool Equals(const HostTensor& other) const;
  // "f32[2, 2] {1, 2, 3, 4}" (first elements only for big tensors).
  std::string DebugString(int max_elements = 16) const;

 private:
  TensorType type_;
  std::shared_ptr<Buffer> buffer_;
};

template <typename T>
StatusOr<HostTensor> HostTensor::FromVector(const Shape& shape, const std::vector<T>& values) {
  int64_t n = NumElements(shape);
  if (n < 0 || static_cast<size_t>(n) != values.size()) {
    return InvalidArgumentError("FromVector: shape ", ShapeToString(shape), " needs ", n,
                                " elements, got ", values.size());
  }
  HostTensor t;
  DISTRT_RETURN_IF_ERROR(Allocate(DTypeOf<T>::value, shape, &t));
  T* d = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) d[i] = values[i];
  return t;
}

template <typename T>
HostTensor HostTensor::Scalar(T value) {
  HostTensor t;
  if (Allocate(DTypeOf<T>::value, {}, &t).ok()) *t.data<T>() = value;
  return t;
}

template <typename T>
std::vector<T> HostTensor::ToVector() const {
  if (DTypeOf<T>::value != dtype() || !defined()) return {};
  const T* d = data<T>();
  return std::vector<T>(d, d + num_elements());
}

}  // namespace distrt

#endif  // DISTRT_TENSOR_H_
