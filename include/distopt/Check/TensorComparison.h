//===- TensorComparison.h - compare a result with what was expected -*- C++
//-*-===//
#ifndef DISTOPT_CHECK_TENSORCOMPARISON_H
#define DISTOPT_CHECK_TENSORCOMPARISON_H

#include "distrt/tensor.h"

#include <string>

namespace distopt {

/// How close floating-point results must be: |a - b| <= atol + rtol * |b|.
struct Tolerances {
  double rtol = 1e-4, atol = 1e-5;
};

struct Comparison {
  bool ok = true;
  double maxAbs = 0, maxRel = 0;
  std::string message; // first mismatch or problem
};

/// Element-wise |a - b| <= atol + rtol * |b| (exact for integers and bools).
Comparison compareTensors(const distrt::Tensor &actual,
                          const distrt::Tensor &expected, double rtol,
                          double atol);

} // namespace distopt

#endif // DISTOPT_CHECK_TENSORCOMPARISON_H
