//===- PlanTrial.h - measure a plan by training it briefly ------*- C++ -*-===//
//
// --plan auto --auto-trials: the training tool's way to measure one of the
// search's finalists (autoplan::TrialRunner): compile its step, train it on
// fresh state for two warm-up steps and a few timed ones, and read its time
// and the busiest rank's memory. Nothing of the run it is part of changes.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINER_PLANTRIAL_H
#define DISTOPT_TRAINER_PLANTRIAL_H

#include "distopt/AutoPlan/AutoPlan.h"
#include "distopt/Trainer/Trainer.h"

namespace distopt {

/// Compiles `options`' training step (its diagnostics held back: the first
/// error becomes the returned error) and digests its rank programs; unless
/// `seen` knows the digest (then nothing runs: `ran` false), runs two
/// warm-up steps and `steps` timed ones on batch 0 of `trainer`'s data, and
/// returns the median and fastest step and the largest weights-and-states
/// plus peak activations of any rank. Under MPI every process takes part
/// and gets the same numbers (the slowest process's times).
llvm::Expected<autoplan::TrialMeasurement>
measureTrainingStep(mlir::MLIRContext &ctx, llvm::StringRef model,
                    const CompileOptions &options,
                    const TrainerOptions &trainer, int64_t steps,
                    llvm::function_ref<bool(llvm::StringRef)> seen);

} // namespace distopt

#endif // DISTOPT_TRAINER_PLANTRIAL_H
