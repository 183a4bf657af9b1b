//===- ScheduleTest.cpp - pipeline schedules and their timelines -*- C++
//-*-===//
#include "distopt/PipelineStages/Schedule.h"
#include "distopt/PipelineStages/TimelineSvg.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

using namespace distopt;

namespace {

std::string render(const std::vector<ScheduleAction> &actions) {
  std::string s;
  for (const ScheduleAction &a : actions)
    s += (a.pass == Pass::Forward    ? "F"
          : a.pass == Pass::Backward ? "B"
                                     : "W") +
         (a.chunk ? std::to_string(a.chunk) + "." : std::string()) +
         std::to_string(a.microbatch) + " ";
  return s;
}

TEST(ScheduleTest, ForwardOnlySchedulesRunMicrobatchesInOrder) {
  for (const char *kind : {"gpipe", "1f1b"}) {
    auto s = buildSchedule(kind, 3, 4, /*withBackward=*/false);
    ASSERT_EQ(s.size(), 3u);
    for (const auto &stage : s)
      EXPECT_EQ(render(stage), "F0 F1 F2 F3 ") << kind;
  }
}

TEST(ScheduleTest, GPipeFillsThenDrains) {
  auto s = buildSchedule("gpipe", 2, 3, /*withBackward=*/true);
  EXPECT_EQ(render(s[0]), "F0 F1 F2 B0 B1 B2 ");
  EXPECT_EQ(render(s[1]), "F0 F1 F2 B0 B1 B2 ");
}

TEST(ScheduleTest, OneForwardOneBackwardAfterWarmup) {
  // 4 stages, 6 microbatches: stage s warms up with 3 - s forwards.
  auto s = buildSchedule("1f1b", 4, 6, /*withBackward=*/true);
  EXPECT_EQ(render(s[0]), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  EXPECT_EQ(render(s[3]), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
  // At most (stages - stage) microbatches in flight on stage s.
  for (int64_t stage = 0; stage < 4; ++stage) {
    int64_t inFlight = 0, most = 0;
    for (const ScheduleAction &a : s[stage]) {
      inFlight += a.forward() ? 1 : -1;
      most = std::max(most, inFlight);
    }
    EXPECT_LE(most, 4 - stage);
  }
}

/// Idle time of the busiest stage's makespan share: makespan - busy/stages.
double idlePerStage(const ScheduleTimeline &tl, int64_t stages) {
  double busy = 0;
  for (const auto &slot : tl.slots)
    busy += slot.end - slot.start;
  return tl.makespan - busy / stages;
}

TEST(ScheduleTest, TrainingBubblesMatchTheFormulas) {
  // Forward 1, backward 2 per stage (split evenly over chunks): 1F1B idles
  // (p - 1)(f + b) per stage, interleaving over v chunks divides that by v.
  for (int64_t p : {2, 4})
    for (int64_t m : {4, 8}) {
      std::vector<double> f(p, 1.0), b(p, 2.0);
      auto one = simulateSchedule(buildSchedule("1f1b", p, m, true), f, b, 0);
      EXPECT_NEAR(idlePerStage(one, p), (p - 1) * 3.0, 1e-9);
      EXPECT_NEAR(one.bubbleFraction, (p - 1.0) / (m + p - 1.0), 1e-9);
      auto gpipe =
          simulateSchedule(buildSchedule("gpipe", p, m, true), f, b, 0);
      EXPECT_NEAR(gpipe.makespan, one.makespan, 1e-9);
      const int64_t v = 2;
      std::vector<double> fv(p * v, 0.5), bv(p * v, 1.0);
      auto inter = simulateSchedule(
          buildSchedule("interleaved-1f1b", p, m, true, v), fv, bv, 0);
      EXPECT_NEAR(idlePerStage(inter, p), (p - 1) * 3.0 / v, 1e-9)
          << p << " stages, " << m << " microbatches";
    }
}

TEST(ScheduleTest, ZeroBubbleSplitsBackwardAndDefersWeights) {
  auto s = buildSchedule("zb-h1", 3, 4, true);
  EXPECT_EQ(render(s[2]), "F0 B0 F1 B1 F2 B2 W0 F3 B3 W1 W2 W3 ");
  EXPECT_EQ(render(s[0]), "F0 F1 F2 B0 F3 B1 W0 B2 W1 B3 W2 W3 ");
  // Input gradients only on the critical path: with F = B = W = 1 the
  // makespan is 15 against 1F1B's (m + p - 1) * 3 = 18 with the backward
  // unsplit (the ideal ZB-H1 is 3m + p - 1 = 14).
  std::vector<double> f(3, 1.0), b(3, 1.0), w(3, 1.0), full(3, 2.0);
  auto zb = simulateSchedule(s, f, b, 0, w);
  auto one = simulateSchedule(buildSchedule("1f1b", 3, 4, true), f, full, 0);
  EXPECT_DOUBLE_EQ(one.makespan, 18.0);
  EXPECT_DOUBLE_EQ(zb.makespan, 15.0);
}

TEST(ScheduleTest, InterleavedRunsEveryChunkOfEveryMicrobatch) {
  auto s = buildSchedule("interleaved-1f1b", 2, 4, true, 2);
  for (const auto &stage : s) {
    EXPECT_EQ(stage.size(), 16u);
    std::set<std::tuple<int64_t, int64_t, bool>> seen;
    for (const ScheduleAction &a : stage)
      seen.insert({a.chunk, a.microbatch, a.forward()});
    EXPECT_EQ(seen.size(), 16u);
  }
}

TEST(ScheduleTest, EqualStagesGiveTheTextbookBubble) {
  // S stages, m microbatches, equal forward times: idle share (S-1)/(m+S-1).
  for (int64_t S : {2, 4})
    for (int64_t m : {1, 2, 4, 8}) {
      auto s = buildSchedule("gpipe", S, m, false);
      std::vector<double> f(S, 1.0), b(S, 0.0);
      ScheduleTimeline tl = simulateSchedule(s, f, b, 0.0);
      EXPECT_DOUBLE_EQ(tl.makespan, double(m + S - 1));
      EXPECT_NEAR(tl.bubbleFraction, double(S - 1) / double(m + S - 1), 1e-12)
          << S << " stages, " << m << " microbatches";
    }
}

TEST(ScheduleTest, SlowStageSetsThePace) {
  auto s = buildSchedule("1f1b", 2, 4, false);
  std::vector<double> f{1.0, 3.0}, b{0.0, 0.0};
  ScheduleTimeline tl = simulateSchedule(s, f, b, 0.5);
  // Stage 1 starts after stage 0's first microbatch and the transfer, then
  // runs back to back: 1 + 0.5 + 4 * 3.
  EXPECT_DOUBLE_EQ(tl.makespan, 13.5);
}

TEST(ScheduleTest, TimelineSvgNamesEverySlot) {
  auto s = buildSchedule("gpipe", 2, 2, false);
  std::vector<double> f{1.0, 1.0}, b{0.0, 0.0};
  ScheduleTimeline tl = simulateSchedule(s, f, b, 0.0);
  std::string svg;
  llvm::raw_string_ostream os(svg);
  writeTimelineSvg(tl, 2, 2, "test", os);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("stage 1, microbatch 1 forward"), std::string::npos);
  EXPECT_NE(svg.find("bubble 33.3%"), std::string::npos);
}

} // namespace
