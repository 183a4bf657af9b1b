//===- CheckpointState.h - what a save and a load share ---------*- C++ -*-===//
//
// Every process computes the same table of the programs' training-state
// slots (rank, tensor, box) from the programs alone, so the choice of which
// rank writes a replicated piece needs no communication; the processes only
// exchange their files' checksums (save) and their success (save and load)
// through Session::allGather.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_CHECKPOINT_CHECKPOINTSTATE_H
#define DISTOPT_LIB_CHECKPOINT_CHECKPOINTSTATE_H

#include "distopt/Checkpoint/Checkpoint.h"

#include <map>

namespace distopt::checkpoint {

/// One rank's copy of (a piece of) one training-state tensor.
struct Slot {
  int rank = 0;
  const distrt::proto::Weight *weight = nullptr;
  distrt::DType dtype = distrt::DType::kUnspecified;
  std::vector<int64_t> global, offsets, sizes;
  bool writes = false; // the lowest rank holding this box writes it
  /// A compute copy (`copy_of`): not stored; a load reads its box of the
  /// master's tensor and rounds it to `dtype`.
  bool copy = false;
};

/// Every rank's slots, in rank order.
llvm::Expected<std::vector<Slot>> stateSlots(const Programs &programs);

/// The model's training-state tensors: name -> (dtype, global shape), and
/// their fingerprint (compute copies left out: they are not stored).
std::map<std::string, std::pair<distrt::DType, std::vector<int64_t>>>
stateTensors(const std::vector<Slot> &slots, std::string *fp);

/// "rank-00003.safetensors".
std::string rankFileName(int rank);

/// `dir`/`name`.
std::string joinPath(llvm::StringRef dir, llvm::StringRef name);

/// Agrees on success: every process's error ("" for none) is exchanged;
/// the first one fails every process.
llvm::Error agree(Session &session, llvm::Error mine, llvm::StringRef what);

/// An error with `message`.
llvm::Error fail(const llvm::Twine &message);

} // namespace distopt::checkpoint

#endif // DISTOPT_LIB_CHECKPOINT_CHECKPOINTSTATE_H
