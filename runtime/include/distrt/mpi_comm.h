// The `mpi` communicator backend (Open MPI, one process per rank, started by
// `mpirun -np N`) and the launcher pieces for one MPI process.
//
// Built only when CMake finds MPI (target `distrt_mpi`, which defines
// DISTRT_HAS_MPI=1 for its users). This header does not include <mpi.h>.
//
// A tool that runs rank programs under MPI (what `dist-run --backend mpi`
// does; see docs/runtime.md, "The mpi backend"):
//
//   std::unique_ptr<distrt::MpiSession> mpi;
//   DISTRT_RETURN_IF_ERROR(distrt::MpiSession::Init(&argc, &argv, &mpi));
//   // every process compiles or loads its program(s) ...
//   std::shared_ptr<const distrt::Program> mine = programs[mpi->rank()];
//   std::vector<distrt::Tensor> ins, outs;
//   DISTRT_RETURN_IF_ERROR(distrt::SliceInputs(*mine, global_inputs, &ins));
//   DISTRT_RETURN_IF_ERROR(distrt::RunMpiRank(mine, ins, &outs));
//   std::vector<distrt::NamedTensor> global;   // filled on rank 0 only
//   DISTRT_RETURN_IF_ERROR(distrt::GatherOutputs(*mine, outs, /*root=*/0, &global));
#ifndef DISTRT_MPI_COMM_H_
#define DISTRT_MPI_COMM_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "distrt/communicator.h"
#include "distrt/executor.h"
#include "distrt/launcher.h"
#include "distrt/program.h"

namespace distrt {

struct MpiCommOptions {
  // Watchdog: a blocking MPI call (collective, recv, creating a group's
  // communicator, flushing sends) that has not returned after `timeout`
  // ends the whole job: stderr gets "distrt[mpi]: rank R: no progress in
  // <call> on group [...] for Ns (<phase>); ending this process ..." and the
  // process exits with code 124 (not MPI_Abort: see docs/runtime.md), which
  // makes mpirun terminate every rank. Zero disables the watchdog. The environment variable
  // DISTRT_MPI_TIMEOUT (seconds, may be fractional) overrides this.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Before each collective the members exchange a 16-byte fingerprint of the
  // call (kind, dtype, reduction, counts, point-to-point pairing); when they
  // disagree they exchange full descriptors and every member fails with
  // FAILED_PRECONDITION naming both calls, as the local backend does.
  // Costs one small MPI_Allgather per collective. DISTRT_MPI_CHECK=0/1
  // overrides this.
  bool check_collectives = true;
  // Abort(reason) (what the executor calls when this rank fails): print
  // "distrt[mpi]: rank R failed: <reason>; aborting the job" on stderr and
  // call MPI_Abort(MPI_COMM_WORLD, 1), so no peer waits for this rank. With
  // false, Abort only marks this communicator failed (later calls return
  // ABORTED) and peers are stopped by their own watchdogs.
  bool abort_job_on_error = true;
};

// Initialises MPI (MPI_Init_thread, asking for MPI_THREAD_FUNNELED) unless it
// is already initialised, and finalises it on destruction if it initialised
// it (after a barrier over all ranks: see docs/runtime.md, "Faults under
// MPI"). Create one per process, before any other MPI call; destroy it after
// every MPI communicator is gone.
class MpiSession {
 public:
  static Status Init(int* argc, char*** argv, std::unique_ptr<MpiSession>* out);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // "Open MPI v4.1.4, ..." (MPI_Get_library_version, first line).
  std::string library_version() const;

