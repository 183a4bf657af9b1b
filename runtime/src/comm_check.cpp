#include "comm_check.h"

#include <sstream>

namespace distrt {

const char* CollKindName(CollKind kind) {
  switch (kind) {
    case CollKind::kAllReduce:
      return "all_reduce";
    case CollKind::kAllGather:
      return "all_gather";
    case CollKind::kReduceScatter:
      return "reduce_scatter";
    case CollKind::kAllToAll:
      return "all_to_all";
    case CollKind::kPermute:
      return "collective_permute";
    case CollKind::kBarrier:
      return "barrier";
  }
  return "?";
}

namespace {

std::string CountsToString(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// splitmix64 finaliser: a cheap, well-mixing 64-bit hash step.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t Combine(uint64_t h, uint64_t v) { return Mix(h ^ Mix(v)); }

// Fingerprint of one point-to-point transfer.
uint64_t Transfer(int src, int dst, int64_t count) {
  uint64_t h = Combine(0x5151, static_cast<uint64_t>(src));
  h = Combine(h, static_cast<uint64_t>(dst));
  return Combine(h, static_cast<uint64_t>(count));
}

// Equal on members whose calls agree on SameShape's fields.
uint64_t ShapeHash(const CollDesc& d) {
  uint64_t h = Combine(0xd157, static_cast<uint64_t>(d.kind));
  switch (d.kind) {
    case CollKind::kAllReduce:
    case CollKind::kReduceScatter:
      h = Combine(h, static_cast<uint64_t>(d.op));
      [[fallthrough]];
    case CollKind::kAllGather:
      h = Combine(h, static_cast<uint64_t>(d.dtype));
      h = Combine(h, d.counts.size());
      for (int64_t c : d.counts) h = Combine(h, static_cast<uint64_t>(c));
      break;
    case CollKind::kAllToAll:
    case CollKind::kPermute:
      h = Combine(h, static_cast<uint64_t>(d.dtype));
      break;
    case CollKind::kBarrier:
      break;
  }
  return h;
}

// Point-to-point pairing fingerprint of member `me` (global rank) of
// `group`: the sum (mod 2^64) over all members is 0 when every send is
// matched by a receive of the same size (all_to_all, collective_permute);
// 0 for other kinds.
uint64_t PairFingerprint(const CollDesc& d, const Group& group, int me) {
  uint64_t p = 0;  // arithmetic mod 2^64
  if (d.kind == CollKind::kAllToAll) {
    for (size_t j = 0; j < group.size() && j < d.counts.size(); ++j)
      p += Transfer(me, group[j], d.counts[j]);
    for (size_t j = 0; j < group.size() && j < d.recv_counts.size(); ++j)
      p -= Transfer(group[j], me, d.recv_counts[j]);
  } else if (d.kind == CollKind::kPermute) {
    if (d.target >= 0) p += Transfer(me, d.target, d.send_count);
    if (d.source >= 0) p -= Transfer(d.source, me, d.recv_count);
  }
  return p;
}

}  // namespace

CollDesc CollDesc::AllReduce(int64_t count, DType dtype, ReduceOp op) {
  CollDesc d;
  d.kind = CollKind::kAllReduce;
  d.dtype = dtype;
  d.op = op;
  d.counts = {count};
  return d;
}

CollDesc CollDesc::AllGather(const std::vector<int64_t>& counts, DType dtype) {
  CollDesc d;
  d.kind = CollKind::kAllGather;
  d.dtype = dtype;
  d.counts = counts;
  return d;
}

CollDesc CollDesc::ReduceScatter(const std::vector<int64_t>& counts, DType dtype, ReduceOp op) {
  CollDesc d = AllGather(counts, dtype);
  d.kind = CollKind::kReduceScatter;
  d.op = op;
  return d;
}

CollDesc CollDesc::AllToAll(const std::vector<int64_t>& send_counts,
                            const std::vector<int64_t>& recv_counts, DType dtype) {
  CollDesc d = AllGather(send_counts, dtype);
  d.kind = CollKind::kAllToAll;
  d.recv_counts = recv_counts;
  return d;
}

CollDesc CollDesc::Permute(int64_t send_count, int target, int64_t recv_count, int source,
                           DType dtype) {
  CollDesc d;
  d.kind = CollKind::kPermute;
  d.dtype = dtype;
  d.target = target;
  d.source = source;
  d.send_count = send_count;
  d.recv_count = recv_count;
  return d;
}

CollDesc CollDesc::Barrier() { return CollDesc(); }

std::string CollDesc::Describe() const {
  std::ostringstream os;
  os << CollKindName(kind) << "(";
  switch (kind) {
    case CollKind::kAllReduce:
      os << ReduceOpName(op) << ", " << DTypeName(dtype) << ", " << (counts.empty() ? 0 : counts[0])
         << " elements";
      break;
    case CollKind::kAllGather:
      os << DTypeName(dtype) << ", counts " << CountsToString(counts);
      break;
    case CollKind::kReduceScatter:
      os << ReduceOpName(op) << ", " << DTypeName(dtype) << ", counts " << CountsToString(counts);
      break;
    case CollKind::kAllToAll:
      os << DTypeName(dtype) << ", send " << CountsToString(counts) << ", recv "
         << CountsToString(recv_counts);
      break;
    case CollKind::kPermute:
      os << DTypeName(dtype) << ", to " << target << ", from " << source << ", " << send_count
         << "/" << recv_count << " elements";
      break;
    case CollKind::kBarrier:
      break;
  }
  os << ")";
  return os.str();
}

std::string CollDesc::DescribeOn(const Group& group) const {
  return StrCat(Describe(), " on group ", GroupToString(group));
}

bool CollDesc::SameShape(const CollDesc& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case CollKind::kAllReduce:
    case CollKind::kReduceScatter:
      return dtype == o.dtype && op == o.op && counts == o.counts;
    case CollKind::kAllGather:
      return dtype == o.dtype && counts == o.counts;
    case CollKind::kAllToAll:
    case CollKind::kPermute:
      return dtype == o.dtype;
    case CollKind::kBarrier:
      return true;
  }
  return false;
}

void CollDesc::Encode(size_t n, int64_t* out) const {
  out[0] = static_cast<int64_t>(kind);
  out[1] = static_cast<int64_t>(dtype);
  out[2] = static_cast<int64_t>(op);
  out[3] = target;
  out[4] = source;
  out[5] = send_count;
  out[6] = recv_count;
  out[7] = static_cast<int64_t>(counts.size() < n ? counts.size() : n);
  for (size_t i = 0; i < n; ++i) out[8 + i] = i < counts.size() ? counts[i] : 0;
  for (size_t i = 0; i < n; ++i) out[8 + n + i] = i < recv_counts.size() ? recv_counts[i] : 0;
}

CollDesc CollDesc::Decode(size_t n, const int64_t* in) {
  CollDesc d;
  d.kind = static_cast<CollKind>(in[0]);
  d.dtype = static_cast<DType>(in[1]);
  d.op = static_cast<ReduceOp>(in[2]);
  d.target = static_cast<int>(in[3]);
  d.source = static_cast<int>(in[4]);
  d.send_count = in[5];
  d.recv_count = in[6];
  const size_t nc = static_cast<size_t>(in[7]) <= n ? static_cast<size_t>(in[7]) : n;
  d.counts.assign(in + 8, in + 8 + nc);
  if (d.kind == CollKind::kAllToAll) d.recv_counts.assign(in + 8 + n, in + 8 + 2 * n);
  return d;
}

int IndexInGroup(const Group& group, int rank) {
  for (size_t j = 0; j < group.size(); ++j) {
    if (group[j] == rank) return static_cast<int>(j);
  }
  return -1;
}

Status ValidateCall(const Group& group, int rank, int world_size, const CollDesc& d, int* me) {
  *me = -1;
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] < 0 || group[i] >= world_size) {
      return InvalidArgumentError("group ", GroupToString(group), " has rank ", group[i],
                                  " outside [0, ", world_size, ")");
    }
    for (size_t j = 0; j < i; ++j) {
      if (group[j] == group[i]) {
        return InvalidArgumentError("group ", GroupToString(group), " lists rank ", group[i],
                                    " twice");
      }
    }
    if (group[i] == rank) *me = static_cast<int>(i);
  }
  if (*me < 0) {
    return InvalidArgumentError("rank ", rank, " calls a collective on group ",
                                GroupToString(group), ", which does not contain it");
  }
  const size_t n = group.size();
  if ((d.kind == CollKind::kAllGather || d.kind == CollKind::kReduceScatter) &&
      d.counts.size() != n) {
    return InvalidArgumentError(CollKindName(d.kind), ": ", d.counts.size(),
                                " counts for a group of ", n);
  }
  if (d.kind == CollKind::kAllToAll && (d.counts.size() != n || d.recv_counts.size() != n)) {
    return InvalidArgumentError("all_to_all: counts must have one entry per member (", n, ")");
  }
  if (d.kind != CollKind::kBarrier && DTypeSize(d.dtype) == 0) {
    return InvalidArgumentError(CollKindName(d.kind), ": invalid dtype");
  }
  return OkStatus();
}

