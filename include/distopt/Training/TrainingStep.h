//===- TrainingStep.h - a forward model becomes a training step -*- C++ -*-===//
//
// dist-build-training-step rewrites a forward model's main function into
// one training step, all in nn IR that every later pass (propagation,
// resharding, partitioning, stage cuts) treats like any other:
//
//   forward -> loss (and its gradient w.r.t. the output) -> backward
//   (GradientOpInterface) -> global-norm clipping -> optimizer update
//
// Trainable parameters stay `nn.weight` ops; optimizer states are
// `nn.variable` ops; the step returns the loss, the gradient norm and the
// next value of every parameter and state (results marked `nn.updates`),
// which the runtime writes back in place. Hyper-parameters that change per
// step (learning rate, Adam's bias corrections) are scalar inputs the
// trainer feeds. See docs/training.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINING_TRAININGSTEP_H
#define DISTOPT_TRAINING_TRAININGSTEP_H

#include "distopt/Training/TrainConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace distopt {

/// Names of the inputs and outputs a training step adds.
inline constexpr llvm::StringLiteral kLabelsInput = "labels";
inline constexpr llvm::StringLiteral kLossOutput = "loss";
inline constexpr llvm::StringLiteral kGradNormOutput = "grad_norm";
/// Per-step scalar inputs (f32): the learning rate, Adam's step size
/// lr / (1 - beta1^t) and sqrt(1 - beta2^t), AdamW's decay 1 - lr * wd.
inline constexpr llvm::StringLiteral kLrInput = "hyper.lr";
inline constexpr llvm::StringLiteral kStepSizeInput = "hyper.step_size";
inline constexpr llvm::StringLiteral kBiasCorrection2SqrtInput =
    "hyper.bias_correction2_sqrt";
inline constexpr llvm::StringLiteral kDecayInput = "hyper.decay";
/// With an f16 loss scale: the scale the loss's gradient is multiplied by
/// (an input, so a dynamic scaler needs no recompilation), and whether
/// every gradient was finite (1 or 0, f32): a step whose gradients are not
/// updates nothing.
inline constexpr llvm::StringLiteral kLossScaleInput = "hyper.loss_scale";
inline constexpr llvm::StringLiteral kGradsFiniteOutput = "grads_finite";
/// A mixture of experts' fraction of tokens that no expert took (capacity
/// drop): a float scalar the model returns under this name becomes a step
/// output of the same name (the mean over the step's microbatches).
inline constexpr llvm::StringLiteral kDroppedTokensOutput = "dropped_tokens";

struct TrainingStepInfo {
  /// Persistent keys of the parameters that train.
  std::vector<std::string> parameters;
  /// Parameters that do not affect the loss: like torch, they have no
  /// gradient and are not updated.
  std::vector<std::string> untouched;
  /// Names of the optimizer-state variables.
  std::vector<std::string> states;
  /// Classes of a cross-entropy loss (the output's last extent), 0 for MSE.
  int64_t classes = 0;
  /// Microbatches per step (inputs "<name>.mb<j>" for j > 0), and how many
  /// of them one batch is split into (a pipeline's microbatches; 1 when
  /// they are separate batches accumulated).
  int64_t microbatches = 1;
  int64_t batchSplit = 1;
};

/// Rewrites `module`'s main function into one training step for `config`.
/// Errors (an output the model lacks, a glob that matches nothing, an op
/// without a gradient rule on the path to a parameter) are diagnostics.
/// With `batchSplit` > 1 the model already takes one of that many slices of
/// the batch (splitBatch): the step runs every slice and its loss and update
/// equal those of the whole batch. Under a mixed-precision policy the
/// frozen parameters that are read only in the compute dtype are loaded in
/// it (loadWeightsNarrow).
mlir::FailureOr<TrainingStepInfo> buildTrainingStep(mlir::ModuleOp module,
                                                    const TrainConfig &config,
                                                    int64_t batchSplit = 1);

/// The function a training step is built from: @main, or the module's only
/// function (null if neither).
mlir::func::FuncOp stepFunction(mlir::ModuleOp module);

/// Makes every nn.weight op reading the same stored tensor (or window) one
/// op, so a parameter read in several places has one value.
void unifyWeights(mlir::func::FuncOp func);

/// What dist-apply-precision does with a model whose parameters are bf16 or
/// f16: run it in its dtype (inference), train f32 masters of it, or compute
/// its forward in f32 from f32 parameters (a trained model's masters).
enum class SixteenBitModel { Keep, TrainMasters, ComputeInF32 };

/// The element type of a model whose parameters are stored in bf16 or f16
/// (that of the first such nn.weight); null for an f32 model.
mlir::Type sixteenBitParameterType(mlir::func::FuncOp func);

/// Makes a 16-bit model's training step train f32 masters
/// (SixteenBitModel.cpp): each 16-bit nn.weight becomes an f32 value read
/// from its 16-bit bytes (`stored_type`), 16-bit inputs are cast to f32
/// where they enter, and every other 16-bit value, constant and output
/// becomes f32. The precision policy applied after it narrows the compute
/// again.
mlir::LogicalResult widenSixteenBitModel(mlir::func::FuncOp func);

/// Applies a mixed-precision policy to the forward model in `module`'s step
/// function (the pass dist-apply-precision; see Passes.td): parameters stay
/// f32 and are cast where forward reads them (with `master: bf16` they
/// become bf16 parameters themselves), activations flow in the
/// compute dtype, normalisations, softmax and `keep_f32` layers compute in
/// f32, and the model's outputs are f32 (so the loss is). A keep_f32 glob
/// that matches nothing is a warning. No-op for an f32 policy. A model
/// whose parameters are bf16 or f16 is first widened
/// (widenSixteenBitModel) unless `mode` is Keep; with TrainMasters and no
/// `precision` in the config, a bf16 model then computes in bf16 (a remark
/// says so) and an f16 one is an error asking for a loss scale.
mlir::LogicalResult
applyPrecision(mlir::ModuleOp module, const PrecisionPolicy &policy,
               SixteenBitModel mode = SixteenBitModel::Keep);

/// A weight nothing updates (every weight of an inference, a frozen
/// parameter of a training step) needs no f32 copy: where it is read only
/// through casts to one narrower float type it becomes a weight of that
/// type, rounded once when loaded (`stored_type` keeps the file's type),
/// and the casts go. Weights `keep` names are left as they are.
void loadWeightsNarrow(
    mlir::func::FuncOp func,
    llvm::function_ref<bool(mlir::Operation *)> keep = nullptr);

/// The per-step hyper-parameter inputs of step `step` (0-based), by name.
std::vector<std::pair<std::string, double>>
hyperParameters(const TrainConfig &config, int64_t step);

/// With gradient accumulation, the inputs of microbatch `j` > 0 are the
/// model's inputs (and labels) again, named "<name>.mb<j>".
std::string microbatchInputName(llvm::StringRef name, int64_t j);
/// The model input (or labels) and microbatch a step input stands for.
std::pair<std::string, int64_t> splitMicrobatchInputName(llvm::StringRef name,
                                                         int64_t microbatches);

/// Whether `module` is a training step (its main function updates state).
bool isTrainingStep(mlir::ModuleOp module);

/// After propagation: every update result must come out with the sharding
/// its parameter or state has, so the runtime writes it back in place
/// (the pass dist-tie-updates-to-state).
void tieUpdatesToState(mlir::ModuleOp module);

} // namespace distopt

#endif // DISTOPT_TRAINING_TRAININGSTEP_H