 private:
  MpiSession() = default;
  bool owns_ = false;
  int rank_ = 0;
  int world_size_ = 1;
};

// The communicator of this process over all processes of MPI_COMM_WORLD
// (duplicated, so it never interferes with the caller's own MPI traffic).
// Collective: every process must call it. Groups map to sub-communicators
// created on first use (MPI_Comm_create_group, collective over the group's
// members only) and cached; collectives map to MPI_Allreduce,
// MPI_Allgather(v), MPI_Reduce_scatter, MPI_Alltoallv and MPI_Sendrecv.
// Send is buffered (MPI_Isend of a copy): it never waits for the receiver.
// Destroying the communicator waits for outstanding sends (watchdog-bound).
Status CreateMpiCommunicator(const MpiCommOptions& options, std::unique_ptr<Communicator>* out);

// The options with the DISTRT_MPI_TIMEOUT / DISTRT_MPI_CHECK environment
// overrides applied.
MpiCommOptions ApplyMpiEnvOverrides(MpiCommOptions options);

struct MpiRunOptions {
  int threads = 1;       // ExecutorOptions::threads of this rank
  bool profile = false;  // ExecutorOptions::profile of this rank
  MpiCommOptions comm;
  // ExecutorOptions::device and allow_host_fallback of this rank (a GPU's
  // collectives then go through the host and MPI).
  std::shared_ptr<Device> device;
  bool allow_host_fallback = true;
};

// One MPI process's rank: communicator plus executor, for repeated runs.
// Create is collective over all processes.
class MpiRank {
 public:
  // The program must be rank MPI_Comm_rank of MPI_Comm_size. If it is not, or
  // its weights cannot be loaded, the failure is reported through the
  // communicator's Abort (so with abort_job_on_error the job stops).
  static Status Create(std::shared_ptr<const Program> program, const MpiRunOptions& options,
                       std::unique_ptr<MpiRank>* out);
  ~MpiRank();

  Status Run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs);
  // Pipeline stages: inputs[m] / (*outputs)[m] belong to microbatch m.
  Status RunSchedule(const std::vector<std::vector<Tensor>>& inputs,
                     std::vector<std::vector<Tensor>>* outputs);

  Communicator* comm() { return comm_.get(); }
  Executor& executor() { return *exec_; }

 private:
  MpiRank() = default;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Executor> exec_;
};

// Runs `program` once as this process's rank (MpiRank::Create + Run). On a
// failure of this rank the job is aborted with the message on stderr (see
// MpiCommOptions::abort_job_on_error). `stats`, if given, gets the RunStats.
Status RunMpiRank(std::shared_ptr<const Program> program, const std::vector<Tensor>& my_inputs,
                  std::vector<Tensor>* my_outputs,
                  const MpiRunOptions& options = MpiRunOptions(), RunStats* stats = nullptr);
Status RunMpiRankSchedule(std::shared_ptr<const Program> program,
                          const std::vector<std::vector<Tensor>>& my_inputs,
                          std::vector<std::vector<Tensor>>* my_outputs,
                          const MpiRunOptions& options = MpiRunOptions(),
                          RunStats* stats = nullptr);

// Collective over MPI_COMM_WORLD: every rank sends its outputs (with their
// Argument name and slice from `program`) to `root`, which assembles the
// global tensors exactly as AssembleOutputs does. `global` is filled on root
// and cleared elsewhere. Needs only this rank's program.
Status GatherOutputs(const Program& program, const std::vector<Tensor>& my_outputs, int root,
                     std::vector<NamedTensor>* global);

// Collective over MPI_COMM_WORLD: every rank sends its training state
// (`mine`: its Executor::ReadPersistent) to `root`, which assembles the
// global tensors by Weight.name and slice as AssemblePersistent does.
// `global` is filled on root and cleared elsewhere.
Status GatherPersistent(const std::vector<PersistentTensor>& mine, int root,
                        std::vector<NamedTensor>* global);

// Collective over MPI_COMM_WORLD: root's `tensors` (names, dtypes, shapes,
// data) replace every other rank's. For tools that read inputs on one rank.
Status BroadcastTensors(int root, std::vector<NamedTensor>* tensors);

}  // namespace distrt

#endif  // DISTRT_MPI_COMM_H_
