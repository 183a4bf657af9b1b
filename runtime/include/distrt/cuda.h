// CUDA support: GPUs as devices for the executor (OpenCudaDevice), the
// `nccl` communicator (device buffers) and a host-staging adapter over it
// (see docs/runtime.md, "Devices" and "The nccl backend").
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
#include "distrt/device.h"

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

struct CudaDeviceOptions {
  // Waiting for the device (Synchronize, copies to the host) fails with
  // DEADLINE_EXCEEDED after this; 0: wait forever.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// CUDA device `index` as a Device for ExecutorOptions::device: a stream of
// its own (several ranks may share one GPU, each with its own device
// object), stream-ordered memory that the executor's buffers reuse across
// runs, and cuBLASLt for the GEMMs. The first call also registers the CUDA
// kernels (docs/runtime.md lists them). FAILED_PRECONDITION ("no CUDA
// device: ...") where there is no GPU.
Status OpenCudaDevice(int index, std::shared_ptr<Device>* out,
                      const CudaDeviceOptions& options = CudaDeviceOptions());

}  // namespace distrt

#endif  // DISTRT_CUDA_H_
