// A branch-free float erf that GCC can vectorise (std::erf is a scalar libm
// call). Two near-minimax polynomials, coefficients from
// scripts/fit_f32_math.py: erf(x) = x * P(x^2) on |x| < 1, and
// erf(x) = 1 - Q((|x| - 2.4375) / 1.4375) on 1 <= |x| < 3.875, beyond which
// erf rounds to +-1 in float. Max absolute error against std::erf 1.4e-7
// (asserted in kernels_elementwise_test.cpp); NaN stays NaN.
#ifndef DISTRT_SRC_ERF_F32_H_
#define DISTRT_SRC_ERF_F32_H_

#include <algorithm>
#include <cmath>

namespace distrt {

inline float ErfF32(float x) {
  const float a = std::fabs(x);
  // |x| < 1: odd polynomial, accurate relative to erf(x) itself near 0.
  const float s = a * a;
  float p = 7.889285529e-05f;
  p = p * s - 8.020894950e-04f;
  p = p * s + 5.189542005e-03f;
  p = p * s - 2.685444856e-02f;
  p = p * s + 1.128360029e-01f;
  p = p * s - 3.761262715e-01f;
  p = p * s + 1.128379166e+00f;
  const float small = x * p;
  // 1 <= |x|: erfc by a polynomial on [1, 3.875]. std::min keeps NaN (its
  // first operand) and clamps infinities into the fitted range.
  const float t = (std::min(a, 3.875f) - 2.4375f) * (1.0f / 1.4375f);
  float q = 7.102801266e-04f;
  q = q * t - 1.510409668e-03f;
  q = q * t - 1.697855432e-03f;
  q = q * t + 8.192900224e-03f;
  q = q * t - 8.266155460e-03f;
  q = q * t - 4.898788865e-03f;
  q = q * t + 2.673971614e-02f;
  q = q * t - 4.420939428e-02f;
  q = q * t + 4.565626032e-02f;
  q = q * t - 3.196073037e-02f;
  q = q * t + 1.494086464e-02f;
  q = q * t - 4.263188708e-03f;
  q = q * t + 5.665144609e-04f;
  const float large = std::copysign(a >= 3.875f ? 1.0f : 1.0f - q, x);
  return a < 1.0f ? small : large;
}

}  // namespace distrt

#endif  // DISTRT_SRC_ERF_F32_H_
