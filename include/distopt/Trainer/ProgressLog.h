//===- ProgressLog.h - what a training run shows per step -------*- C++ -*-===//
//
// The progress line dist-train prints after each step (step K/N, loss,
// learning rate, gradient norm, throughput, elapsed time and the time left)
// and the same numbers as one JSON object per line for --log-file, which
// plotting scripts and experiment trackers read (docs/training.md lists
// the fields).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINER_PROGRESSLOG_H
#define DISTOPT_TRAINER_PROGRESSLOG_H

#include "distopt/Trainer/Trainer.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace distopt {

class ProgressLog {
public:
  /// A run that stops after step `total`; `rateUnit` is "tokens" or
  /// "samples".
  /// With `logFile` non-empty, each record is also appended to that file
  /// (created or truncated here; a resumed run appends when `append`).
  static llvm::Expected<std::unique_ptr<ProgressLog>>
  create(int64_t total, llvm::StringRef rateUnit,
         llvm::StringRef logFile, bool append);

  /// Records a finished step; returns its progress line (no newline).
  std::string step(const StepResult &r);
  /// Records an evaluation after `stepsDone` steps: its line, and a log
  /// record with `eval_loss` and `eval_tokens`.
  std::string evaluation(int64_t stepsDone, double loss, int64_t tokens,
                         double ms);

  /// Seconds since the log was created.
  double elapsedSeconds() const;

private:
  ProgressLog() = default;
  /// Appends one JSON object to the log file, if there is one.
  void record(llvm::json::Object fields);
  int64_t total = 0, done = 0;
  std::string unit;
  double stepSeconds = 0; // of the steps recorded, for the time left
  double startedAt = 0;
  std::unique_ptr<llvm::raw_fd_ostream> file;
};

/// "1.5 s", "2 min 05 s", "1 h 02 min": a duration for people.
std::string formatDuration(double seconds);

} // namespace distopt

#endif // DISTOPT_TRAINER_PROGRESSLOG_H
