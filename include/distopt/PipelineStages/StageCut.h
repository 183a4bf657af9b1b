//===- StageCut.h - cut a model into pipeline stages ------------*- C++ -*-===//
//
// A model too large for one group of devices is cut into stages along the
// mesh's pipeline axis. Layers are found by a glob over node names (the
// plan's `split`, e.g. `blocks.*`) and grouped into contiguous stages whose
// estimated compute is as even as possible; what comes before the first
// layer (embeddings) joins stage 0, what follows the last (final norm, head)
// the last stage. Each stage becomes its own program: activations that cross
// a cut travel with dist.send / dist.recv between the stages' devices (same
// coordinates on the other mesh axes). What does not depend on the model's
// inputs — weights, constants, masks built from them, gathers of sharded
// parameters — is computed by every stage that reads it, never sent.
// The passes dist-cut-pipeline-stages, dist-order-pipeline-stages and
// dist-select-stage (Passes.h) run these functions. See docs/pipeline.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PIPELINESTAGES_STAGECUT_H
#define DISTOPT_PIPELINESTAGES_STAGECUT_H

#include "distopt/PipelineStages/Schedule.h"
#include "distopt/Plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace distopt {

struct StageAssignment {
  int64_t numStages = 1;
  /// Model chunks per stage (interleaved schedules): virtual stage v runs on
  /// stage v % numStages.
  int64_t chunks = 1;
  /// The virtual stage of every op of the main function. Ops that do not
  /// depend on the inputs sit at the first stage that reads them; every
  /// later stage that reads them computes its own copy. In a training step,
  /// later microbatches' copies, the loss and the backward go where the
  /// forward op they derive from went, a parameter's update where the
  /// parameter is first read.
  llvm::DenseMap<mlir::Operation *, int64_t> stageOf;
  std::vector<std::string> layers;          // layer keys, in order
  std::vector<int64_t> stageOfLayer;        // per layer: its virtual stage
  std::vector<double> stageFlops;           // estimated per stage
  std::vector<int64_t> stageParameterBytes; // per stage, unsharded
  /// Whether `op` stores a weight that `stage` reads.
  bool storesWeight(mlir::Operation *weight, int64_t stage) const;
};

/// Cuts `module`'s main function into `numStages` stages; a diagnostic and
/// failure when the split pattern finds fewer layers than stages.
mlir::FailureOr<StageAssignment> assignStages(mlir::ModuleOp module,
                                              const PipelineSpec &pipeline,
                                              int64_t numStages);

/// A copy of the (sharded) module holding only stage `stage` (all its
/// chunks), with sends and receives for the activations that cross its
/// boundaries. Every crossing has one tag, counted in program order (one
/// message per microbatch for a crossing inside the microbatch loop). A
/// training step's loop body is cut into the actions of the stage's
/// schedule `actions` (scheduleLoopBody, StageOrder.h).
mlir::OwningOpRef<mlir::ModuleOp>
extractStage(mlir::ModuleOp module, const StageAssignment &stages,
             const PipelineSpec &pipeline, int64_t stage,
             llvm::ArrayRef<ScheduleAction> actions = {});

/// The stage modules dist-cut-pipeline-stages nests in `module` (modules
/// marked `dist.stage`), in stage order; empty if there are none.
llvm::SmallVector<mlir::ModuleOp> stageModulesOf(mlir::ModuleOp module);

/// Checks that the stage modules pair up: for every two stages, the tags and
/// tensor types one sends (every microbatch's) equal those the other
/// receives. A mismatch would deadlock or mix messages; the diagnostic names
/// the first one.
mlir::LogicalResult
verifyStagePairing(llvm::ArrayRef<mlir::ModuleOp> stageModules);

} // namespace distopt

#endif // DISTOPT_PIPELINESTAGES_STAGECUT_H