Status PermutePeers(const Group& group, const CollDesc& d, int* target_index, int* source_index) {
  *target_index = d.target >= 0 ? IndexInGroup(group, d.target) : -1;
  *source_index = d.source >= 0 ? IndexInGroup(group, d.source) : -1;
  const bool bad_target = d.target >= 0 && *target_index < 0;
  if (bad_target || (d.source >= 0 && *source_index < 0)) {
    return InvalidArgumentError("collective_permute on group ", GroupToString(group), ": rank ",
                                bad_target ? d.target : d.source, " is not in the group");
  }
  return OkStatus();
}

Status CheckCollDescs(const Group& group, const std::vector<CollDesc>& posts) {
  const size_t n = posts.size();
  for (size_t j = 1; j < n; ++j) {
    if (!posts[j].SameShape(posts[0])) {
      return FailedPreconditionError("collective mismatch on group ", GroupToString(group),
                                     ": rank ", group[0], " calls ", posts[0].Describe(),
                                     " but rank ", group[j], " calls ", posts[j].Describe());
    }
  }
  if (n == 0) return OkStatus();
  if (posts[0].kind == CollKind::kAllToAll) {
    for (size_t j = 0; j < n; ++j) {
      for (size_t k = 0; k < n; ++k) {
        if (posts[j].counts.size() != n || posts[k].recv_counts.size() != n) continue;
        if (posts[j].counts[k] != posts[k].recv_counts[j]) {
          return FailedPreconditionError("all_to_all mismatch on group ", GroupToString(group),
                                         ": rank ", group[j], " sends ", posts[j].counts[k],
                                         " elements to rank ", group[k], ", which expects ",
                                         posts[k].recv_counts[j]);
        }
      }
    }
  }
  if (posts[0].kind == CollKind::kPermute) {
    for (size_t j = 0; j < n; ++j) {
      const CollDesc& pj = posts[j];
      if (pj.target >= 0) {
        int t = IndexInGroup(group, pj.target);
        if (t < 0 || posts[t].source != group[j] || posts[t].recv_count != pj.send_count) {
          return FailedPreconditionError("collective_permute mismatch on group ",
                                         GroupToString(group), ": rank ", group[j], " sends ",
                                         pj.send_count, " elements to rank ", pj.target, ", which ",
                                         t < 0 ? std::string("is not in the group")
                                               : StrCat("expects ", posts[t].recv_count,
                                                        " elements from rank ", posts[t].source));
        }
      }
      if (pj.source >= 0) {
        int sidx = IndexInGroup(group, pj.source);
        if (sidx < 0 || posts[sidx].target != group[j]) {
          return FailedPreconditionError(
              "collective_permute mismatch on group ", GroupToString(group), ": rank ", group[j],
              " expects data from rank ", pj.source, ", which does not send to it");
        }
      }
    }
  }
  return OkStatus();
}

