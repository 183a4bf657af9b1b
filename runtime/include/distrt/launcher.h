// In-process launcher: runs N rank programs as N threads on the local
// communicator, plus helpers to split global inputs into per-rank pieces and
// to reassemble global outputs from per-rank pieces.
#ifndef DISTRT_LAUNCHER_H_
#define DISTRT_LAUNCHER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distrt/executor.h"
#include "distrt/program.h"

namespace distrt {

struct LocalRunOptions {
  int threads_per_rank = 1;  // ExecutorOptions::threads of every rank
  bool profile = false;      // ExecutorOptions::profile of every rank
  // Longest a rank waits for a peer in a collective or recv.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Rank r runs on devices[r] (ExecutorOptions::device); empty: every rank
  // on the host. Ranks on a GPU exchange collectives through the host.
  std::vector<std::shared_ptr<Device>> devices;
  bool allow_host_fallback = true;  // ExecutorOptions::allow_host_fallback
};

// Runs programs[r] as rank r (programs.size() == world size) with
// inputs[r] (see Executor::Run). Fills (*outputs)[r]. If any rank fails the
// others are aborted and the returned error is the root cause, prefixed with
// "rank R: ". `stats`, if given, receives each rank's RunStats.
Status RunLocal(const std::vector<std::shared_ptr<const Program>>& programs,
                const std::vector<std::vector<Tensor>>& inputs,
                std::vector<std::vector<Tensor>>* outputs,
                const LocalRunOptions& options = LocalRunOptions(),
                std::vector<RunStats>* stats = nullptr);

// Pipeline stages: every rank runs its schedule (Executor::RunSchedule);
// inputs[rank][microbatch] are that rank's inputs for the microbatch.
Status RunLocalSchedule(const std::vector<std::shared_ptr<const Program>>& programs,
                        const std::vector<std::vector<std::vector<Tensor>>>& inputs,
                        std::vector<std::vector<std::vector<Tensor>>>* outputs,
                        const LocalRunOptions& options = LocalRunOptions(),
                        std::vector<RunStats>* stats = nullptr);

class LocalWorld;

// N ranks as N threads on one local communicator, with executors (and their
// loaded weights) kept between runs: what RunLocal does once, for callers
// that run the same programs repeatedly (benchmarks, serving). After a rank
// fails, the session refuses further runs.
class LocalSession {
 public:
  // Checks that programs[r] is rank r of programs.size() and creates every
  // rank's executor (loading its weights), in parallel.
  static Status Create(const std::vector<std::shared_ptr<const Program>>& programs,
                       const LocalRunOptions& options, std::unique_ptr<LocalSession>* out);
  ~LocalSession();
  LocalSession(const LocalSession&) = delete;
  LocalSession& operator=(const LocalSession&) = delete;

  int world_size() const;
  // As RunLocal / RunLocalSchedule, on the session's executors.
  Status Run(const std::vector<std::vector<Tensor>>& inputs,
             std::vector<std::vector<Tensor>>* outputs, std::vector<RunStats>* stats = nullptr);
  Status RunSchedule(const std::vector<std::vector<std::vector<Tensor>>>& inputs,
                     std::vector<std::vector<std::vector<Tensor>>>* outputs,
                     std::vector<RunStats>* stats = nullptr);

  // Rank r's executor (0 <= r < world_size()). Use it between runs only.
  Executor& executor(int rank) { return *execs_[static_cast<size_t>(rank)]; }
  const Executor& executor(int rank) const { return *execs_[static_cast<size_t>(rank)]; }
  // Every rank's training state (Executor::ReadPersistent), index = rank.
  // AssemblePersistent turns it into global tensors.
  Status ReadPersistent(std::vector<std::vector<PersistentTensor>>* per_rank) const;

 private:
  LocalSession() = default;
  Status RunEach(const std::function<Status(Executor&, int)>& body, std::vector<RunStats>* stats);
  std::shared_ptr<LocalWorld> world_;
  std::vector<std::unique_ptr<Executor>> execs_;
  Status broken_;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// For every rank, cuts each program input (matched by Argument.name) out of
// the global tensor of that name according to Argument.slice.
Status ScatterInputs(const std::vector<std::shared_ptr<const Program>>& programs,
                     const std::vector<NamedTensor>& global,
                     std::vector<std::vector<Tensor>>* per_rank);

// One rank's share of ScatterInputs: cuts `program`'s inputs out of the global
// tensors. For launchers where each process knows only its own program (MPI).
Status SliceInputs(const Program& program, const std::vector<NamedTensor>& global,
                   std::vector<Tensor>* mine);

// Rebuilds each global output (by Argument.name, in order of first
// appearance) from the ranks' pieces placed by Argument.slice. Pieces at the
// same place (replicas) are taken once. Fails if a part of a global tensor is
// covered by no rank.
Status AssembleOutputs(const std::vector<std::shared_ptr<const Program>>& programs,
                       const std::vector<std::vector<Tensor>>& per_rank,
                       std::vector<NamedTensor>* global);

// Rebuilds each global training-state tensor (by Weight.name, in order of
// first appearance) from the ranks' pieces (per_rank[r]: rank r's
// Executor::ReadPersistent) placed by Weight.slice, as AssembleOutputs does
// for outputs: replicas taken once, every global element covered.
Status AssemblePersistent(const std::vector<std::vector<PersistentTensor>>& per_rank,
                          std::vector<NamedTensor>* global);

// One output tensor of one rank with the Argument (name, slice) its program
// declares for it.
struct OutputPiece {
  int rank = 0;
  proto::Argument argument;
  Tensor tensor;
};
// What AssembleOutputs does after pairing outputs with their Arguments:
// global tensors in order of first appearance, replicas taken once, every
// global element covered.
Status AssembleOutputPieces(const std::vector<OutputPiece>& pieces,
                            std::vector<NamedTensor>* global);

}  // namespace distrt

#endif  // DISTRT_LAUNCHER_H_
