// Math functions kernel bodies call, overloaded for float and double so a
// body templated on its compute type picks the right one on the host and
// on the device (where the std:: overloads are not all available).
#ifndef DISTRT_SRC_PORTABLE_MATH_H_
#define DISTRT_SRC_PORTABLE_MATH_H_

#include <cmath>

#include "portable/hd.h"

namespace distrt {
namespace portable {

DISTRT_HD float Exp(float x) { return expf(x); }
DISTRT_HD double Exp(double x) { return exp(x); }
DISTRT_HD float Log(float x) { return logf(x); }
DISTRT_HD double Log(double x) { return log(x); }
DISTRT_HD float Sqrt(float x) { return sqrtf(x); }
DISTRT_HD double Sqrt(double x) { return sqrt(x); }
DISTRT_HD float Tanh(float x) { return tanhf(x); }
DISTRT_HD double Tanh(double x) { return tanh(x); }
DISTRT_HD float Erf(float x) { return erff(x); }
DISTRT_HD double Erf(double x) { return erf(x); }
DISTRT_HD float Sin(float x) { return sinf(x); }
DISTRT_HD double Sin(double x) { return sin(x); }
DISTRT_HD float Cos(float x) { return cosf(x); }
DISTRT_HD double Cos(double x) { return cos(x); }
DISTRT_HD float Floor(float x) { return floorf(x); }
DISTRT_HD double Floor(double x) { return floor(x); }
DISTRT_HD float Ceil(float x) { return ceilf(x); }
DISTRT_HD double Ceil(double x) { return ceil(x); }
// Half to even, as ONNX Round.
DISTRT_HD float RoundEven(float x) { return rintf(x); }
DISTRT_HD double RoundEven(double x) { return rint(x); }
DISTRT_HD float Pow(float a, float b) { return powf(a, b); }
DISTRT_HD double Pow(double a, double b) { return pow(a, b); }
DISTRT_HD float Abs(float x) { return fabsf(x); }
DISTRT_HD double Abs(double x) { return fabs(x); }
DISTRT_HD float Fmod(float a, float b) { return fmodf(a, b); }
DISTRT_HD double Fmod(double a, double b) { return fmod(a, b); }

template <typename C>
DISTRT_HD bool IsNan(C x) {
  return x != x;
}

// max/min that carry a NaN operand through, as the host kernels do.
template <typename C>
DISTRT_HD C NanMax(C a, C b) {
  if (IsNan(a)) return a;
  if (IsNan(b)) return b;
  return a < b ? b : a;
}
template <typename C>
DISTRT_HD C NanMin(C a, C b) {
  if (IsNan(a)) return a;
  if (IsNan(b)) return b;
  return b < a ? b : a;
}

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_MATH_H_
