//===- Session.cpp - compiled rank programs ready to run repeatedly -------===//
//
// Local: a distrt::LocalSession (threads). MPI: this process's MpiRank plus
// GatherOutputs to rank 0. NCCL: an executor on a CUDA device over an
// MPI-bootstrapped nccl communicator. The MPI session is process-wide
// (MPI_Init once).
//
//===----------------------------------------------------------------------===//
#include "distopt/Session/Session.h"

#include "distrt/launcher.h"
#ifdef DISTRT_HAS_MPI
#include "distrt/mpi_comm.h"
#endif
#ifdef DISTRT_HAS_CUDA
#include "distrt/cuda.h"
#endif

#include "llvm/ADT/Twine.h"

#include <cstdlib>
#include <cstring>
#include <functional>

using namespace distopt;
using llvm::Expected;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

using Microbatches = std::vector<std::vector<distrt::NamedTensor>>;

Session::~Session() = default;

Expected<Backend> distopt::parseBackend(llvm::StringRef name) {
  if (name == "local")
    return Backend::Local;
  if (name == "mpi") {
#ifdef DISTRT_HAS_MPI
    return Backend::Mpi;
#else
    return fail("backend 'mpi' is not built in (CMake found no MPI); "
                "available: local");
#endif
  }
  if (name == "nccl") {
#if defined(DISTRT_HAS_CUDA) && defined(DISTRT_HAS_NCCL_MPI)
    return Backend::Nccl;
#else
    return fail("backend 'nccl' is not built in (CMake found no CUDA toolkit, "
                "NCCL or MPI); available: local" +
                llvm::Twine(
#ifdef DISTRT_HAS_MPI
                    ", mpi"
#else
                    ""
#endif
                    ));
#endif
  }
  return fail("unknown backend '" + name + "'; choose local, mpi or nccl");
}

#ifdef DISTRT_HAS_MPI
/// MPI_Init once per process; MPI_Finalize at exit.
static std::unique_ptr<distrt::MpiSession> &mpiSession() {
  static std::unique_ptr<distrt::MpiSession> session;
  return session;
}
#endif

Expected<ProcessGroup> distopt::initBackend(Backend backend, int &argc,
                                            char **&argv) {
  if (backend == Backend::Local)
    return ProcessGroup{};
#ifdef DISTRT_HAS_MPI
  auto &session = mpiSession();
  if (!session) {
    distrt::Status st = distrt::MpiSession::Init(&argc, &argv, &session);
    if (!st.ok())
      return fail(st.ToString());
  }
  return ProcessGroup{session->rank(), session->world_size()};
#else
  return fail("this build has no MPI");
#endif
}

/// The device `settings` names for the rank that is `ordinal`-th on this
/// process's GPUs; null for the host. Errors begin with `flag` (the flag
/// that asked for the device; --device by default).
static Expected<std::shared_ptr<distrt::Device>>
openDevice(const DeviceSettings &settings, int ordinal,
           llvm::StringRef flag = "") {
  std::string label =
      flag.empty() ? "--device " + settings.device : flag.str();
  distrt::DeviceSpec spec;
  distrt::Status st = distrt::ParseDeviceSpec(settings.device, &spec);
  if (!st.ok())
    return fail("--device: " + st.message());
  if (spec.kind == distrt::DeviceKind::kCpu)
    return std::shared_ptr<distrt::Device>();
#ifdef DISTRT_HAS_CUDA
  std::string why;
  int gpus = distrt::CudaDeviceCount(&why);
  if (gpus == 0)
    return fail(label + ": " + why);
  bool explicitIndex = settings.device.find(':') != std::string::npos;
  int index = explicitIndex ? spec.index : ordinal % gpus;
  std::shared_ptr<distrt::Device> device;
  st = distrt::OpenCudaDevice(index, &device);
  if (!st.ok())
    return fail(label + ": " + st.ToString());
  return device;
#else
  (void)ordinal;
  return fail(label + ": this build has no CUDA (CMake found no CUDA toolkit)");
#endif
}

