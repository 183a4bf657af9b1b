//===- DataSource.h - where a run's input tensors come from -----*- C++ -*-===//
//
// One interface for the places a run's inputs come from: generated from a
// seed (SyntheticInputs.cpp), a folder of input_<i>.pb files (InputFolder.cpp,
// dist-run --inputs), a training case's step_K folders
// (TrainingCaseFolder.cpp, dist-train --data and --train-test), or a flat
// token file (TokenFile.cpp, dist-train --tokens). dist-run and the trainer
// ask a source for one batch at a time; the hyper-parameters a training step
// also takes are not data and come from the trainer.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DATA_DATASOURCE_H
#define DISTOPT_DATA_DATASOURCE_H

#include "distrt/tensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace distopt {

/// An input as the rank programs take it.
struct InputSpec {
  std::string name;
  distrt::DType dtype = distrt::DType::kUnspecified;
  distrt::Shape shape; // global
  /// Generated integer values stay in [0, valueBound): the size of the
  /// table the input indexes (2 when it indexes none).
  int64_t valueBound = 2;
};

/// One tensor a batch needs.
struct InputRequest {
  InputSpec input;
  /// The model's name for it: `input.name` without a microbatch suffix.
  std::string base;
  /// The model input's number (input_<index>.pb); not used for labels.
  int index = 0;
  /// A loss's labels (labels.pb; the next tokens).
  bool labels = false;
  /// The microbatch of the step it feeds, of `microbatches`.
  int64_t microbatch = 0, microbatches = 1;
  /// A stored batch holds this many microbatches' rows (a pipeline's
  /// microbatches are row slices of one batch; see TrainingStepInfo).
  int64_t batchSplit = 1;
};

/// Each input once, as a whole batch: input_<i>.pb is input i.
std::vector<InputRequest> wholeBatchRequests(llvm::ArrayRef<InputSpec> inputs);

class DataSource {
public:
  virtual ~DataSource();
  /// What a checkpoint records as the batches' source: "random", "inputs",
  /// "data", "tokens" or "tokens shuffled with seed S".
  virtual llvm::StringRef kind() const = 0;
  /// The tensors of batch `batch` (a training step, or a seed offset), one
  /// per request, in order.
  virtual llvm::Expected<std::vector<distrt::Tensor>>
  read(int64_t batch, llvm::ArrayRef<InputRequest> requests) = 0;
  /// Whether the source can feed `requests` at all, checked before the
  /// first step (a token file too short for one step, say).
  virtual llvm::Error check(llvm::ArrayRef<InputRequest> requests) const {
    return llvm::Error::success();
  }
  /// What the user should hear once about how the source feeds `requests`
  /// (stored data converted to an input's dtype, say).
  virtual std::vector<std::string>
  notes(llvm::ArrayRef<InputRequest> requests) const {
    return {};
  }
  /// How far the source has read after `batches` batches of `requests`
  /// (a checkpoint's data position): the batches, or tokens for a token
  /// file.
  virtual int64_t positionAfter(int64_t batches,
                                llvm::ArrayRef<InputRequest> requests) const {
    return batches;
  }
};

/// Values drawn from `seed` + batch for every input of `inputs` in order
/// (uniform in [-1, 1) for floats, [0, valueBound) for integers, 0/1 for
/// bools), so an input's values do not depend on which others a batch
/// asks for; labels from their own generator (seed * 1000003 + batch):
/// class ids in [0, valueBound) for int64 labels, else uniform in [-1, 1).
/// An error names an input whose dtype it cannot generate.
std::unique_ptr<DataSource> syntheticInputs(std::vector<InputSpec> inputs,
                                            uint64_t seed);

/// input_<k>.pb files (ONNX TensorProto) in `dir`: the file whose tensor
/// has the request's name, else input_<index>.pb. The same every batch.
std::unique_ptr<DataSource> inputFolder(std::string dir);

/// A training case's batches: <dir>/step_K/input_<index>.pb and labels.pb
/// for step K; with microbatches that each have their rows (gradient
/// accumulation), <dir>/step_K/micro_J/. Each file must hold the
/// request's dtype and shape (times batchSplit rows).
std::unique_ptr<DataSource> trainingCaseFolder(std::string dir);

/// A flat file of uint16 tokens (nanoGPT's .bin): next-token batches. Row b
/// of microbatch j of step k starts at token ((k * M + j) * B + b) * T for
/// M microbatches of int64 [B, T] inputs, taken modulo N - T for a file
/// of N tokens (later passes start at other offsets); labels start one
/// token later. check() refuses an odd byte count and a file shorter than
/// one step (M * B * T + 1 tokens). With `shuffleSeed` (nanoGPT's random
/// windows), the row's start is instead a hash of the seed and the row's
/// number r = (k * M + j) * B + b, modulo N - T: reproducible, the same on
/// every mesh, and continued exactly by a resumed run; kind() names the
/// seed, so checkpoints record it.
std::unique_ptr<DataSource>
tokenFile(std::string path, std::optional<uint64_t> shuffleSeed = {});

} // namespace distopt

#endif // DISTOPT_DATA_DATASOURCE_H
