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

/// What an action runs of one microbatch: its forward, its backward (with
/// the weight gradients unless the schedule has Weight actions: then only the
/// input gradients) or its weight gradients.
enum class Pass { Forward, Backward, Weight };

struct ScheduleAction {
  int64_t microbatch;
  Pass pass = Pass::Forward;
  /// Which of the rank's model chunks (interleaved schedules: chunk c of
  /// rank r is virtual stage c * ranks + r); 0 otherwise.
  int64_t chunk = 0;
  bool forward() const { return pass == Pass::Forward; }
};

/// Per stage (rank on the pipeline axis), its actions in order, for one of
/// pipelineScheduleNames() (Plan.h).
///  - gpipe: all forwards, then all backwards.
///  - 1f1b: (stages - stage - 1) forwards, then one forward and one backward
///    at a time; at most (stages - stage) microbatches in flight.
///  - interleaved-1f1b: each rank holds `virtualStages` chunks; forwards go
///    through the chunks in groups of `stages` microbatches (Narayanan et
///    al. 2021), so the bubble shrinks by the number of chunks.
///  - zb-h1: 1f1b with each backward split into input gradients (Backward)
///    and weight gradients (Weight), which wait (up to stages - 1 of them)
///    and fill the cool-down's waits for gradients (after Qi et al. 2023).
/// Without backward passes (inference) every kind runs the forwards in
/// microbatch order.
std::vector<std::vector<ScheduleAction>>
buildSchedule(llvm::StringRef kind, int64_t numStages, int64_t microbatches,
              bool withBackward, int64_t virtualStages = 1);

struct ScheduleTimeline {
  struct Slot {
    int64_t stage, microbatch;
    Pass pass;
    int64_t chunk;
    double start, end;
  };
  std::vector<Slot> slots;
  double makespan = 0;
  double bubbleFraction = 0; // idle share of stages x makespan
};

/// Simulates a schedule with per-virtual-stage (chunk * stages + stage)
/// forward, backward and weight-gradient times and a transfer time between
/// different stages. `weightTime` may be empty (no Weight actions).
ScheduleTimeline
simulateSchedule(const std::vector<std::vector<ScheduleAction>> &schedule,
                 llvm::ArrayRef<double> forwardTime,
                 llvm::ArrayRef<double> backwardTime, double transferTime,
                 llvm::ArrayRef<double> weightTime = {});

} // namespace distopt

#endif // DISTOPT_PIPELINESTAGES_SCHEDULE_H
