#include "cuda/device_errors.h"

#include "cuda/cuda_util.h"

namespace distrt {
namespace {

using portable::DeviceErrorCode;
using portable::ErrorSlot;

constexpr char kSlotKey[] = "distrt.cuda.error_slot";

// The slot's pinned, mapped host memory, owned by the device's states (so
// it lives as long as the device and is freed after its stream drains).
class ErrorSlotState : public KernelState {
 public:
  ~ErrorSlotState() override {
    if (host != nullptr) cudaFreeHost(host);
  }
  ErrorSlot* host = nullptr;
  ErrorSlot* device = nullptr;
};

Status SlotState(CudaDevice& d, ErrorSlotState** out) {
  std::shared_ptr<KernelState>& s = d.states().Slot(kSlotKey);
  if (!s) {
    DISTRT_RETURN_IF_ERROR(d.Activate());
    auto state = std::make_shared<ErrorSlotState>();
    void* p = nullptr;
    DISTRT_CUDA(cudaHostAlloc(&p, sizeof(ErrorSlot), cudaHostAllocMapped),
                "cudaHostAlloc (device error slot)");
    state->host = static_cast<ErrorSlot*>(p);
    *state->host = ErrorSlot{0, 0, 0};
    void* dp = nullptr;
    DISTRT_CUDA(cudaHostGetDevicePointer(&dp, p, 0), "cudaHostGetDevicePointer");
    state->device = static_cast<ErrorSlot*>(dp);
    s = std::move(state);
  }
  *out = static_cast<ErrorSlotState*>(s.get());
  return OkStatus();
}

}  // namespace

Status DeviceErrorSlot(CudaDevice& device, ErrorSlot** slot) {
  ErrorSlotState* s = nullptr;
  DISTRT_RETURN_IF_ERROR(SlotState(device, &s));
  *slot = s->device;
  return OkStatus();
}

Status TakeDeviceError(CudaDevice& device) {
  // No slot yet: no kernel could have reported anything.
  std::shared_ptr<KernelState>& state = device.states().Slot(kSlotKey);
  if (!state) return OkStatus();
  ErrorSlotState* s = static_cast<ErrorSlotState*>(state.get());
  // Written by the device behind the compiler's back.
  volatile ErrorSlot* v = s->host;
  const int64_t code = v->code;
  if (code == 0) return OkStatus();
  const int64_t value = v->value, bound = v->bound;
  v->code = 0;
  const std::string where =
      StrCat(" (found on ", device.name(),
             " by a kernel that had run on; reported when the device was next waited for or a "
             "later kernel started)");
  switch (static_cast<DeviceErrorCode>(code)) {
    case DeviceErrorCode::kGatherIndex:
      return OutOfRangeError("gather index ", value, " is out of range for an axis of size ",
                             bound, "; the gather wrote zeros in its place", where);
    case DeviceErrorCode::kScatterAddIndex:
      return OutOfRangeError("scatter_add index ", value, " is out of range for an axis of size ",
                             bound, "; its updates were dropped", where);
    case DeviceErrorCode::kGatherElementsIndex:
      return OutOfRangeError("gather_elements index ", value,
                             " is out of range for an axis of size ", bound,
                             "; the gather wrote zeros in its place", where);
    case DeviceErrorCode::kScatterElementsIndex:
      return OutOfRangeError("scatter_elements index ", value,
                             " is out of range for an axis of size ", bound,
                             "; its update was dropped", where);
    case DeviceErrorCode::kIntDivByZero:
      return InvalidArgumentError("integer division by zero", where);
    case DeviceErrorCode::kIntModByZero:
      return InvalidArgumentError("integer modulo by zero", where);
    case DeviceErrorCode::kRangeDeltaZero:
      return InvalidArgumentError("range delta is 0", where);
    case DeviceErrorCode::kRangeCount:
      return InvalidArgumentError("range gives ", value, " elements but its output was declared with ",
                                  bound, where);
    default:
      return InternalError("unknown device error code ", code, where);
  }
}

Status CheckDeviceErrors(const KernelContext& ctx, ErrorSlot** slot) {
  CudaDevice& d = CudaOf(ctx);
  DISTRT_RETURN_IF_ERROR(TakeDeviceError(d));
  if (slot != nullptr) return DeviceErrorSlot(d, slot);
  return OkStatus();
}

}  // namespace distrt
