#include "distrt/tensor.h"

#include <cstdlib>
#include <limits>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace distrt {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

std::string ShapeToString(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

std::string TensorType::ToString() const { return DTypeName(dtype) + ShapeToString(shape); }

void MemoryTracker::Add(int64_t bytes) {
  int64_t now = current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t prev = peak_.load(std::memory_order_relaxed);
  while (now > prev && !peak_.compare_exchange_weak(prev, now, std::memory_order_relaxed)) {
  }
}

struct MemoryTracker::Cache {
  std::mutex mu;
  // Kept blocks by rounded size, with the device each lives on (a tracker
  // almost always serves one); `devices` keeps every device a block came
  // from alive until the blocks are freed.
  struct Block {
    Device* device;
    void* p;
  };
  std::unordered_multimap<size_t, Block> blocks;
  std::vector<std::shared_ptr<Device>> devices;
  int64_t bytes = 0;
};

MemoryTracker::MemoryTracker() = default;

void MemoryTracker::EnableReuse() {
  if (!cache_) cache_.reset(new Cache());
}

int64_t MemoryTracker::cached_bytes() const {
  if (!cache_) return 0;
  std::lock_guard<std::mutex> lock(cache_->mu);
  return cache_->bytes;
}

void* MemoryTracker::TakeCached(Device* device, size_t bytes) {
  if (!cache_) return nullptr;
  std::lock_guard<std::mutex> lock(cache_->mu);
  auto range = cache_->blocks.equal_range(bytes);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second.device != device) continue;
    void* p = it->second.p;
    cache_->blocks.erase(it);
    cache_->bytes -= static_cast<int64_t>(bytes);
    return p;
  }
  return nullptr;
}

bool MemoryTracker::Keep(const std::shared_ptr<Device>& device, void* p, size_t bytes) {
  if (!cache_) return false;
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->blocks.emplace(bytes, Cache::Block{device.get(), p});
  bool known = false;
  for (const auto& d : cache_->devices) known = known || d == device;
  if (!known) cache_->devices.push_back(device);
  cache_->bytes += static_cast<int64_t>(bytes);
  return true;
}

MemoryTracker::~MemoryTracker() {
  if (!cache_) return;
  for (auto& kv : cache_->blocks) kv.second.device->Free(kv.second.p);
}

Status Buffer::Allocate(size_t bytes, std::shared_ptr<MemoryTracker> tracker,
                        std::shared_ptr<Buffer>* out, bool zero) {
  return AllocateOn(CpuDevice(), bytes, std::move(tracker), out, zero);
}

Status Buffer::AllocateOn(const std::shared_ptr<Device>& device, size_t bytes,
                          std::shared_ptr<MemoryTracker> tracker, std::shared_ptr<Buffer>* out,
                          bool zero) {
  const std::shared_ptr<Device>& dev = device ? device : CpuDevice();
  std::shared_ptr<Buffer> b(new Buffer());
  // Always at least one line, so that empty tensors still have a valid
  // pointer; sizes in whole lines, so that blocks are reused by size.
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  if (rounded < bytes) return ResourceExhaustedError("allocation of ", bytes, " bytes overflows");
  void* p = tracker ? tracker->TakeCached(dev.get(), rounded) : nullptr;
  if (p == nullptr) p = dev->Allocate(rounded);
  if (p == nullptr) {
    return ResourceExhaustedError("out of memory allocating ", bytes, " bytes on ", dev->name());
  }
  if (zero) {
    Status st = dev->Zero(p, rounded);
    if (!st.ok()) {
      dev->Free(p);
      return st;
    }
  }
  b->data_ = static_cast<uint8_t*>(p);
  b->size_ = bytes;
  b->capacity_ = rounded;
  b->device_ = dev;
  b->tracker_ = std::move(tracker);
  if (b->tracker_) b->tracker_->Add(static_cast<int64_t>(bytes));
  *out = std::move(b);
  return OkStatus();
}

bool Buffer::SwapData(Buffer& other) {
  if (size_ != other.size_ || capacity_ != other.capacity_ || device_ != other.device_)
    return false;
  std::swap(data_, other.data_);
  return true;
}

void Buffer::ReleaseData() {
  if (tracker_) tracker_->Remove(static_cast<int64_t>(size_));
  if (data_) device_->Free(data_);
  data_ = nullptr;
  size_ = 0;
  capacity_ = 0;
}

Buffer::~Buffer() {
  if (tracker_) {
    tracker_->Remove(static_cast<int64_t>(size_));
    if (data_ && tracker_->Keep(device_, data_, capacity_)) return;
  }
  if (data_) device_->Free(data_);
}

Status Tensor::Allocate(DType dtype, const Shape& shape, Tensor* out,
                        std::shared_ptr<MemoryTracker> tracker, bool zero) {
  return AllocateOn(CpuDevice(), dtype, shape, out, std::move(tracker), zero);
}

Status Tensor::AllocateOn(const std::shared_ptr<Device>& device, DType dtype, const Shape& shape,
                          Tensor* out, std::shared_ptr<MemoryTracker> tracker, bool zero) {
  if (DTypeSize(dtype) == 0) {
    return InvalidArgumentError("cannot allocate a tensor of dtype ", DTypeName(dtype));
  }
  int64_t n = NumElements(shape);
  if (n < 0) return InvalidArgumentError("invalid tensor shape ", ShapeToString(shape));
  if (static_cast<uint64_t>(n) > std::numeric_limits<uint64_t>::max() / DTypeSize(dtype)) {
    return ResourceExhaustedError("tensor shape ", ShapeToString(shape), " is too large");
  }
  Tensor t;
  DISTRT_RETURN_IF_ERROR(Buffer::AllocateOn(device, static_cast<size_t>(n) * DTypeSize(dtype),
                                            std::move(tracker), &t.buffer_, zero));
  t.type_.dtype = dtype;
  t.type_.shape = shape;
  *out = std::move(t);
  return OkStatus();
}

