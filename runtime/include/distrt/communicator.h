// The Communicator interface: collectives and point-to-point transfers on
// contiguous buffers, for one rank. Backends: local (threads in one process,
// local_comm.h); MPI and NCCL implement the same interface.
#ifndef DISTRT_COMMUNICATOR_H_
#define DISTRT_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distrt/device.h"
#include "distrt/dtype.h"
#include "distrt/status.h"

namespace distrt {

enum class ReduceOp { kSum, kMax, kMin, kAvg, kProd };
const char* ReduceOpName(ReduceOp op);
Status ParseReduceOp(const std::string& name, ReduceOp* out);

// Global ranks taking part in a collective, in collective order. The caller's
// rank must be a member; members are distinct.
using Group = std::vector<int>;
std::string GroupToString(const Group& group);  // "[0, 2, 4]"

// One collective of any kind as a value, for Communicator::Start and Run.
// Counts are in elements of `dtype`; the fields a kind does not use are
// ignored.
struct CollectiveCall {
  enum class Kind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kCollectivePermute };
  Kind kind = Kind::kAllReduce;
  Group group;
  const void* send = nullptr;
  void* recv = nullptr;
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;       // all_reduce, reduce_scatter
  int64_t count = 0;                  // all_reduce
  std::vector<int64_t> counts;        // all_gather, reduce_scatter; all_to_all: sent
  std::vector<int64_t> recv_counts;   // all_to_all
  int64_t send_count = 0;             // collective_permute
  int64_t recv_count = 0;             // collective_permute
  int target = -1, source = -1;       // collective_permute

  // Elements this rank sends from `send` and receives into `recv`; -1 if
  // the caller is not in the group.
  int64_t SendElements(int rank) const;
  int64_t RecvElements(int rank) const;
};

// A started collective; Wait completes it.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual Status Wait() = 0;
};

// Counts are in elements of `dtype`; "member i" is group[i]. Buffers are
// contiguous and must not overlap unless stated. Every call blocks until this
// rank's part is done (its receive buffer filled, its send buffer no longer
// needed). A failed call leaves the communicator unusable for the group; the
// caller reports the error and calls Abort().
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string backend() const = 0;  // "local", "mpi", "nccl"
  // Where the buffers of every call must live: the host (local, mpi) or a
  // CUDA device's memory (nccl).
  virtual DeviceKind buffer_device() const { return DeviceKind::kCpu; }

  // The non-blocking form of the collectives: starts `call` and hands back
  // what completes it, so that independent work can run in between. A
  // device communicator orders the call after the work queued so far on
  // `stream` (a cudaStream_t) and Wait orders the work queued on `stream`
  // afterwards behind it, without the host waiting; a host backend
  // completes the call here (the default, over the blocking calls below)
  // and Wait returns at once. The buffers must stay valid until Wait.
  virtual Status Start(const CollectiveCall& call, void* stream,
                       std::unique_ptr<PendingCollective>* pending);
  // The blocking call `call` names.
  Status Run(const CollectiveCall& call);

  // recv[k] = op over members of send[k], k < count. send == recv allowed.
  virtual Status AllReduce(const Group& group, const void* send, void* recv, int64_t count,
                           DType dtype, ReduceOp op) = 0;
  // recv = concat over members i of their send (counts[i] elements each).
  // This rank sends counts[own index] elements.
  virtual Status AllGather(const Group& group, const void* send, void* recv,
                           const std::vector<int64_t>& counts, DType dtype) = 0;
  // send holds sum(counts) elements, member-major; member i receives the
  // reduction of everybody's i-th block (counts[i] elements).
  virtual Status ReduceScatter(const Group& group, const void* send, void* recv,
                               const std::vector<int64_t>& counts, DType dtype, ReduceOp op) = 0;
  // send holds send_counts[j] elements for member j (member-major); recv gets
  // recv_counts[j] elements from member j (member-major).
  virtual Status AllToAll(const Group& group, const void* send,
                          const std::vector<int64_t>& send_counts, void* recv,
                          const std::vector<int64_t>& recv_counts, DType dtype) = 0;
  // Sends `send_count` elements to global rank `target` (-1: none) and receives
  // `recv_count` elements from global rank `source` (-1: none) in one step of
  // the group (all members call it).
  virtual Status CollectivePermute(const Group& group, const void* send, int64_t send_count,
                                   int target, void* recv, int64_t recv_count, int source,
                                   DType dtype) = 0;
  // Point-to-point, matched by (peer, tag) in order. Send does not wait for the
  // matching Recv to be posted.
  virtual Status Send(const void* data, int64_t bytes, int peer, int tag) = 0;
  virtual Status Recv(void* data, int64_t bytes, int peer, int tag) = 0;
  virtual Status Barrier(const Group& group) = 0;

  // This rank failed with `reason`: wake every peer blocked on it with an
  // error instead of letting it wait. Idempotent.
  virtual void Abort(const Status& reason) = 0;
};

// Applies `op` elementwise: acc[k] = op(acc[k], x[k]) (kAvg accumulates a sum;
// FinishReduce divides). Shared by backends that reduce on the host.
Status ReduceInto(void* acc, const void* x, int64_t count, DType dtype, ReduceOp op);
// For kAvg divides acc by `n` (integers truncate); no-op for other ops.
Status FinishReduce(void* acc, int64_t count, DType dtype, ReduceOp op, int n);

}  // namespace distrt

#endif  // DISTRT_COMMUNICATOR_H_
