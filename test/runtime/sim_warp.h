// A warp's lanes simulated on the host (one thread per lane), for tests of
// row bodies: portable::HostRows runs a row body with one lane, which never
// exercises the lanes' combination (the partial results of strided shares,
// merged as cuda/launch.cuh's WarpLanes merges them: a butterfly of xor
// shuffles, NaN winning Max and Min). SimWarpRows runs the same body with
// 32 (or fewer) lanes that exchange values the way a warp does.
#ifndef DISTRT_TEST_SIM_WARP_H_
#define DISTRT_TEST_SIM_WARP_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace distrt {
namespace testing {

// The lanes' meeting point: a reusable barrier and one 8-byte slot per lane.
template <int kLanes>
class WarpExchange {
 public:
  // A generation barrier; lanes spin (yielding) rather than sleep, which
  // costs less than waking 32 threads through a condition variable.
  void Wait() {
    const uint64_t gen = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == kLanes) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.store(gen + 1, std::memory_order_release);
      return;
    }
    while (generation_.load(std::memory_order_acquire) == gen) std::this_thread::yield();
  }

  // Lane `lane` offers x; returns the value lane `lane ^ offset` offered.
  template <typename C>
  C ShuffleXor(int lane, C x, int offset) {
    static_assert(sizeof(C) <= 8, "one slot per lane");
    std::memcpy(slots_[lane], &x, sizeof(C));
    Wait();
    C y;
    std::memcpy(&y, slots_[lane ^ offset], sizeof(C));
    Wait();  // nobody overwrites a slot before every lane has read it
    return y;
  }

 private:
  std::atomic<int> arrived_{0};
  std::atomic<uint64_t> generation_{0};
  unsigned char slots_[kLanes][8];
};

// kLanes lanes (a power of two; a warp's 32 by default, fewer where a test
// wants speed: the combination is the same butterfly).
template <int kLanes>
struct SimWarpLanes {
  static constexpr int count = kLanes;
  int lane = 0;
  WarpExchange<kLanes>* exchange = nullptr;
  template <typename C>
  C Sum(C x) const {
    for (int o = kLanes / 2; o > 0; o >>= 1) x += exchange->ShuffleXor(lane, x, o);
    return x;
  }
  template <typename C>
  C Max(C x) const {
    for (int o = kLanes / 2; o > 0; o >>= 1) {
      const C y = exchange->ShuffleXor(lane, x, o);
      x = (y > x || y != y) ? y : x;
    }
    return x;
  }
  template <typename C>
  C Min(C x) const {
    for (int o = kLanes / 2; o > 0; o >>= 1) {
      const C y = exchange->ShuffleXor(lane, x, o);
      x = (y < x || y != y) ? y : x;
    }
    return x;
  }
};

// f(row, lanes) for each row with kLanes simulated lanes, as LaunchRows runs
// it on the device with 32.
template <int kLanes = 32, typename F>
void SimWarpRows(int64_t rows, const F& f) {
  WarpExchange<kLanes> exchange;
  std::vector<std::thread> lanes;
  for (int l = 0; l < kLanes; ++l) {
    lanes.emplace_back([&, l] {
      SimWarpLanes<kLanes> me;
      me.lane = l;
      me.exchange = &exchange;
      for (int64_t r = 0; r < rows; ++r) f(r, me);
    });
  }
  for (std::thread& t : lanes) t.join();
}

}  // namespace testing
}  // namespace distrt

#endif  // DISTRT_TEST_SIM_WARP_H_