/// This process's rank among the processes of its node, as the launcher
/// says (Open MPI, MPICH, Slurm), else `rank`: which of the node's GPUs a
/// process under mpirun takes.
static int nodeLocalRank(int rank) {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "SLURM_LOCALID", "MV2_COMM_WORLD_LOCAL_RANK"}) {
    if (const char *v = std::getenv(name)) {
      int local = 0;
      if (!llvm::StringRef(v).getAsInteger(10, local) && local >= 0)
        return local;
    }
  }
  return rank;
}

namespace {

/// Every rank a thread of this process.
class LocalRunSession : public Session {
public:
  LocalRunSession(Programs programs, std::unique_ptr<distrt::LocalSession> s)
      : programs(std::move(programs)), session(std::move(s)) {}

  Expected<Microbatches> run(const Microbatches &inputs) override {
    size_t ranks = programs.size(), m = inputs.size();
    std::vector<std::vector<std::vector<distrt::Tensor>>> perRank(
        ranks, std::vector<std::vector<distrt::Tensor>>(m));
    for (size_t mb = 0; mb < m; ++mb) {
      std::vector<std::vector<distrt::Tensor>> scattered;
      distrt::Status st =
          distrt::ScatterInputs(programs, inputs[mb], &scattered);
      if (!st.ok())
        return fail(prefix(mb, m) + st.ToString());
      for (size_t r = 0; r < ranks; ++r)
        perRank[r][mb] = std::move(scattered[r]);
    }
    std::vector<std::vector<std::vector<distrt::Tensor>>> outputs;
    distrt::Status st;
    if (microbatchesOf(programs) == 1 && m == 1) {
      std::vector<std::vector<distrt::Tensor>> in(ranks), out;
      for (size_t r = 0; r < ranks; ++r)
        in[r] = std::move(perRank[r][0]);
      st = session->Run(in, &out, &stats);
      outputs.resize(ranks);
      for (size_t r = 0; st.ok() && r < ranks; ++r)
        outputs[r].push_back(std::move(out[r]));
    } else {
      st = session->RunSchedule(perRank, &outputs, &stats);
    }
    if (!st.ok())
      return fail(st.ToString());
    Microbatches global(m);
    for (size_t mb = 0; mb < m; ++mb) {
      std::vector<std::vector<distrt::Tensor>> pieces(ranks);
      for (size_t r = 0; r < ranks; ++r)
        pieces[r] = std::move(outputs[r][mb]);
      st = distrt::AssembleOutputs(programs, pieces, &global[mb]);
      if (!st.ok())
        return fail(prefix(mb, m) + st.ToString());
    }
    return global;
  }
  bool isRoot() const override { return true; }
  Expected<std::vector<distrt::NamedTensor>> persistentState() override {
    std::vector<std::vector<distrt::PersistentTensor>> perRank;
    std::vector<distrt::NamedTensor> global;
    distrt::Status st = session->ReadPersistent(&perRank);
    if (st.ok())
      st = distrt::AssemblePersistent(perRank, &global);
    if (!st.ok())
      return fail(st.ToString());
    return global;
  }
  Expected<std::vector<std::pair<int, std::vector<distrt::PersistentTensor>>>>
  localPersistent() override {
    std::vector<std::vector<distrt::PersistentTensor>> perRank;
    distrt::Status st = session->ReadPersistent(&perRank);
    if (!st.ok())
      return fail(st.ToString());
    std::vector<std::pair<int, std::vector<distrt::PersistentTensor>>> out;
    for (size_t r = 0; r < perRank.size(); ++r)
      out.emplace_back(static_cast<int>(r), std::move(perRank[r]));
    return out;
  }
  llvm::Error writePersistent(
      int rank, const std::vector<distrt::PersistentTensor> &values) override {
    if (rank < 0 || rank >= session->world_size())
      return fail("writePersistent: no rank " + llvm::Twine(rank));
    distrt::Status st = session->executor(rank).WritePersistent(values);
    if (!st.ok())
      return fail(st.ToString());
    return llvm::Error::success();
  }
  std::vector<int> localRanks() const override {
    std::vector<int> out;
    for (int r = 0; r < session->world_size(); ++r)
      out.push_back(r);
    return out;
  }
  std::vector<std::pair<int, distrt::RunStats>> rankStats() const override {
    std::vector<std::pair<int, distrt::RunStats>> out;
    for (size_t r = 0; r < stats.size(); ++r)
      out.emplace_back(static_cast<int>(r), stats[r]);
    return out;
  }

