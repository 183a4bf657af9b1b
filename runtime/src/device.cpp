// Device names and the host device.
#include "distrt/device.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace distrt {

const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kCuda:
      return "cuda";
  }
  return "?";
}

std::string DeviceSpec::ToString() const {
  if (kind == DeviceKind::kCpu) return "cpu";
  return StrCat(DeviceKindName(kind), ":", index);
}

Status ParseDeviceSpec(const std::string& text, DeviceSpec* out) {
  DeviceSpec d;
  std::string kind = text, index;
  const size_t colon = text.find(':');
  if (colon != std::string::npos) {
    kind = text.substr(0, colon);
    index = text.substr(colon + 1);
  }
  if (kind == "cpu") {
    d.kind = DeviceKind::kCpu;
  } else if (kind == "cuda" || kind == "gpu") {
    d.kind = DeviceKind::kCuda;
  } else {
    return InvalidArgumentError("unknown device '", text, "': expected cpu, cuda or cuda:N");
  }
  if (colon != std::string::npos) {
    char* end = nullptr;
    const long n = index.empty() ? -1 : std::strtol(index.c_str(), &end, 10);
    if (index.empty() || *end != '\0' || n < 0 || n > 1024 || d.kind == DeviceKind::kCpu) {
      return InvalidArgumentError("bad device '", text, "': expected cpu, cuda or cuda:N");
    }
    d.index = static_cast<int>(n);
  }
  *out = d;
  return OkStatus();
}

std::string Device::name() const {
  if (kind() == DeviceKind::kCpu) return "cpu";
  return StrCat(DeviceKindName(kind()), ":", index());
}

namespace {

// The CPU's model name from /proc/cpuinfo, or "cpu".
std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "cpu";
}

class HostDevice : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  void* Allocate(size_t bytes) override {
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64 == 0 ? 64 : (bytes + 63) / 64 * 64);
  }
  void Free(void* p) override { std::free(p); }
  Status Zero(void* p, size_t bytes) override {
    std::memset(p, 0, bytes);
    return OkStatus();
  }
  Status CopyFromHost(void* dst, const void* src, size_t bytes) override {
    return CopyWithin(dst, src, bytes);
  }
  Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    return CopyWithin(dst, src, bytes);
  }
  Status CopyWithin(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return OkStatus();
  }
  Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                size_t rows) override {
    if (width == 0) return OkStatus();
    for (size_t r = 0; r < rows; ++r) {
      std::memcpy(static_cast<uint8_t*>(dst) + r * dst_pitch,
                  static_cast<const uint8_t*>(src) + r * src_pitch, width);
    }
    return OkStatus();
  }
  Status Synchronize() override { return OkStatus(); }
  std::string Description() const override { return CpuModelName(); }
};

}  // namespace

const std::shared_ptr<Device>& CpuDevice() {
  static const std::shared_ptr<Device> host = std::make_shared<HostDevice>();
  return host;
}

}  // namespace distrt
