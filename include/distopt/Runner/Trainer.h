//===- Trainer.h - run compiled training steps ------------------*- C++ -*-===//
//
// What dist-train does, as a library: compile a model's training step for a
// mesh, feed it batches (a training case's step_K files, a flat token file,
// or seeded random data) and the step's hyper-parameters, run it step after
// step on a backend with parameters and optimizer states resident on the
// ranks, and read the trained state back as global tensors.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_RUNNER_TRAINER_H
#define DISTOPT_RUNNER_TRAINER_H

#include "distopt/Runner/Checkpoint.h"
#include "distopt/Runner/OnnxTestCase.h"
#include "distopt/Runner/Runner.h"

#include <map>
#include <memory>

namespace distopt {

struct TrainerOptions {
  RunSettings run;
  /// A training case's batches: <dataDir>/step_K/input_I.pb and labels.pb.
  std::string dataDir;
  /// A flat token file (nanoGPT's uint16 .bin): next-token batches of
  /// `batch` rows of `seq` tokens, read in order.
  std::string tokensFile;
  int64_t batch = 0, seq = 0;
  /// Seed of random batches (neither dataDir nor tokensFile).
  uint64_t seed = 0;
};

struct StepResult {
  int64_t step = 0;
  double loss = 0, gradNorm = 0;
  double ms = 0;
  /// Label positions in the batch that count in a cross-entropy loss;
  /// for other losses, the rows (first dimension) of the batch.
  int64_t tokens = 0;
};

class Trainer {
public:
  /// Compiles the training step (`options.train` must be set).
  static llvm::Expected<std::unique_ptr<Trainer>>
  create(mlir::MLIRContext &ctx, llvm::StringRef modelPath,
         const CompileOptions &options, const TrainerOptions &trainer);

  /// Runs step `step` (0-based) and returns its loss and gradient norm
  /// (on the root process; every process gets the same numbers). A NaN or
  /// infinite loss is an error naming the step.
  llvm::Expected<StepResult> step(int64_t step);

  /// The trained parameters and optimizer states as global tensors, by
  /// name (root process; empty elsewhere).
  llvm::Expected<std::vector<distrt::NamedTensor>> trainedState();

  /// Saves the training state after `stepsDone` steps into `dir`
  /// (collective; docs/checkpoints.md), recording `run` (mesh, plan, config
  /// file) and where the batches stand.
  llvm::Error saveCheckpoint(llvm::StringRef dir, int64_t stepsDone,
                             const CheckpointMeta &run,
                             CheckpointIO *io = nullptr);
  /// Loads a checkpoint saved on any mesh and plan (collective); its
  /// metadata, whose `step` is the next step to run.
  llvm::Expected<CheckpointMeta> resume(llvm::StringRef dir,
                                        CheckpointIO *io = nullptr);

  bool isRoot() const;
  const Programs &programs() const { return compiled; }
  const TrainConfig &config() const { return train; }
  Session &session() { return *runner; }

private:
  Trainer() = default;
  llvm::Expected<std::vector<distrt::NamedTensor>> batch(int64_t step);

  TrainConfig train;
  TrainerOptions options;
  Programs compiled;
  std::unique_ptr<Session> runner;
  std::vector<distrt::NamedTensor> randomInputs;
  /// Each model input's number (input_<I>.pb), in the order of the first
  /// microbatch's inputs; made with randomInputs.
  std::map<std::string, int> inputIndex;
  std::string modelPath;
  int64_t classes = 0; // of a cross-entropy loss
  /// Microbatches per step, and how many of them one stored batch is split
  /// into (a pipeline's; see TrainingStepInfo).
  int64_t microbatches = 1, batchSplit = 1;
};

/// Checks labels of a cross-entropy step: every one in [0, classes) or the
/// ignore index; the error names the first bad one and its position.
llvm::Error checkLabels(const distrt::Tensor &labels, int64_t classes,
                        int64_t ignoreIndex);

/// Runs the forward model with `trained` weights (global tensors by
/// initializer name; others read from the model) on one device, on the
/// inputs in `inputDir`; its outputs.
llvm::Expected<std::vector<distrt::NamedTensor>>
runTrainedModel(mlir::MLIRContext &ctx, llvm::StringRef modelPath,
                const std::vector<distrt::NamedTensor> &trained,
                llvm::StringRef inputDir, llvm::StringRef workDir, int threads);

/// Writes the ONNX model with its initializers replaced by `trained`
/// (matched by name; optimizer states ignored): a single-device model any
/// ONNX runtime loads. Tensors go to an external-data file next to `out`
/// when they exceed 1 GiB in all. With `mergeLora`, LoRA adapters are
/// folded into their base weights (LoraMerge.h) and `*mergedLayers` says
/// how many.
llvm::Error saveTrainedModel(llvm::StringRef modelPath,
                             const std::vector<distrt::NamedTensor> &trained,
                             llvm::StringRef out, bool mergeLora = false,
                             int *mergedLayers = nullptr);

} // namespace distopt

#endif // DISTOPT_RUNNER_TRAINER_H
