//===- LossScalerTest.cpp - the dynamic loss scale step by step ------------===//
//
// Megatron's DynamicGradScaler worked by hand: the scale after each step of
// a sequence of overflowing (x) and clean (.) steps.
//
//===----------------------------------------------------------------------===//
#include "distopt/Training/LossScaler.h"

#include <gtest/gtest.h>

using namespace distopt;

namespace {

PrecisionPolicy dynamicPolicy(double initial, int64_t interval,
                              int64_t hysteresis, double min) {
  PrecisionPolicy p;
  p.compute = "f16";
  p.lossScale = PrecisionPolicy::LossScale::Dynamic;
  p.initialLossScale = initial;
  p.growthInterval = interval;
  p.hysteresis = hysteresis;
  p.minLossScale = min;
  return p;
}

TEST(LossScaler, HysteresisBackOffAndGrowth) {
  LossScaler s(dynamicPolicy(16, 3, 2, 1));
  // x: first overflow tolerated; . resets nothing of the hysteresis; x:
  // second overflow halves; x: spent, halves again; . . . grows and
  // restores the hysteresis; x tolerated; x halves; x x x down to the
  // floor of 1 and stays there.
  const char *steps = "x.xx...xxxxxx";
  const double want[] = {16, 16, 8, 4, 4, 4, 8, 8, 4, 2, 1, 1, 1};
  for (size_t i = 0; steps[i]; ++i) {
    s.update(steps[i] == '.');
    EXPECT_EQ(s.state().scale, want[i]) << "after step " << i;
  }
  EXPECT_EQ(s.state().appliedSteps, 4);
}

TEST(LossScaler, FixedScaleOnlyCountsAppliedSteps) {
  PrecisionPolicy p;
  p.compute = "f16";
  p.lossScale = PrecisionPolicy::LossScale::Fixed;
  p.initialLossScale = 1024;
  LossScaler s(p);
  for (bool finite : {false, true, false, true, true})
    EXPECT_FALSE(s.update(finite));
  EXPECT_EQ(s.state().scale, 1024);
  EXPECT_EQ(s.state().appliedSteps, 3);
}

} // namespace
