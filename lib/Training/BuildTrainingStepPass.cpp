//===- BuildTrainingStepPass.cpp - dist-build-training-step -----*- C++ -*-===//
#include "distopt/Training/Passes.h"

#include "distopt/Dialect/NN/IR/NNDialect.h"
#include "distopt/Plan/Plan.h"

namespace distopt {
#define GEN_PASS_DEF_DISTBUILDTRAININGSTEP
#include "distopt/Training/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {
struct BuildTrainingStepPass
    : public distopt::impl::DistBuildTrainingStepBase<BuildTrainingStepPass> {
  using Base::Base;

  BuildTrainingStepPass(TrainConfig parsedConfig, int64_t split,
                        LocationAttr splitLoc, TrainingStepInfo *info)
      : parsed(std::move(parsedConfig)), splitLoc(splitLoc), info(info) {
    config = parsed->path;
    batchSplit = split;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<TrainConfig> train = parsed;
    if (!train) {
      if (config.empty()) {
        emitError(module.getLoc(),
                  "dist-build-training-step needs config=<file>: the training "
                  "config (JSON or YAML; see docs/training.md)");
        return signalPassFailure();
      }
      FailureOr<TrainConfig> read = parseTrainConfig(&getContext(), config);
      if (failed(read))
        return signalPassFailure();
      train = std::move(*read);
    }
    Location loc = splitLoc ? Location(splitLoc) : module.getLoc();
    if (batchSplit < 1) {
      emitError(loc, "dist-build-training-step: batch-split is ")
          << static_cast<int64_t>(batchSplit) << "; it must be 1 or more";
      return signalPassFailure();
    }
    // Windows of fused projections become parameters of their own before
    // differentiating, as a plan would split them.
    splitFusedProjections(module);
    // A pipeline's microbatches are slices of the exported batch.
    // A loss the model computes (a mean over the whole batch) is what
    // usually mixes the rows; such a model runs as one microbatch.
    std::string hint;
    if (train->loss.kind == LossSpec::Kind::ModelOutput)
      hint = "the model computes its loss over the whole batch (loss kind "
             "model): use pipeline.microbatches: 1";
    if (failed(splitBatch(module, batchSplit, loc, hint)))
      return signalPassFailure();
    FailureOr<TrainingStepInfo> step =
        buildTrainingStep(module, *train, batchSplit);
    if (failed(step))
      return signalPassFailure();
    if (info)
      *info = std::move(*step);
  }

  std::optional<TrainConfig> parsed;
  LocationAttr splitLoc;
  TrainingStepInfo *info = nullptr;
};
} // namespace

std::unique_ptr<mlir::Pass>
distopt::createDistBuildTrainingStep(TrainConfig config, int64_t batchSplit,
                                     LocationAttr batchSplitLoc,
                                     TrainingStepInfo *info) {
  return std::make_unique<BuildTrainingStepPass>(std::move(config), batchSplit,
                                                 batchSplitLoc, info);
}
