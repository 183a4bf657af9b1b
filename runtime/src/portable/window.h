// The spatial geometry that convolution and pooling bodies (portable/conv.h,
// portable/pool.h) share: NC + 1..3 spatial dims, padded to three (leading
// dims of extent 1), as the host's Spatial (conv_util.h) holds it, and the
// tap arithmetic on one dim. A window tap k of output index o reads input
// position o * s - pb + k * d.
#ifndef DISTRT_SRC_PORTABLE_WINDOW_H_
#define DISTRT_SRC_PORTABLE_WINDOW_H_

#include <cstdint>

#include "portable/hd.h"

namespace distrt {
namespace portable {

struct Window {
  int64_t in[3] = {1, 1, 1};   // input extent
  int64_t k[3] = {1, 1, 1};    // kernel extent
  int64_t s[3] = {1, 1, 1};    // stride
  int64_t d[3] = {1, 1, 1};    // dilation
  int64_t pb[3] = {0, 0, 0};   // pad begin
  int64_t pe[3] = {0, 0, 0};   // pad end
  int64_t out[3] = {1, 1, 1};  // output extent
  DISTRT_HD int64_t in_size() const { return in[0] * in[1] * in[2]; }
  DISTRT_HD int64_t out_size() const { return out[0] * out[1] * out[2]; }
  DISTRT_HD int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

// The k in [0, n) with lo <= base + k * step < hi, as [*k0, *k1) (k1 == k0
// when there are none). step > 0. Used both for a window's taps (base the
// window's first position, step the dilation) and for the outputs that one
// tap reaches (base the tap's offset, step the stride).
DISTRT_HD void TapRange(int64_t base, int64_t n, int64_t step, int64_t lo, int64_t hi,
                        int64_t* k0, int64_t* k1) {
  int64_t a = 0, b = n;
  if (base < lo) a = Div(lo - base + step - 1, step);
  if (base + (n - 1) * step >= hi) b = hi - 1 - base < 0 ? 0 : Div(hi - 1 - base, step) + 1;
  *k0 = a;
  *k1 = b < a ? a : b;
}

// Splits a flat index of [.., out[0], out[1], out[2]] into the three
// spatial indices and the rest (plane index).
DISTRT_HD int64_t SplitSpatial(int64_t i, const int64_t ext[3], int64_t pos[3]) {
  int64_t t;
  DivMod(i, ext[2], &t, &pos[2]);
  DivMod(t, ext[1], &t, &pos[1]);
  DivMod(t, ext[0], &t, &pos[0]);
  return t;
}

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_WINDOW_H_
