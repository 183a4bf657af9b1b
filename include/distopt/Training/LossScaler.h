//===- LossScaler.h - f16's loss scale from step to step --------*- C++ -*-===//
//
// The trainer's half of an f16 loss scale (the compiled step holds the
// other: the scaled seed, the unscaled gradients, the finite check and the
// skipped update). Dynamic scaling follows Megatron's DynamicGradScaler and
// DeepSpeed's DynamicLossScaler: a step whose gradients are not finite is
// skipped; `hysteresis` such steps since the last growth halve the scale
// (each further one halves it again) down to `min`; `growthInterval` clean
// steps in a row double it. A fixed scale never changes (its overflowing
// steps are skipped all the same). See docs/training.md, "Mixed precision".
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINING_LOSSSCALER_H
#define DISTOPT_TRAINING_LOSSSCALER_H

#include "distopt/Training/TrainConfig.h"

namespace distopt {

struct LossScalerState {
  double scale = 1.0;
  /// Clean steps since the last growth or overflow.
  int64_t cleanSteps = 0;
  /// Overflows still tolerated before the scale backs off.
  int64_t hysteresisLeft = 0;
  /// Steps whose update was applied (Adam's step count and the learning
  /// rate schedule advance on these only, as in Megatron and DeepSpeed).
  int64_t appliedSteps = 0;
  bool operator==(const LossScalerState &o) const {
    return scale == o.scale && cleanSteps == o.cleanSteps &&
           hysteresisLeft == o.hysteresisLeft && appliedSteps == o.appliedSteps;
  }
};

class LossScaler {
public:
  /// The policy's first state (scale 1 and never changing without a loss
  /// scale).
  explicit LossScaler(const PrecisionPolicy &policy);

  const LossScalerState &state() const { return current; }
  void restore(const LossScalerState &s) { current = s; }
  /// Whether the step runs with a loss scale at all.
  bool enabled() const { return policy.lossScale != PrecisionPolicy::LossScale::None; }

  /// After a step: `finite` whether its gradients were (the step applied
  /// its update). Returns whether the scale changed.
  bool update(bool finite);

private:
  PrecisionPolicy policy;
  LossScalerState current;
};

} // namespace distopt

#endif // DISTOPT_TRAINING_LOSSSCALER_H