  void clearProfiles() override {
    for (int r = 0; r < session->world_size(); ++r)
      session->executor(r).ClearProfile();
    for (distrt::RunStats &s : stats)
      s.op_times.clear();
  }

  static std::string prefix(size_t mb, size_t m) {
    return m > 1 ? "microbatch " + std::to_string(mb) + ": " : "";
  }

private:
  Programs programs;
  std::unique_ptr<distrt::LocalSession> session;
  std::vector<distrt::RunStats> stats;
};

#ifdef DISTRT_HAS_MPI
/// This process's rank; runs the same steps as every other process and
/// gathers the outputs on process 0.
class ProcessRunSession : public Session {
public:
  using RunFn = std::function<distrt::Status(
      const std::vector<std::vector<distrt::Tensor>> &,
      std::vector<std::vector<distrt::Tensor>> *)>;
  using StatsFn = std::function<distrt::RunStats()>;
  using ReadFn =
      std::function<distrt::Status(std::vector<distrt::PersistentTensor> *)>;
  using WriteFn = std::function<distrt::Status(
      const std::vector<distrt::PersistentTensor> &)>;

  ProcessRunSession(std::shared_ptr<const distrt::Program> program, int rank,
                    RunFn runFn, StatsFn statsFn, ReadFn readFn)
      : program(std::move(program)), rank(rank), runFn(std::move(runFn)),
        statsFn(std::move(statsFn)), readFn(std::move(readFn)) {}

  Expected<Microbatches> run(const Microbatches &inputs) override {
    size_t m = inputs.size();
    std::vector<std::vector<distrt::Tensor>> mine(m), outputs;
    for (size_t mb = 0; mb < m; ++mb) {
      distrt::Status st = distrt::SliceInputs(*program, inputs[mb], &mine[mb]);
      if (!st.ok())
        return fail(st.ToString());
    }
    distrt::Status st = runFn(mine, &outputs);
    if (!st.ok())
      return fail(st.ToString());
    Microbatches global(m);
    for (size_t mb = 0; mb < m; ++mb) {
      st =
          distrt::GatherOutputs(*program, outputs[mb], /*root=*/0, &global[mb]);
      if (!st.ok())
        return fail(st.ToString());
    }
    if (!isRoot())
      global.clear();
    return global;
  }
  bool isRoot() const override { return rank == 0; }
  llvm::Error shareFromRoot(std::vector<distrt::NamedTensor> &t) override {
    distrt::Status st = distrt::BroadcastTensors(/*root=*/0, &t);
    if (!st.ok())
      return fail(st.ToString());
    return llvm::Error::success();
  }
  Expected<std::vector<distrt::NamedTensor>> persistentState() override {
    std::vector<distrt::PersistentTensor> mine;
    std::vector<distrt::NamedTensor> global;
    distrt::Status st = readFn(&mine);
    if (st.ok())
      st = distrt::GatherPersistent(mine, /*root=*/0, &global);
    if (!st.ok())
      return fail(st.ToString());
    return global;
  }
  Expected<std::vector<std::pair<int, std::vector<distrt::PersistentTensor>>>>
  localPersistent() override {
    std::vector<distrt::PersistentTensor> mine;
    distrt::Status st = readFn(&mine);
    if (!st.ok())
      return fail(st.ToString());
    std::vector<std::pair<int, std::vector<distrt::PersistentTensor>>> out;
    out.emplace_back(rank, std::move(mine));
    return out;
  }
  llvm::Error writePersistent(
      int r, const std::vector<distrt::PersistentTensor> &values) override {
    if (r != rank || !writeFn)
      return fail("writePersistent: process " + llvm::Twine(rank) +
                  " does not run rank " + llvm::Twine(r));
    distrt::Status st = writeFn(values);
    if (!st.ok())
      return fail(st.ToString());
    return llvm::Error::success();
  }
  std::vector<int> localRanks() const override { return {rank}; }
  int processIndex() const override { return rank; }
  int processCount() const override { return size; }
  /// One broadcast per process: the messages are small (a checkpoint's
  /// per-file checksums).
  Expected<std::vector<std::string>>
  allGather(const std::string &mine) override {
    std::vector<std::string> all(size);
    for (int root = 0; root < size; ++root) {
      std::vector<distrt::NamedTensor> t(1);
      if (root == rank) {
        distrt::Status st = distrt::Tensor::Allocate(
            distrt::DType::kU8, {static_cast<int64_t>(mine.size())},
            &t[0].tensor);
        if (!st.ok())
          return fail(st.ToString());
        if (!mine.empty())
          std::memcpy(t[0].tensor.raw(), mine.data(), mine.size());
      }
      distrt::Status st = distrt::BroadcastTensors(root, &t);
      if (!st.ok())
        return fail(st.ToString());
      all[root].assign(static_cast<const char *>(t[0].tensor.raw()),
                       t[0].tensor.byte_size());
    }
    return all;
  }
  std::vector<std::pair<int, distrt::RunStats>> rankStats() const override {
    return {{rank, statsFn()}};
  }
  void clearProfiles() override {
    if (clearFn)
      clearFn();
  }
  std::function<void()> clearFn;
  WriteFn writeFn;
  int size = 1;

private:
  std::shared_ptr<const distrt::Program> program;
  int rank;
  RunFn runFn;
  StatsFn statsFn;
  ReadFn readFn;
};
#endif

} // namespace

