//===- CutPipelineStages.cpp - dist-cut-pipeline-stages ---------*- C++ -*-===//
#include "distopt/PipelineStages/Passes.h"
#include "distopt/PipelineStages/Schedule.h"
#include "distopt/PipelineStages/StageCut.h"
#include "distopt/Training/TrainingStep.h"

#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "llvm/ADT/StringExtras.h"

namespace distopt {
#define GEN_PASS_DEF_DISTCUTPIPELINESTAGES
#include "distopt/PipelineStages/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {
struct CutPipelineStagesPass
    : public distopt::impl::DistCutPipelineStagesBase<CutPipelineStagesPass> {
  using Base::Base;

  explicit CutPipelineStagesPass(const PipelineSpec &pp) : specLoc(pp.loc) {
    split = pp.split;
    axis = pp.axis;
    microbatches = pp.microbatches;
    schedule = pp.schedule;
    virtualStages = pp.virtualStages;
  }

  /// The pipeline section the options spell, or a diagnostic.
  FailureOr<PipelineSpec> spec(Location loc) {
    PipelineSpec pp;
    pp.split = split;
    pp.axis = axis;
    pp.microbatches = microbatches;
    pp.schedule = schedule;
    pp.virtualStages = virtualStages;
    pp.loc = specLoc;
    if (pp.split.empty())
      return emitError(loc, "dist-cut-pipeline-stages needs split=<glob over "
                            "layer names>, e.g. split=blocks.*");
    if (!llvm::is_contained(pipelineScheduleNames(), pp.schedule))
      return emitError(loc, "dist-cut-pipeline-stages: unknown schedule '")
             << pp.schedule << "'; expected "
             << llvm::join(pipelineScheduleNames(), ", ");
    if (pp.microbatches < 1 || pp.virtualStages < 1)
      return emitError(loc, "dist-cut-pipeline-stages: microbatches and "
                            "virtual-stages must be 1 or more");
    return pp;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Location loc = specLoc ? Location(specLoc) : module.getLoc();
    FailureOr<PipelineSpec> pp = spec(loc);
    if (failed(pp))
      return signalPassFailure();
    auto meshes = module.getOps<dist::MeshOp>();
    if (meshes.empty()) {
      emitError(loc, "dist-cut-pipeline-stages: the module has no mesh to "
                     "cut along");
      return signalPassFailure();
    }
    dist::MeshOp mesh = *meshes.begin();
    int64_t axisIndex = mesh.getAxisIndex(pp->axis);
    if (axisIndex < 0) {
      emitError(loc, "pipeline: mesh @")
          << mesh.getSymName() << " has no axis '" << pp->axis << "'";
      return signalPassFailure();
    }
    int64_t numStages = mesh.getAxisSizes()[axisIndex];
    bool training = isTrainingStep(module);
    if (pp->virtualStages > 1 && !training) {
      emitError(loc) << "pipeline.virtual_stages: interleaved schedules order "
                        "forward and backward passes; they apply to training "
                        "(--train)";
      return signalPassFailure();
    }
    if (pp->schedule == "interleaved-1f1b" && training &&
        pp->microbatches % numStages != 0) {
      emitError(loc) << "pipeline: interleaved-1f1b runs microbatches in "
                        "groups of the "
                     << numStages << " stages; " << pp->microbatches
                     << " microbatches do not divide into them";
      return signalPassFailure();
    }
    FailureOr<StageAssignment> stages = assignStages(module, *pp, numStages);
    if (failed(stages))
      return signalPassFailure();
    // A training step's stages run their schedule in program order;
    // inference runs the stage program once per forward action.
    std::vector<std::vector<ScheduleAction>> schedules;
    if (training)
      schedules = buildSchedule(pp->schedule, numStages, pp->microbatches,
                                /*withBackward=*/true, stages->chunks);
    SmallVector<OwningOpRef<ModuleOp>> stageModules;
    for (int64_t s = 0; s < numStages; ++s)
      stageModules.push_back(
          extractStage(module, *stages, *pp, s,
                       training ? ArrayRef<ScheduleAction>(schedules[s])
                                : ArrayRef<ScheduleAction>()));
    // The stages replace the global program.
    module.getBody()->clear();
    for (auto [s, stage] : llvm::enumerate(stageModules)) {
      stage->setSymName(("stage" + Twine(s)).str());
      module.push_back(stage.release());
    }
  }

  LocationAttr specLoc;
};
} // namespace

std::unique_ptr<mlir::Pass>
distopt::createDistCutPipelineStages(const PipelineSpec &pipeline) {
  return std::make_unique<CutPipelineStagesPass>(pipeline);
}
