// Timing helpers shared by the collective benchmarks.
#ifndef DISTRT_BENCH_UTIL_H_
#define DISTRT_BENCH_UTIL_H_

#include <algorithm>
#include <chrono>
#include <vector>

inline double NowSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

#endif // DISTRT_BENCH_UTIL_H_
