// Errors a kernel body finds in its data (an index out of range, an
// integer division by zero) where the host kernel would return an error
// Status. A device kernel cannot return one without synchronising the
// stream, so a body writes a harmless value (0, or skips the update) and
// records the error in an ErrorSlot; the launcher side reads the slot
// later (cuda/device_errors.h) and turns it into the Status the host
// kernel would have returned. On the host (HostFor) the slot is plain
// memory read right after the loop.
#ifndef DISTRT_SRC_PORTABLE_DEVICE_ERROR_H_
#define DISTRT_SRC_PORTABLE_DEVICE_ERROR_H_

#include <cstdint>

#include "portable/hd.h"

namespace distrt {
namespace portable {

enum class DeviceErrorCode : int64_t {
  kNone = 0,
  kGatherIndex = 1,      // value: the index, bound: the axis size
  kScatterAddIndex = 2,  // value: the index, bound: the axis size
  kIntDivByZero = 3,
  kIntModByZero = 4,
  kRangeDeltaZero = 5,
  kRangeCount = 6,  // value: the count start/limit/delta give, bound: the declared one
  kGatherElementsIndex = 7,   // value: the index, bound: the axis size
  kScatterElementsIndex = 8,  // value: the index, bound: the axis size
};

// Written with plain stores by any number of threads: the slot ends up with
// one of the offending elements (code, value and bound of one kernel; if
// two kernels fail before the slot is read, the fields may mix the two).
// No atomics: the slot lives in mapped host memory, where device atomics
// are not guaranteed over PCIe.
struct ErrorSlot {
  int64_t code;
  int64_t value;
  int64_t bound;
};

DISTRT_HD void ReportError(ErrorSlot* slot, DeviceErrorCode code, int64_t value, int64_t bound) {
  if (slot == nullptr) return;
  slot->value = value;
  slot->bound = bound;
  slot->code = static_cast<int64_t>(code);
}

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_DEVICE_ERROR_H_
