//===- Evaluator.h - validation loss during training -------------*- C++ -*-===//
//
// dist-train --eval-tokens FILE: the loss of the model as trained so far
// on held-out token windows, computed with the forward model only (no
// backward, no optimizer, the training state untouched) on the same mesh
// and plan. Each evaluation gathers the trained parameters, writes them as
// an ONNX model into the run's work directory, compiles the forward model
// from it and runs the first K batches of the file (in order, the training
// batch's shape); the root computes the cross-entropy from the logits in
// double, skipping the ignore index, as the training loss does.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINER_EVALUATOR_H
#define DISTOPT_TRAINER_EVALUATOR_H

#include "distopt/Trainer/Trainer.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace distopt {

struct EvalResult {
  double loss = 0;
  int64_t tokens = 0; // label positions the loss averages over
  double ms = 0;
};

class Evaluator {
public:
  /// `batches` windows-batches of `tokensFile` (checked to exist and to
  /// hold one batch) evaluated with the trainer's model, mesh and plan.
  static llvm::Expected<std::unique_ptr<Evaluator>>
  create(const Trainer &trainer, llvm::StringRef tokensFile, int64_t batches,
         const RunSettings &run, llvm::StringRef workDir);

  /// Evaluates the trainer's current parameters (collective: every process
  /// calls it; the root's result holds the loss).
  llvm::Expected<EvalResult> evaluate(mlir::MLIRContext &ctx, Trainer &trainer);

private:
  Evaluator() = default;
  std::string tokensFile, workDir;
  int64_t batches = 0;
  RunSettings run;
  /// How the forward model compiles: the trainer's options without the
  /// training step, the batch bound per microbatch under a pipeline plan.
  CompileOptions forward;
};

} // namespace distopt

#endif // DISTOPT_TRAINER_EVALUATOR_H