Status CheckAcrossMembers(const Group& group, int rank, const CollDesc& d,
                          const GatherWords& gather) {
  const size_t n = group.size();
  if (n == 1 && d.kind != CollKind::kPermute) return OkStatus();
  const uint64_t mine[2] = {ShapeHash(d), PairFingerprint(d, group, rank)};
  std::vector<uint64_t> all(2 * n);
  DISTRT_RETURN_IF_ERROR(
      gather(mine, 2, all.data(), "checking that every member makes the same call"));
  bool agree = true;
  uint64_t pair_sum = 0;  // mod 2^64
  for (size_t i = 0; i < n; ++i) {
    agree = agree && all[2 * i] == all[0];
    pair_sum += all[2 * i + 1];
  }
  if (agree && pair_sum == 0) return OkStatus();
  // Disagreement: every member saw it, so all of them exchange their full
  // descriptors and fail with the same message.
  const size_t len = CollDesc::EncodedSize(n);
  std::vector<int64_t> enc(len), all_enc(len * n);
  d.Encode(n, enc.data());
  DISTRT_RETURN_IF_ERROR(gather(reinterpret_cast<const uint64_t*>(enc.data()), len,
                                reinterpret_cast<uint64_t*>(all_enc.data()),
                                "exchanging descriptors after a mismatch"));
  std::vector<CollDesc> descs;
  for (size_t i = 0; i < n; ++i) descs.push_back(CollDesc::Decode(n, all_enc.data() + i * len));
  Status st = CheckCollDescs(group, descs);
  if (st.ok()) {
    return InternalError("collective check on group ", GroupToString(group),
                         ": fingerprints differ but the calls agree (", d.Describe(), ")");
  }
  return st;
}

Status CannotStart(int rank, const std::string& call, const Status& failure) {
  return AbortedError("rank ", rank, " cannot start ", call, ": ", failure.message());
}

Status RankFailed(int rank, const Status& reason) {
  return AbortedError("rank ", rank,
                      " failed: ", reason.ok() ? std::string("aborted") : reason.message());
}

Status ValidatePeer(const char* prefix, int rank, int world_size, int peer, int64_t bytes) {
  if (peer < 0 || peer >= world_size || peer == rank) {
    return InvalidArgumentError(prefix, "invalid peer ", peer, " for rank ", rank);
  }
  if (bytes < 0) return InvalidArgumentError(prefix, "negative size");
  return OkStatus();
}

std::string DescribeRecv(int peer, int tag, int64_t bytes) {
  return StrCat("recv from rank ", peer, " (tag ", tag, ", ", bytes, " bytes)");
}

Status RecvSizeMismatch(int rank, const std::string& recv, int64_t message_bytes) {
  return FailedPreconditionError("rank ", rank, " ", recv, ": the message has ", message_bytes,
                                 " bytes");
}

std::string Seconds(std::chrono::milliseconds ms) {
  return StrCat(static_cast<double>(ms.count()) / 1000.0, "s");
}

}  // namespace distrt
