// Polling briefly before blocking on a condition variable: a futex sleep and
// wake-up costs tens of microseconds (more on a virtual machine, whose idle
// vCPU halts), far more than the wait for a peer that is about to arrive.
#ifndef DISTRT_SRC_SPIN_WAIT_H_
#define DISTRT_SRC_SPIN_WAIT_H_

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace distrt {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls pred() up to `iterations` times (a pause each: some 20-40 ns);
// true as soon as it holds.
template <typename Pred>
bool SpinFor(int iterations, Pred pred) {
  for (int i = 0; i < iterations; ++i) {
    if (pred()) return true;
    CpuRelax();
  }
  return false;
}

}  // namespace distrt

#endif  // DISTRT_SRC_SPIN_WAIT_H_
