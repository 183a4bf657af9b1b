// Runs the bodies of portable kernels on the host, one index at a time: how
// tests on machines without a GPU run the device kernels' arithmetic (and
// how the host can use a body no host kernel has).
#ifndef DISTRT_SRC_PORTABLE_HOST_LAUNCH_H_
#define DISTRT_SRC_PORTABLE_HOST_LAUNCH_H_

#include <cstdint>

#include "portable/hd.h"

namespace distrt {
namespace portable {

// f(i) for i in [0, n).
template <typename F>
void HostFor(int64_t n, const F& f) {
  for (int64_t i = 0; i < n; ++i) f(i);
}

// f(row, lanes) for each row, with a single lane.
template <typename F>
void HostRows(int64_t rows, const F& f) {
  const OneLane lanes;
  for (int64_t r = 0; r < rows; ++r) f(r, lanes);
}

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_HOST_LAUNCH_H_
