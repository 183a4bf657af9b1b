// top_k body (host and device): the indices of the k largest (smallest)
// values along an axis, best first, the tensor viewed as [outer, n, inner]
// and the result as [outer, k, inner]. The order is kernels_reduce.cpp's
// TopKLoop (a stable sort): values compared as doubles with NaN counting
// as +infinity (so largest for both directions), equal values in index
// order; -0 and +0 are equal.
//
// One row (line) per call, its elements spread over the lanes: k rounds,
// each picking the best element that comes after the previous pick in
// that order (the best key over the lanes, then the lowest index with that
// key). O(k * n / lanes) per line: meant for small k (the CUDA kernel
// leaves large k to the host).
#ifndef DISTRT_SRC_PORTABLE_TOP_K_H_
#define DISTRT_SRC_PORTABLE_TOP_K_H_

#include <cmath>

#include "portable/hd.h"

namespace distrt {
namespace portable {

template <typename T>
struct TopKBody {
  const T* x;
  int64_t* y;
  int64_t n, inner, k;
  bool smallest;

  static DISTRT_HD double Key(T v) {
    const double d = static_cast<double>(Load(v));
    return d != d ? static_cast<double>(INFINITY) : d;
  }
  // (key, index) strictly after (pk, pi) in the result's order.
  DISTRT_HD bool After(double key, int64_t index, double pk, int64_t pi) const {
    if (key == pk) return index > pi;
    return smallest ? key > pk : key < pk;
  }

  template <typename Lanes>
  DISTRT_HD void operator()(int64_t line, const Lanes& lanes) const {
    int64_t o, i;
    DivMod(line, inner, &o, &i);
    const T* p = x + o * n * inner + i;
    const double none = smallest ? static_cast<double>(INFINITY) : -static_cast<double>(INFINITY);
    double pk = 0.0;
    long long pi = -1;  // no pick yet
    for (int64_t j = 0; j < k; ++j) {
      double best = none;
      for (int64_t e = lanes.lane; e < n; e += Lanes::count) {
        const double v = Key(p[e * inner]);
        if ((pi < 0 || After(v, e, pk, pi)) && (smallest ? v < best : v > best)) best = v;
      }
      best = smallest ? lanes.Min(best) : lanes.Max(best);
      // Lanes whose candidates all equal `none` found nothing better; the
      // index pass below still finds them when `none` is the best key.
      long long at = static_cast<long long>(n);
      for (int64_t e = lanes.lane; e < n; e += Lanes::count) {
        const double v = Key(p[e * inner]);
        if (v == best && (pi < 0 || After(v, e, pk, pi))) {
          at = e;
          break;
        }
      }
      at = lanes.Min(at);
      if (lanes.lane == 0) y[(o * k + j) * inner + i] = static_cast<int64_t>(at);
      pk = best;
      pi = at;
    }
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_TOP_K_H_
