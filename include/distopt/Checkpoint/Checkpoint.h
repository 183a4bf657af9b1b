//===- Checkpoint.h - save and resume sharded training state ----*- C++ -*-===//
//
// Saves a training run's state (parameters and optimizer states, as the
// ranks hold them) into a checkpoint directory, each rank writing only its
// own pieces, and loads it back into the ranks of any mesh and plan, each
// rank reading only the saved pieces that overlap its slices. Both are
// collective: every process of the session calls them. The layout is
// docs/checkpoints.md; the files' form is CheckpointFormat.h.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_CHECKPOINT_CHECKPOINT_H
#define DISTOPT_CHECKPOINT_CHECKPOINT_H

#include "distopt/Checkpoint/CheckpointFiles.h"
#include "distopt/Checkpoint/CheckpointFormat.h"
#include "distopt/Session/Session.h"

namespace distopt {

/// What a checkpoint records beside the tensors.
struct CheckpointMeta {
  int64_t step = 0; // steps completed
  std::string modelFile, mesh, plan, configFile, configText;
  std::string dataSource; // DataSource::kind(): "data", "tokens", "random", ...
  int64_t dataPosition = 0;
  std::optional<checkpoint::ScalerRecord> scaler;
};

/// What one process did: bytes of checkpoint files it wrote or read (its
/// ranks' files, and index.json) and the wall time, for each rank it runs.
struct CheckpointIO {
  std::vector<std::pair<int, uint64_t>> bytesPerRank;
  uint64_t indexBytes = 0;
  double seconds = 0;
  /// Temporary directories of saves whose process died (`<dir>.tmp-<pid>`
  /// of a killed run), removed by this save.
  std::vector<std::string> removedStale;
};

/// Whether saveCheckpoint may write `dir`: absent, empty or a checkpoint
/// (index.json), with a writable parent. Callers check before training, so
/// a run is not lost to a refusal at its end.
llvm::Error checkCheckpointTarget(llvm::StringRef dir);

/// Writes the session's training state into `dir`: first into
/// `<dir>.tmp-<pid>`, every file fsync'ed, then swapped into place, so an
/// interrupted save leaves the previous checkpoint in `dir` as it was.
/// Pieces several ranks hold (replicated) are written by the lowest of
/// them. The files are written through `files` (POSIX calls when null).
llvm::Error saveCheckpoint(Session &session, const Programs &programs,
                           llvm::StringRef dir, const CheckpointMeta &meta,
                           CheckpointIO *io = nullptr,
                           CheckpointFiles *files = nullptr);

/// Loads the state in `dir` into the session's ranks and returns its
/// metadata. Refuses (and loads nothing into any rank) a checkpoint whose
/// tensors differ from the programs' training state (names, shapes,
/// dtypes), whose index.json is malformed, or whose files are missing,
/// truncated or fail their checksums; the error names the file and tensor.
llvm::Expected<CheckpointMeta> loadCheckpoint(Session &session,
                                              const Programs &programs,
                                              llvm::StringRef dir,
                                              CheckpointIO *io = nullptr);

} // namespace distopt

#endif // DISTOPT_CHECKPOINT_CHECKPOINT_H
