//===- Schedule.h - the order a pipeline stage runs microbatches -*- C++
//-*-===//
//
// Every stage of a pipeline runs its microbatches' forward (and, in
// training, backward) passes in an order the schedule fixes; a simulation
// with per-stage times predicts the step time and the idle share (bubble).
// See docs/pipeline.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PIPELINESTAGES_SCHEDULE_H
#define DISTOPT_PIPELINESTAGES_SCHEDULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <vector>

namespace distopt {

struct ScheduleAction {
  int64_t microbatch;
  bool forward;
};

/// Per stage, its actions in order. GPipe runs all forwards, then all
/// backwards; 1F1B warms up with (stages - stage - 1) forwards and then
/// alternates. Without backward passes (inference) both give the forwards
/// in microbatch order.
std::vector<std::vector<ScheduleAction>> buildSchedule(llvm::StringRef kind,
                                                       int64_t numStages,
                                                       int64_t microbatches,
                                                       bool withBackward);

struct ScheduleTimeline {
  struct Slot {
    int64_t stage, microbatch;
    bool forward;
    double start, end;
  };
  std::vector<Slot> slots;
  double makespan = 0;
  double bubbleFraction = 0; // idle share of stages x makespan
};

/// Simulates a schedule with per-stage forward (and backward) times and a
/// transfer time between stages.
ScheduleTimeline
simulateSchedule(const std::vector<std::vector<ScheduleAction>> &schedule,
                 llvm::ArrayRef<double> forwardTime,
                 llvm::ArrayRef<double> backwardTime, double transferTime);

} // namespace distopt

#endif // DISTOPT_PIPELINESTAGES_SCHEDULE_H
