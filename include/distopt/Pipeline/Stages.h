//===- Stages.h - pipeline stages: cut, extract, schedule -------*- C++ -*-===//
//
// A model too large for one group of devices is cut into stages along the
// mesh's pipeline axis. Layers are found by a glob over node names (the
// plan's `split`, e.g. `blocks.*`) and grouped into contiguous stages whose
// estimated compute is as even as possible; what comes before the first
// layer (embeddings) joins stage 0, what follows the last (final norm, head)
// the last stage. Each stage becomes its own program: values that cross a
// cut travel with dist.send / dist.recv between the stages' devices (same
// coordinates on the other mesh axes), and every stage runs its microbatches
// in the order of a schedule. See docs/pipeline.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PIPELINE_STAGES_H
#define DISTOPT_PIPELINE_STAGES_H

#include "distopt/Plan/PipelineConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"

#include <string>
#include <vector>

namespace distopt {

struct StageAssignment {
  int64_t numStages = 1;
  llvm::DenseMap<mlir::Operation *, int64_t> stageOf;
  std::vector<std::string> layers;          // layer keys, in order
  std::vector<int64_t> stageOfLayer;        // per layer
  std::vector<double> stageFlops;           // estimated per stage
  std::vector<int64_t> stageParameterBytes; // per stage, unsharded
};

/// Cuts `module`'s main function into `numStages` stages; a diagnostic and
/// failure when the split pattern finds fewer layers than stages.
mlir::FailureOr<StageAssignment> assignStages(mlir::ModuleOp module,
                                              const PipelineConfig &config,
                                              int64_t numStages);

/// A copy of the (sharded) module holding only stage `stage`, with sends and
/// receives for the values that cross its boundaries.
mlir::OwningOpRef<mlir::ModuleOp> extractStage(mlir::ModuleOp module,
                                               const StageAssignment &stages,
                                               const PipelineConfig &config,
                                               int64_t stage);

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

/// An SVG picture of the timeline: stages as rows, time across, microbatches
/// coloured.
void writeTimelineSvg(const ScheduleTimeline &timeline, int64_t numStages,
                      int64_t microbatches, llvm::StringRef title,
                      llvm::raw_ostream &os);

} // namespace distopt

#endif // DISTOPT_PIPELINE_STAGES_H
