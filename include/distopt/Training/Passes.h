//===- Passes.h - the training step as passes -------------------*- C++ -*-===//
//
// dist-apply-precision, dist-build-training-step, dist-tie-updates-to-state,
// dist-persist-compute-copies and dist-regather-parameters: thin pass
// wrappers over applyPrecision, buildTrainingStep, tieUpdatesToState
// (TrainingStep.h), persistComputeCopies (PersistComputeCopies.h) and
// regatherParametersForBackward (RegatherParameters.h). See Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINING_PASSES_H
#define DISTOPT_TRAINING_PASSES_H

#include "distopt/Training/TrainConfig.h"
#include "distopt/Training/TrainingStep.h"

#include "mlir/Pass/Pass.h"

#include <memory>

namespace distopt {

#define GEN_PASS_DECL
#include "distopt/Training/Passes.h.inc"

/// dist-build-training-step with a config already parsed (the tools parse
/// `--train` once, with their other flags). `batchSplitLoc` is where the
/// split was asked for (a plan's pipeline section), for diagnostics; `info`,
/// when given, receives what the step trains (for the trainer).
std::unique_ptr<mlir::Pass>
createDistBuildTrainingStep(TrainConfig config, int64_t batchSplit,
                            mlir::LocationAttr batchSplitLoc,
                            TrainingStepInfo *info);

/// dist-apply-precision with a policy already parsed, and what it does with
/// a bf16 or f16 model.
std::unique_ptr<mlir::Pass> createDistApplyPrecision(PrecisionPolicy policy,
                                                     SixteenBitModel mode);

#define GEN_PASS_REGISTRATION
#include "distopt/Training/Passes.h.inc"

} // namespace distopt

#endif // DISTOPT_TRAINING_PASSES_H
