// The `local` communicator backend: N ranks as N threads of one process,
// exchanging data through shared memory.
#ifndef DISTRT_LOCAL_COMM_H_
#define DISTRT_LOCAL_COMM_H_

#include <chrono>
#include <memory>

#include "distrt/communicator.h"

namespace distrt {

struct LocalCommOptions {
  // Longest any blocking call waits for its peers before failing with
  // DEADLINE_EXCEEDED ("timed out after Ns waiting for rank R in ...").
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Whether a rank waiting for its peers polls for a while (some hundreds
  // of microseconds) before it sleeps. A sleep and its wake-up cost tens of
  // microseconds per collective; polling is worth it only while every
  // thread of the world has a core of its own, else the poller delays the
  // very peer it waits for.
  bool poll_before_sleeping = false;
};

// Whether `threads` threads in all each have a core of this machine: the
// rule for LocalCommOptions::poll_before_sleeping.
bool ThreadsHaveOwnCores(int threads);

// Shared state of one local "world". Create it once, hand comm(r) to the
// thread that runs rank r. Collectives on different groups may run
// concurrently; calls of one rank are sequential (one thread per rank).
//
// Every collective first exchanges a descriptor (kind, dtype, reduction,
// counts) with the other members; if they disagree, every member fails with
// a message naming both calls. If a rank fails and calls Abort(), or finishes
// its program (MarkFinished) while peers still wait for it, the peers fail
// with that reason instead of hanging.
class LocalWorld {
 public:
  static Status Create(int world_size, const LocalCommOptions& options,
                       std::shared_ptr<LocalWorld>* out);
  ~LocalWorld();

  int world_size() const;
  // The communicator of `rank` (owned by the world). Null if out of range.
  Communicator* comm(int rank);
  // Rank `rank` will make no more calls (its program ended).
  void MarkFinished(int rank);
  // Starts another run of the same ranks (LocalSession): clears the
  // finished marks. Call only while no rank is in a call. Fails if the
  // world was aborted or a message sent in the last run was never received.
  Status StartRun();
  // Rank `rank` failed: every waiting and future call fails with this reason.
  void Abort(int rank, const Status& reason);
  // The first failure reported through Abort, or OK.
  Status abort_status() const;

  struct State;  // implementation detail

 private:
  LocalWorld() = default;
  std::unique_ptr<State> state_;
};

}  // namespace distrt

#endif  // DISTRT_LOCAL_COMM_H_
