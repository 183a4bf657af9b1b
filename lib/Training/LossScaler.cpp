//===- LossScaler.cpp - f16's loss scale from step to step ----------------===//
#include "distopt/Training/LossScaler.h"

#include <algorithm>

using namespace distopt;

LossScaler::LossScaler(const PrecisionPolicy &p) : policy(p) {
  current.scale = enabled() ? p.initialLossScale : 1.0;
  current.hysteresisLeft = p.hysteresis;
}

bool LossScaler::update(bool finite) {
  if (finite)
    ++current.appliedSteps;
  if (policy.lossScale != PrecisionPolicy::LossScale::Dynamic)
    return false;
  double before = current.scale;
  if (!finite) {
    current.cleanSteps = 0;
    if (--current.hysteresisLeft <= 0)
      current.scale = std::max(current.scale * 0.5, policy.minLossScale);
    // Once it is spent, every further overflow backs off until the scale
    // grows again (Megatron's tracker goes below zero to the same effect).
    current.hysteresisLeft = std::max<int64_t>(current.hysteresisLeft, 0);
  } else if (++current.cleanSteps == policy.growthInterval) {
    current.cleanSteps = 0;
    current.hysteresisLeft = policy.hysteresis;
    current.scale *= 2.0;
  }
  return current.scale != before;
}
