//===- OrderPipelineStages.cpp - dist-order-pipeline-stages -----*- C++ -*-===//
#include "distopt/PipelineStages/Passes.h"
#include "distopt/PipelineStages/StageCut.h"
#include "distopt/PipelineStages/StageOrder.h"
#include "distopt/Training/TrainingStep.h"

#include "distopt/Dialect/Dist/IR/DistDialect.h"

namespace distopt {
#define GEN_PASS_DEF_DISTORDERPIPELINESTAGES
#include "distopt/PipelineStages/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {
struct OrderPipelineStagesPass
    : public distopt::impl::DistOrderPipelineStagesBase<
          OrderPipelineStagesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<ModuleOp> stages = stageModulesOf(module);
    if (stages.empty()) {
      module.emitError("dist-order-pipeline-stages: the module has no "
                       "pipeline stages (dist-cut-pipeline-stages makes them)");
      return signalPassFailure();
    }
    // Every stage receives from a peer in the order the peer sends.
    alignReceives(stages);
    if (llvm::any_of(stages, [](ModuleOp m) { return isTrainingStep(m); }) &&
        failed(verifyStageProgress(stages)))
      return signalPassFailure();
    if (failed(verifyStagePairing(stages)))
      return signalPassFailure();
  }
};
} // namespace
