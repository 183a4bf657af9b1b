//===- Trainer.h - run compiled training steps ------------------*- C++ -*-===//
//
// What dist-train does, as a library: compile a model's training step for a
// mesh, feed it batches from a data source (a training case's step_K files,
// a flat token file, or seeded random data; DataSource.h) and the step's
// hyper-parameters, run it step after step on a session with parameters and
// optimizer states resident on the ranks, save and resume checkpoints, and
// read the trained state back as global tensors.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINER_TRAINER_H
#define DISTOPT_TRAINER_TRAINER_H

#include "distopt/Checkpoint/Checkpoint.h"
#include "distopt/Data/DataSource.h"
#include "distopt/Session/Session.h"
#include "distopt/Training/LossScaler.h"

#include <memory>
#include <optional>

namespace distopt {

struct TrainerOptions {
  RunSettings run;
  /// A training case's batches: <dataDir>/step_K/input_I.pb and labels.pb.
  std::string dataDir;
  /// A flat token file (nanoGPT's uint16 .bin): next-token batches of
  /// `batch` rows of `seq` tokens, read in order.
  std::string tokensFile;
  int64_t batch = 0, seq = 0;
  /// Draw the token file's windows from this seed instead of in order.
  std::optional<uint64_t> shuffleSeed;
  /// Seed of random batches (neither dataDir nor tokensFile).
  uint64_t seed = 0;
};

struct StepResult {
  int64_t step = 0;
  double loss = 0, gradNorm = 0;
  /// The learning rate the step used (after the schedule).
  double lr = 0;
  double ms = 0;
  /// Label positions in the batch that count in a cross-entropy loss;
  /// for other losses, the rows (first dimension) of the batch.
  int64_t tokens = 0;
  /// The signal that asked the root process to stop (StopRequest.h), or 0:
  /// every process gets the root's, so all stop after the same step.
  int stopSignal = 0;
  /// With an f16 loss scale: the scale the step ran with, whether its
  /// gradients overflowed (then nothing was updated), and the scale the
  /// next step runs with.
  bool lossScaled = false, skipped = false;
  double lossScale = 0, nextLossScale = 0;
  /// A mixture of experts' fraction of tokens no expert took, when the
  /// model returns one (`dropped_tokens`).
  std::optional<double> droppedTokens;
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
  /// file) and where the batches stand; through `files` when given.
  llvm::Error saveCheckpoint(llvm::StringRef dir, int64_t stepsDone,
                             const CheckpointMeta &run,
                             CheckpointIO *io = nullptr,
                             CheckpointFiles *files = nullptr);
  /// Loads a checkpoint saved on any mesh and plan (collective); its
  /// metadata, whose `step` is the next step to run.
  llvm::Expected<CheckpointMeta> resume(llvm::StringRef dir,
                                        CheckpointIO *io = nullptr);

  bool isRoot() const;
  /// What the user should hear once before training: e.g. a batch split
  /// unevenly over the ranks.
  const std::vector<std::string> &notes() const { return remarks; }
  const Programs &programs() const { return compiled; }
  const TrainConfig &config() const { return train; }
  Session &session() { return *runner; }
  /// The options the step was compiled with, dimensions bound by --batch
  /// and --seq included (an evaluation compiles the forward model alike).
  const CompileOptions &compileOptions() const { return options; }
  const std::string &model() const { return modelPath; }
  /// A pipeline plan's microbatches per batch (1 without a pipeline).
  int64_t pipelineMicrobatches() const { return batchSplit; }
  /// Where batches come from, as checkpoints record it (DataSource::kind).
  llvm::StringRef dataSourceKind() const { return source->kind(); }

private:
  explicit Trainer(const TrainConfig &train)
      : train(train), scaler(train.precision) {}
  llvm::Expected<std::vector<distrt::NamedTensor>> batch(int64_t step);
  /// The step the hyper-parameters (learning rate, Adam's bias
  /// corrections) are those of: `step`, or with a loss scale the updates
  /// applied so far.
  int64_t scheduleStep(int64_t step) const;

  TrainConfig train;
  LossScaler scaler;
  CompileOptions options;
  Programs compiled;
  std::unique_ptr<Session> runner;
  std::unique_ptr<DataSource> source;
  /// Every input the programs take, in order; the data the source gives
  /// for each that is not a hyper-parameter.
  std::vector<InputSpec> inputs;
  std::vector<InputRequest> requests;
  std::string modelPath;
  int64_t classes = 0; // of a cross-entropy loss
  int64_t microbatches = 1;
  int64_t batchSplit = 1;
  std::vector<std::string> remarks;
};

} // namespace distopt

#endif // DISTOPT_TRAINER_TRAINER_H