StatusOr<Tensor> Tensor::Make(DType dtype, const Shape& shape) {
  Tensor t;
  DISTRT_RETURN_IF_ERROR(Allocate(dtype, shape, &t));
  return t;
}

Status Tensor::FromBytes(DType dtype, const Shape& shape, const void* data, size_t bytes,
                             Tensor* out) {
  Tensor t;
  DISTRT_RETURN_IF_ERROR(Allocate(dtype, shape, &t));
  if (t.byte_size() != bytes) {
    return InvalidArgumentError("FromBytes: ", t.type().ToString(), " needs ", t.byte_size(),
                                " bytes, got ", bytes);
  }
  if (bytes) std::memcpy(t.raw(), data, bytes);
  *out = std::move(t);
  return OkStatus();
}

Status Tensor::Reshaped(const Shape& shape, Tensor* out) const {
  int64_t n = NumElements(shape);
  if (n < 0 || n != num_elements()) {
    return InvalidArgumentError("cannot reshape ", type_.ToString(), " (", num_elements(),
                                " elements) to ", ShapeToString(shape));
  }
  Tensor t = *this;
  t.type_.shape = shape;
  *out = std::move(t);
  return OkStatus();
}

Tensor Tensor::Clone() const {
  Tensor t;
  if (!defined()) return t;
  if (!CopyTo(buffer_->shared_device(), &t).ok()) return Tensor();
  return t;
}

Status Tensor::CopyTo(const std::shared_ptr<Device>& device, Tensor* out,
                      std::shared_ptr<MemoryTracker> tracker) const {
  if (!defined()) return InvalidArgumentError("cannot copy an undefined tensor");
  const std::shared_ptr<Device>& to = device ? device : CpuDevice();
  Tensor t;
  DISTRT_RETURN_IF_ERROR(AllocateOn(to, type_.dtype, type_.shape, &t, std::move(tracker), false));
  const size_t n = byte_size();
  if (n) {
    Device* from = this->device();
    if (from == to.get()) {
      DISTRT_RETURN_IF_ERROR(from->CopyWithin(t.raw(), raw(), n));
    } else if (from->kind() == DeviceKind::kCpu) {
      DISTRT_RETURN_IF_ERROR(to->CopyFromHost(t.raw(), raw(), n));
    } else if (to->kind() == DeviceKind::kCpu) {
      DISTRT_RETURN_IF_ERROR(from->CopyToHost(t.raw(), raw(), n));
    } else {  // between two devices: through the host
      Tensor host;
      DISTRT_RETURN_IF_ERROR(CopyTo(CpuDevice(), &host));
      DISTRT_RETURN_IF_ERROR(to->CopyFromHost(t.raw(), host.raw(), n));
      // The host copy must outlive the queued copy.
      DISTRT_RETURN_IF_ERROR(to->Synchronize());
    }
  }
  *out = std::move(t);
  return OkStatus();
}

bool Tensor::Equals(const Tensor& other) const {
  if (type_ != other.type_) return false;
  if (!on_host() || !other.on_host()) return false;
  if (byte_size() == 0) return true;
  return std::memcmp(raw(), other.raw(), byte_size()) == 0;
}

namespace {
template <typename T>
void PrintElems(std::ostream& os, const void* p, int64_t n) {
  const T* d = static_cast<const T*>(p);
  for (int64_t i = 0; i < n; ++i) {
    if (i) os << ", ";
    if constexpr (sizeof(T) == 1) {
      os << static_cast<int>(d[i]);
    } else {
      os << d[i];
    }
  }
}
}  // namespace

std::string Tensor::DebugString(int max_elements) const {
  std::ostringstream os;
  os << type_.ToString();
  if (!defined()) return os.str() + " <undefined>";
  if (!on_host()) return os.str() + " on " + device()->name();
  int64_t n = num_elements();
  int64_t shown = n < max_elements ? n : max_elements;
  os << " {";
  switch (type_.dtype) {
    case DType::kF32:
      PrintElems<float>(os, raw(), shown);
      break;
    case DType::kF64:
      PrintElems<double>(os, raw(), shown);
      break;
    case DType::kI64:
      PrintElems<int64_t>(os, raw(), shown);
      break;
    case DType::kI32:
      PrintElems<int32_t>(os, raw(), shown);
      break;
    case DType::kI16:
      PrintElems<int16_t>(os, raw(), shown);
      break;
    case DType::kI8:
      PrintElems<int8_t>(os, raw(), shown);
      break;
    case DType::kU8:
    case DType::kBool:
      PrintElems<uint8_t>(os, raw(), shown);
      break;
    case DType::kU16:
      PrintElems<uint16_t>(os, raw(), shown);
      break;
    case DType::kU32:
      PrintElems<uint32_t>(os, raw(), shown);
      break;
    case DType::kU64:
      PrintElems<uint64_t>(os, raw(), shown);
      break;
    case DType::kF16:
    case DType::kBF16: {
      const uint16_t* d = data<uint16_t>();
      for (int64_t i = 0; i < shown; ++i) {
        os << (i ? ", " : "")
           << (type_.dtype == DType::kF16 ? HalfToFloat(d[i]) : BF16ToFloat(d[i]));
      }
      break;
    }
    default:
      break;
  }
  if (shown < n) os << ", ...";
  os << "}";
  return os.str();
}

}  // namespace distrt
