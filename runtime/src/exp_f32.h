// A branch-free float exp that GCC can vectorise (std::exp is a scalar libm
// call): exp(x) = 2^k * exp(r), k = round(x / ln2), r = x - k ln2 in
// [-ln2/2, ln2/2], exp(r) = 1 + r E(r) with E fitted by
// scripts/fit_f32_math.py. Relative error about 1 ulp on normal results;
// 2^k is applied as two factors 2^(k/2) so that results near overflow and
// subnormal results come out right; NaN stays NaN.
#ifndef DISTRT_SRC_EXP_F32_H_
#define DISTRT_SRC_EXP_F32_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace distrt {

inline float ExpF32(float x) {
  // std::max/min keep NaN (their first operand).
  const float c = std::min(std::max(x, -104.0f), 88.8f);
  // Round to nearest by adding and subtracting 1.5 * 2^23 (no SSE4.1 round
  // in the baseline x86-64 build).
  const float shifter = 12582912.0f;
  const float kf = (c * 1.44269504088896341f + shifter) - shifter;
  // ln2 split in two so that c - k ln2 is exact enough for |k| <= 150.
  const float r = (c - kf * 0.693145751953125f) - kf * 1.42860682030941723212e-6f;
  float e = 1.394857946e-03f;
  e = e * r + 8.369150673e-03f;
  e = e * r + 4.166624072e-02f;
  e = e * r + 1.666650523e-01f;
  e = e * r + 5.000000081e-01f;
  e = e * r + 1.000000011e+00f;
  const float p = 1.0f + r * e;
  const int32_t k = static_cast<int32_t>(kf), k1 = k >> 1, k2 = k - k1;
  const int32_t bits1 = (k1 + 127) << 23, bits2 = (k2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &bits1, sizeof s1);
  std::memcpy(&s2, &bits2, sizeof s2);
  const float y = p * s1 * s2;
  return y;
}

}  // namespace distrt

#endif  // DISTRT_SRC_EXP_F32_H_
