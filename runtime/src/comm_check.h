// The checks every communicator backend (local, mpi, nccl) makes on a call,
// and the only place their messages are worded: the descriptor of a
// collective, the validation of its group and counts, the cross-member
// agreement checks, and the failure messages the backends share. The local backend sees every
// member's descriptor directly (CheckCollDescs); mpi and nccl exchange small fingerprints and, only
// when they disagree, full descriptors (CheckAcrossMembers), so all backends fail with the same
// message.
#ifndef DISTRT_SRC_COMM_CHECK_H_
#define DISTRT_SRC_COMM_CHECK_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "distrt/communicator.h"

namespace distrt {

enum class CollKind : int {
  kAllReduce = 1,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kPermute,
  kBarrier,
};
const char* CollKindName(CollKind kind);

struct CollDesc {
  CollKind kind = CollKind::kBarrier;
  DType dtype = DType::kUnspecified;
  ReduceOp op = ReduceOp::kSum;
  // all_reduce: {count}; all_gather / reduce_scatter: per member;
  // all_to_all: what this member sends to each member.
  std::vector<int64_t> counts;
  std::vector<int64_t> recv_counts;  // all_to_all: what it receives from each
  int target = -1, source = -1;      // collective_permute (global ranks)
  int64_t send_count = 0, recv_count = 0;

  // The descriptor of each Communicator call, from its arguments.
  static CollDesc AllReduce(int64_t count, DType dtype, ReduceOp op);
  static CollDesc AllGather(const std::vector<int64_t>& counts, DType dtype);
  static CollDesc ReduceScatter(const std::vector<int64_t>& counts, DType dtype, ReduceOp op);
  static CollDesc AllToAll(const std::vector<int64_t>& send_counts,
                           const std::vector<int64_t>& recv_counts, DType dtype);
  static CollDesc Permute(int64_t send_count, int target, int64_t recv_count, int source,
                          DType dtype);
  static CollDesc Barrier();

  // "all_reduce(sum, f32, 4 elements)", "all_gather(f32, counts [4, 4])", ...
  std::string Describe() const;
  // Describe() + " on group [0, 1]".
  std::string DescribeOn(const Group& group) const;
  // Fields every member must agree on.
  bool SameShape(const CollDesc& other) const;

  // Fixed-length encoding for a group of n members: EncodedSize(n) int64s.
  static size_t EncodedSize(size_t n) { return 8 + 2 * n; }
  void Encode(size_t n, int64_t* out) const;
  static CollDesc Decode(size_t n, const int64_t* in);
};

// Index of global rank `rank` in `group`, or -1.
int IndexInGroup(const Group& group, int rank);

// What every backend checks before a collective, in this order: the group
// (ranks inside [0, world_size), distinct, containing `rank`), the counts
// (one per member where the kind needs them) and the dtype. Sets *me to
// `rank`'s index in the group. INVALID_ARGUMENT on failure.
Status ValidateCall(const Group& group, int rank, int world_size, const CollDesc& d, int* me);

// For collective_permute on mpi / nccl, which address peers by group index:
// the indices of d.target and d.source in `group` (-1 where that side is
// unused), or INVALID_ARGUMENT if a peer is not a member.
Status PermutePeers(const Group& group, const CollDesc& d, int* target_index, int* source_index);

// Given every member's descriptor (index = position in `group`), returns OK
// or FAILED_PRECONDITION naming the disagreeing calls: "collective mismatch
// on group [0, 1]: rank 0 calls all_reduce(sum, f32, 4 elements) but rank 1
// calls all_gather(f32, counts [4, 4])", or the all_to_all / permute pairing
// that does not match.
Status CheckCollDescs(const Group& group, const std::vector<CollDesc>& descs);

// Gathers `words` 64-bit words from every member of the group, in group
// order, into `recv` (words * group size). `phase` says what the exchange is
// for ("checking that every member makes the same call"), for the caller's
// hang reports.
using GatherWords =
    std::function<Status(const uint64_t* send, size_t words, uint64_t* recv, const char* phase)>;

// The cross-member check for backends whose members cannot see each other's
// calls (mpi, nccl): every member of `group` calls it with its own
// descriptor; `rank` is the caller's global rank. One gather of a 16-byte
// fingerprint per member; only when the fingerprints disagree a second one
// of full descriptors, after which every member returns CheckCollDescs's
// message. A group of one exchanges nothing unless it permutes (its one
// member may still pair its send and receive wrongly).
Status CheckAcrossMembers(const Group& group, int rank, const CollDesc& d,
                          const GatherWords& gather);

// ---- messages every backend words alike -------------------------------------

// ABORTED "rank R cannot start <call>: <failure>": the communicator failed before.
Status CannotStart(int rank, const std::string& call, const Status& failure);
// ABORTED "rank R failed: <reason>" ("aborted" for an OK reason), what a failed
// rank's peers report.
Status RankFailed(int rank, const Status& reason);
// Send / Recv arguments; `prefix` is "send: " or "recv: ". INVALID_ARGUMENT.
Status ValidatePeer(const char* prefix, int rank, int world_size, int peer, int64_t bytes);
// "recv from rank 0 (tag 3, 4 bytes)".
std::string DescribeRecv(int peer, int tag, int64_t bytes);
// FAILED_PRECONDITION "rank R <recv>: the message has N bytes".
Status RecvSizeMismatch(int rank, const std::string& recv, int64_t message_bytes);
// "1.5s", for timeout messages.
std::string Seconds(std::chrono::milliseconds ms);

}  // namespace distrt

#endif  // DISTRT_SRC_COMM_CHECK_H_
