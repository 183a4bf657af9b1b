//===- TrainConfig.h - what a training run asks for -------------*- C++ -*-===//
//
// A training config names the model output the loss reads, the loss, the
// optimizer with PyTorch's hyper-parameters, which parameters train, and
// for how many steps: the training-case layout's train.json (JSON or YAML).
// See docs/training.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINING_TRAINCONFIG_H
#define DISTOPT_TRAINING_TRAINCONFIG_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace distopt {

struct LossSpec {
  /// ModelOutput: the output already is the loss (a graph ending in
  /// SoftmaxCrossEntropyLoss, say); its labels are the graph's own inputs.
  enum class Kind { CrossEntropy, MeanSquaredError, ModelOutput };
  Kind kind = Kind::CrossEntropy;
  /// Labels equal to this take no part in a cross-entropy loss.
  int64_t ignoreIndex = -100;
};

struct OptimizerSpec {
  enum class Kind { SGD, Adam, AdamW };
  Kind kind = Kind::AdamW;
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;
  double momentum = 0.0; // SGD
  bool nesterov = false; // SGD
};

/// The learning rate over steps: constant, or a linear warm-up followed by
/// a cosine decay to `minLr` at `totalSteps`.
struct LrSchedule {
  enum class Kind { Constant, WarmupCosine };
  Kind kind = Kind::Constant;
  int64_t warmupSteps = 0;
  int64_t totalSteps = 0; // 0: the run's steps
  double minLr = 0.0;

  /// The learning rate of step `step` (0-based) for base rate `lr`.
  double at(int64_t step, double lr, int64_t runSteps) const;
};

/// Mixed precision (the config's `precision`): the dtype parameters are used
/// in and activations are stored in (`compute`), the dtype the optimizer
/// updates (`master`), gradient reductions across ranks (`reduce`), optimizer
/// states, and what computes in f32 whatever `compute` says. See
/// docs/training.md, "Mixed precision".
struct PrecisionPolicy {
  /// "f32", "bf16" or "f16".
  std::string compute = "f32", master = "f32", reduce = "f32",
              optimizerState = "f32";
  /// Globs of node names, layers (module paths) or parameter names that
  /// compute in f32, besides the defaults (normalisations, softmax, the
  /// loss, rotary tables); each with where the config wrote it.
  std::vector<std::pair<std::string, mlir::LocationAttr>> keepF32;
  /// compute: f16's loss scale: a fixed number, or a dynamic scaler with
  /// Megatron's and DeepSpeed's semantics (LossScaler.h). Either way a step
  /// whose gradients are not finite updates nothing.
  enum class LossScale { None, Fixed, Dynamic };
  LossScale lossScale = LossScale::None;
  /// The fixed scale, or the dynamic scaler's first.
  double initialLossScale = 65536.0;
  /// Dynamic: clean steps before the scale doubles; overflowing steps
  /// (since the last growth) before it halves; the floor it never goes
  /// below.
  int64_t growthInterval = 1000;
  int64_t hysteresis = 2;
  double minLossScale = 1.0;
  /// `compute_copies`: whether the compute-dtype copy of each f32 master
  /// is cast from the master every step ("per_step", the default, as FSDP2
  /// does: nothing kept) or is state the step updates from the new master
  /// ("state", Megatron's bf16 weights: 2 bytes per parameter kept, no cast
  /// before forward). See docs/training.md, "Mixed precision".
  bool keepComputeCopies = false;
  /// Where the config wrote `precision` (null: it did not).
  mlir::LocationAttr loc;

  /// Whether anything computes in another dtype than f32.
  bool mixed() const { return compute != "f32"; }
};

/// How close a training case must come to torch (`tolerance` in a case's
/// train.json; bf16 cases cannot match to float32's 1e-4).
struct CaseTolerance {
  double lossRtol = 1e-4;
  double probeAtol = 1e-3, probeRtol = 1e-3;
};

/// Each microbatch has its own inputs (the step runs one loop body over
/// them); beyond this a config is surely a typo.
inline constexpr int64_t kMaxAccumulationSteps = 4096;

struct TrainConfig {
  std::string path;
  /// The model output (graph output name) the loss reads.
  std::string output;
  LossSpec loss;
  OptimizerSpec optimizer;
  LrSchedule schedule;
  /// Parameter globs without weight decay, and initializers that do not
  /// train; each glob with where the config wrote it.
  std::vector<std::pair<std::string, mlir::LocationAttr>> noDecay, frozen;
  /// Layers (globs over module paths, e.g. "h.*") whose activations backward
  /// computes again instead of keeping them from forward (activation
  /// checkpointing): only what enters such a layer is kept.
  std::vector<std::pair<std::string, mlir::LocationAttr>> recompute;
  std::optional<double> clipGradNorm;
  int64_t steps = 1;
  /// Microbatches per step: each runs forward and backward on its own
  /// batch, the gradients are summed (each microbatch's loss divided by
  /// their number, as `(loss / k).backward()` does), then one update.
  int64_t accumulationSteps = 1;
  PrecisionPolicy precision;
  /// A training case's reference losses (torch's, one per step), and how
  /// close a run must come to them.
  std::vector<double> losses;
  /// An f16 case's: the loss scale each step ran with, and which steps
  /// torch skipped (1) for gradients that were not finite.
  std::vector<double> lossScales, skipped;
  /// A mixture-of-experts case's: the fraction of tokens its experts
  /// dropped at each step (the model's output `dropped_tokens`, torch's).
  std::vector<double> droppedTokens;
  CaseTolerance tolerance;
  mlir::LocationAttr loc;
};

/// Parses a training config; errors are diagnostics at the file's line.
mlir::FailureOr<TrainConfig> parseTrainConfig(mlir::MLIRContext *ctx,
                                              llvm::StringRef path);

} // namespace distopt

#endif // DISTOPT_TRAINING_TRAINCONFIG_H
