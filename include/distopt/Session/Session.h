//===- Session.h - rank programs ready to run repeatedly --------*- C++ -*-===//
//
// A session holds the executors (and loaded weights) of compiled rank
// programs on one communicator backend, so a tool can run them many times:
// `local` runs every rank as a thread of this process; `mpi` runs this
// process's rank under mpirun (one process per rank); `nccl` does the same
// with a GPU per process. Outputs are reassembled into global tensors on the
// root process.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_SESSION_SESSION_H
#define DISTOPT_SESSION_SESSION_H

#include "distopt/Session/RankPrograms.h"

#include "distrt/launcher.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace distopt {

enum class Backend { Local, Mpi, Nccl };

/// Parses "local", "mpi" or "nccl"; an error names the choices and says
/// which are not built in.
llvm::Expected<Backend> parseBackend(llvm::StringRef name);

/// Process-wide set-up a backend needs before it runs anything (MPI_Init for
/// `mpi` and `nccl`); a no-op for `local`. Returns this process's rank and
/// the number of processes (0 and 1 for `local`). Call once, early.
struct ProcessGroup {
  int rank = 0;
  int size = 1;
};
llvm::Expected<ProcessGroup> initBackend(Backend backend, int &argc,
                                         char **&argv);

class Session {
public:
  virtual ~Session();
  /// Runs one step: `inputs[m]` are microbatch m's global inputs (one entry
  /// for programs without a pipeline schedule). Returns each microbatch's
  /// global outputs on the root process; other processes get an empty list.
  virtual llvm::Expected<std::vector<std::vector<distrt::NamedTensor>>>
  run(const std::vector<std::vector<distrt::NamedTensor>> &inputs) = 0;
  /// Whether this process holds the outputs (and should print and check).
  virtual bool isRoot() const = 0;
  /// A training step's state after the last run (parameters and optimizer
  /// states), assembled into global tensors by name on the root process;
  /// empty elsewhere.
  virtual llvm::Expected<std::vector<distrt::NamedTensor>>
  persistentState() = 0;
  /// The training state of the ranks this process runs, as their local
  /// pieces (each PersistentTensor's weight points into that rank's
  /// program): (rank, pieces), by rank.
  virtual llvm::Expected<
      std::vector<std::pair<int, std::vector<distrt::PersistentTensor>>>>
  localPersistent() = 0;
  /// Replaces the training state of `rank` (one this process runs) with
  /// `values` (Executor::WritePersistent: all checked before any is
  /// written).
  virtual llvm::Error
  writePersistent(int rank,
                  const std::vector<distrt::PersistentTensor> &values) = 0;
  /// The ranks this process runs (every rank for the local backend).
  virtual std::vector<int> localRanks() const = 0;
  /// This process's index and the number of processes (0 and 1 for the
  /// local backend, which runs every rank).
  virtual int processIndex() const { return 0; }
  virtual int processCount() const { return 1; }
  /// Every process's `mine`, in process order, on every process (a
  /// collective under MPI; also a barrier).
  virtual llvm::Expected<std::vector<std::string>>
  allGather(const std::string &mine) {
    return std::vector<std::string>{mine};
  }
  /// Makes every process hold the root process's `tensors` (a decision
  /// only the root can take, such as stopping on a NaN loss). A no-op for
  /// the local backend.
  virtual llvm::Error shareFromRoot(std::vector<distrt::NamedTensor> &tensors) {
    return llvm::Error::success();
  }
  /// The executor statistics (weight bytes, peak activation bytes) of the
  /// ranks this process runs, after the last run: (rank, stats).
  virtual std::vector<std::pair<int, distrt::RunStats>> rankStats() const = 0;
  /// Starts the ranks' profiles afresh (--profile after warm-up steps).
  virtual void clearProfiles() {}
};

/// Where a session's ranks run.
struct DeviceSettings {
  /// "cpu", "cuda" (rank r on GPU r % GPUs; under mpi/nccl the process's
  /// rank on its node, from the launcher's environment) or "cuda:N" (every
  /// rank of this process on GPU N).
  std::string device = "cpu";
  /// Instructions without a kernel for the device run on the host (copies
  /// counted in the statistics); false: an error names the first one.
  bool hostFallback = true;
};

/// How a tool runs its sessions (RunFlags.h: --backend, --threads,
/// --profile, --device, --no-host-fallback, --fusion-target).
struct RunSettings {
  Backend backend = Backend::Local;
  int threadsPerRank = 1;
  /// Time every instruction (ExecutorOptions::profile).
  bool profile = false;
  DeviceSettings device;
  /// The target description the programs are compiled for (cpu, cuda,
  /// none); empty: that of the device they run on (compileForDevice).
  std::string fusionTarget;
};

/// Creates the executors of `programs` on `backend` (each process loads only
/// its own rank's weights under mpi/nccl). The number of processes must
/// equal the number of programs for mpi/nccl. The nccl backend runs on GPUs
/// whatever `device` says; local and mpi ranks on a GPU exchange their
/// collectives through the host.
llvm::Expected<std::unique_ptr<Session>>
createSession(const Programs &programs, Backend backend, int threadsPerRank,
              bool profile = false, const DeviceSettings &device = {});
/// The same, as `settings` say.
llvm::Expected<std::unique_ptr<Session>>
createSession(const Programs &programs, const RunSettings &settings);

/// Runs every rank once on the in-process backend and reassembles the
/// outputs (a one-step local session).
llvm::Expected<std::vector<distrt::NamedTensor>>
runLocal(const Programs &programs,
         const std::vector<distrt::NamedTensor> &inputs, int threadsPerRank);

} // namespace distopt

#endif // DISTOPT_SESSION_SESSION_H