Expected<std::unique_ptr<Session>>
distopt::createSession(const Programs &programs, Backend backend,
                       int threadsPerRank, bool profile,
                       const DeviceSettings &device) {
  if (backend == Backend::Local) {
    distrt::LocalRunOptions options;
    options.threads_per_rank = threadsPerRank;
    options.profile = profile;
    options.allow_host_fallback = device.hostFallback;
    for (size_t r = 0; r < programs.size(); ++r) {
      auto d = openDevice(device, static_cast<int>(r));
      if (!d)
        return d.takeError();
      if (!*d)
        break;  // the host
      options.devices.push_back(std::move(*d));
    }
    std::unique_ptr<distrt::LocalSession> session;
    distrt::Status st =
        distrt::LocalSession::Create(programs, options, &session);
    if (!st.ok())
      return fail(st.ToString());
    return std::unique_ptr<Session>(
        new LocalRunSession(programs, std::move(session)));
  }
#ifdef DISTRT_HAS_MPI
  auto &mpi = mpiSession();
  if (!mpi)
    return fail("initBackend was not called before createSession");
  if (static_cast<size_t>(mpi->world_size()) != programs.size())
    return fail("the mesh has " + llvm::Twine(programs.size()) +
                " rank(s) but " + llvm::Twine(mpi->world_size()) +
                " MPI process(es) were started (mpirun -np " +
                llvm::Twine(programs.size()) + ")");
  int rank = mpi->rank();
  std::shared_ptr<const distrt::Program> program = programs[rank];
  bool scheduled =
      microbatchesOf(programs) > 1 || program->proto().has_schedule();
  if (backend == Backend::Mpi) {
    distrt::MpiRunOptions options;
    options.threads = threadsPerRank;
    options.profile = profile;
    options.allow_host_fallback = device.hostFallback;
    auto d = openDevice(device, nodeLocalRank(rank));
    if (!d)
      return d.takeError();
    options.device = std::move(*d);
    std::unique_ptr<distrt::MpiRank> mpiRank;
    distrt::Status st = distrt::MpiRank::Create(program, options, &mpiRank);
    if (!st.ok())
      return fail(st.ToString());
    std::shared_ptr<distrt::MpiRank> shared(std::move(mpiRank));
    auto runFn = [shared, scheduled](
                     const std::vector<std::vector<distrt::Tensor>> &in,
                     std::vector<std::vector<distrt::Tensor>> *out) {
      if (scheduled)
        return shared->RunSchedule(in, out);
      out->assign(1, {});
      return shared->Run(in[0], &(*out)[0]);
    };
    auto statsFn = [shared] { return shared->executor().stats(); };
    auto readFn = [shared](std::vector<distrt::PersistentTensor> *out) {
      return shared->executor().ReadPersistent(out);
    };
    auto session = std::make_unique<ProcessRunSession>(program, rank, runFn,
                                                       statsFn, readFn);
    session->clearFn = [shared] { shared->executor().ClearProfile(); };
    session->writeFn =
        [shared](const std::vector<distrt::PersistentTensor> &values) {
          return shared->executor().WritePersistent(values);
        };
    session->size = mpi->world_size();
    return std::unique_ptr<Session>(std::move(session));
  }
#if defined(DISTRT_HAS_CUDA) && defined(DISTRT_HAS_NCCL_MPI)
  if (backend == Backend::Nccl) {
    struct Gpu {
      std::unique_ptr<distrt::Communicator> comm;
      std::unique_ptr<distrt::Executor> exec;
    };
    auto gpu = std::make_shared<Gpu>();
    DeviceSettings onGpu = device;
    if (onGpu.device == "cpu")
      onGpu.device = "cuda";  // NCCL moves device buffers only
    auto d = openDevice(onGpu, nodeLocalRank(rank), "--backend nccl");
    if (!d)
      return d.takeError();
    distrt::NcclCommOptions commOptions;
    commOptions.device = (*d)->index();
    distrt::Status st = distrt::CreateNcclCommunicatorMpi(commOptions, &gpu->comm);
    if (st.ok()) {
      distrt::ExecutorOptions options;
      options.threads = threadsPerRank;
      options.profile = profile;
      options.device = *d;
      options.allow_host_fallback = device.hostFallback;
      st = distrt::Executor::Create(program, gpu->comm.get(), options,
                                    &gpu->exec);
    }
    if (!st.ok())
      return fail(st.ToString());
    auto runFn = [gpu, scheduled](
                     const std::vector<std::vector<distrt::Tensor>> &in,
                     std::vector<std::vector<distrt::Tensor>> *out) {
      if (scheduled)
        return gpu->exec->RunSchedule(in, out);
      out->assign(1, {});
      return gpu->exec->Run(in[0], &(*out)[0]);
    };
    auto statsFn = [gpu] { return gpu->exec->stats(); };
    auto readFn = [gpu](std::vector<distrt::PersistentTensor> *out) {
      return gpu->exec->ReadPersistent(out);
    };
    auto session = std::make_unique<ProcessRunSession>(program, rank, runFn,
                                                       statsFn, readFn);
    session->clearFn = [gpu] { gpu->exec->ClearProfile(); };
    session->writeFn =
        [gpu](const std::vector<distrt::PersistentTensor> &values) {
          return gpu->exec->WritePersistent(values);
        };
    session->size = mpi->world_size();
    return std::unique_ptr<Session>(std::move(session));
  }
#endif
#endif
  return fail("backend not built in");
}

Expected<std::unique_ptr<Session>>
distopt::createSession(const Programs &programs, const RunSettings &settings) {
  return createSession(programs, settings.backend, settings.threadsPerRank,
                       settings.profile, settings.device);
}

Expected<std::vector<distrt::NamedTensor>>
distopt::runLocal(const Programs &programs,
                  const std::vector<distrt::NamedTensor> &inputs,
                  int threadsPerRank) {
  auto session = createSession(programs, Backend::Local, threadsPerRank);
  if (!session)
    return session.takeError();
  auto outputs = (*session)->run({inputs});
  if (!outputs)
    return outputs.takeError();
  return std::move(outputs->front());
}
