// Descriptors of collective calls and the cross-member checks on them, for
// backends whose members cannot see each other's calls directly (mpi, nccl):
// every member contributes a small fingerprint of its call; when the
// fingerprints disagree the members exchange full descriptors and all of them
// fail with the same message (worded like the local backend's).
#ifndef DISTRT_SRC_COMM_CHECK_H_
#define DISTRT_SRC_COMM_CHECK_H_

#include <cstdint>
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

  // "all_reduce(sum, f32, 4 elements)", "all_gather(f32, counts [4, 4])", ...
  std::string Describe() const;
  // Fields every member must agree on.
  bool SameShape(const CollDesc& other) const;
  // Equal on members whose calls agree on SameShape's fields.
  uint64_t ShapeHash() const;
  // Point-to-point pairing fingerprint of member `me` (global rank) of
  // `group`: the sum (mod 2^64) over all members is 0 when every send is
  // matched by a receive of the same size (all_to_all, collective_permute);
  // 0 for other kinds.
  uint64_t PairFingerprint(const Group& group, int me) const;

  // Fixed-length encoding for a group of n members: EncodedSize(n) int64s.
  static size_t EncodedSize(size_t n) { return 8 + 2 * n; }
  void Encode(size_t n, int64_t* out) const;
  static CollDesc Decode(size_t n, const int64_t* in);
};

// Given every member's descriptor (index = position in `group`), returns OK
// or FAILED_PRECONDITION naming the disagreeing calls: "collective mismatch
// on group [0, 1]: rank 0 calls all_reduce(sum, f32, 4 elements) but rank 1
// calls all_gather(f32, counts [4, 4])", or the all_to_all / permute pairing
// that does not match.
Status CheckCollDescs(const Group& group, const std::vector<CollDesc>& descs);

// True if the fingerprints (ShapeHash, PairFingerprint) of all members agree.
bool FingerprintsAgree(const std::vector<uint64_t>& shape_hashes,
                       const std::vector<uint64_t>& pair_fingerprints);

}  // namespace distrt

#endif  // DISTRT_SRC_COMM_CHECK_H_
