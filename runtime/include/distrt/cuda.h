// CUDA support: the `nccl` communicator (device buffers), a host-staging
// adapter over it, and CudaExecutor, which runs a rank program with its
// tensors on one GPU (device kernels where distrt has them, a documented
// host fallback elsewhere; see docs/runtime.md, "The nccl backend and the
// CUDA path").
//
// Built only when CMake finds the CUDA toolkit and NCCL (target
// `distrt_cuda`, which defines DISTRT_HAS_CUDA=1 for its users; with MPI too
// it also defines DISTRT_HAS_NCCL_MPI=1). This header includes no CUDA or
// NCCL header. Every entry point fails cleanly (FAILED_PRECONDITION, "no CUDA
// device: ...") on a machine without a GPU.
#ifndef DISTRT_CUDA_H_
#define DISTRT_CUDA_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distrt/communicator.h"
#include "distrt/executor.h"
#include "distrt/program.h"

namespace distrt {

// Number of usable CUDA devices: 0 when there is no driver or no device, and
// then `why` (if given) says so, e.g. "no CUDA device: cudaGetDeviceCount:
// CUDA driver version is insufficient for CUDA runtime version".
int CudaDeviceCount(std::string* why = nullptr);

// NCCL's unique id (ncclUniqueId), opaque here. Rank 0 makes one; every rank
// of the world must get the same bytes.
struct NcclId {
  char bytes[128] = {};
};
Status NewNcclId(NcclId* id);
std::string NcclIdToHex(const NcclId& id);
Status NcclIdFromHex(const std::string& hex, NcclId* id);

struct NcclCommOptions {
  // This rank's CUDA device; -1: rank % CudaDeviceCount().
  int device = -1;
  // Every wait for the GPU or a peer (stream synchronisation, bootstrap)
  // fails with DEADLINE_EXCEEDED after this ("rank R: no progress in <call>
  // for Ns") and aborts the NCCL communicators (ncclCommAbort).
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Fingerprint check of every collective, as for the mpi backend (one small
  // ncclAllGather and a device-to-host copy per collective).
  bool check_collectives = true;
  // Called by Abort(reason) after the NCCL communicators are aborted (the MPI
  // bootstrap installs one that calls MPI_Abort, so peers stop too).
  std::function<void(int rank, const Status& reason)> on_abort;
};

// The `nccl` communicator: every buffer argument is a DEVICE pointer on
// this rank's device. Collective over all `world_size` ranks, which pass the
// same id. Groups get their own NCCL communicators on first use (ids sent by
// the group's first member over the world communicator); all_reduce maps to
// ncclAllReduce (avg = sum, then a divide kernel; max/min on floats carry
// NaN through a mask all-reduce; i16 reduces on the host), equal-size
// all_gather / reduce_scatter to ncclAllGather / ncclReduceScatter, uneven
// ones and all_to_all / collective_permute to grouped ncclSend/ncclRecv.
// Send copies the data and returns; messages carry a (size, tag) header so
// sizes are checked and tags may be received out of order.
Status CreateNcclCommunicator(const NcclId& id, int rank, int world_size,
                              const NcclCommOptions& options, std::unique_ptr<Communicator>* out);

// Rendezvous through a file every rank can read (shared file system or one
// machine): rank 0 writes a fresh id to `path` (atomically), the others wait
// for it up to options.timeout. An empty `path` means the environment
// variable DISTRT_NCCL_ID.
Status CreateNcclCommunicatorFromFile(const std::string& path, int rank, int world_size,
                                      const NcclCommOptions& options,
                                      std::unique_ptr<Communicator>* out);

// Bootstrap through MPI (one process per rank under mpirun): rank 0 makes
// the id, MPI_Bcast sends it; rank and size are MPI_COMM_WORLD's. Unless
// options.on_abort is set, Abort prints the reason and calls MPI_Abort.
// Defined only when built with MPI (DISTRT_HAS_NCCL_MPI).
Status CreateNcclCommunicatorMpi(const NcclCommOptions& options,
                                 std::unique_ptr<Communicator>* out);

// A Communicator on HOST buffers over a nccl communicator (not owned): each
// call copies its inputs to device memory, runs the nccl call and copies the
// results back. For host code such as the CPU communication kernels; costs
// two PCIe copies per call.
Status NewHostStagingCommunicator(Communicator* nccl, std::unique_ptr<Communicator>* out);

struct CudaExecutorOptions {
  // The device; -1: the communicator's device (nccl), else device 0.
  int device = -1;
  // Instructions without a device kernel run on the host (inputs copied
  // down, CPU kernel, outputs copied up). False: Create fails on the first
  // such instruction instead.
  bool allow_host_fallback = true;
  int host_threads = 1;  // ExecutorOptions::threads for the host fallback
};

struct CudaRunStats {
  int64_t device_instructions = 0;  // ran as device kernels (incl. aliases)
  int64_t host_instructions = 0;    // ran through the host fallback
  int64_t device_collectives = 0;   // all_reduce straight on device buffers
  int64_t bytes_to_host = 0;        // fallback copies, outputs excluded
  int64_t bytes_to_device = 0;      // fallback copies, inputs excluded
  double seconds = 0;
};

// Runs one rank program with its values in device memory. Device kernels:
// elementwise f32 ops (neg abs exp log sqrt reciprocal tanh sigmoid erf relu
// sin cos floor ceil round sign gelu leaky_relu; add sub mul div pow max min
// with broadcasting up to 8 dims), f32 matmul through
// cublasSgemmStridedBatched (same or one-sided broadcast batch dims),
// reshape/identity as aliases, and all_reduce straight through a nccl
// communicator. Everything else (other dtypes, other ops, the other
// collectives) takes the host fallback, counted in CudaRunStats and listed
// by Placement(). `comm` may be a nccl communicator (device collectives), a
// host one (local/mpi: every collective on the host), or null for programs
// that do not communicate.
class CudaExecutor {
 public:
  static Status Create(std::shared_ptr<const Program> program, Communicator* comm,
                       const CudaExecutorOptions& options, std::unique_ptr<CudaExecutor>* out);
  ~CudaExecutor();

  // Host tensors in, host tensors out (inputs are copied to the device,
  // outputs back). On failure the communicator is aborted, as Executor does.
  // Weight updates are applied on the device after a successful run, as
  // Executor::Run does on the host.
  Status Run(const std::vector<HostTensor>& inputs, std::vector<HostTensor>* outputs);

  // As Executor::ReadPersistent: the training state, copied to the host.
  Status ReadPersistent(std::vector<PersistentTensor>* out) const;
  // As Executor::WritePersistent: host values copied into the weights.
  Status WritePersistent(const std::vector<PersistentTensor>& values);

  // Per instruction: "device", "alias", "nccl" or "host".
  std::vector<std::string> Placement() const;
  const CudaRunStats& stats() const;

  struct Impl;

 private:
  CudaExecutor() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace distrt

#endif  // DISTRT_CUDA_H_
