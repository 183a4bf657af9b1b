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

}  // namespace

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

uint64_t CollDesc::ShapeHash() const {
  uint64_t h = Combine(0xd157, static_cast<uint64_t>(kind));
  switch (kind) {
    case CollKind::kAllReduce:
    case CollKind::kReduceScatter:
      h = Combine(h, static_cast<uint64_t>(op));
      [[fallthrough]];
    case CollKind::kAllGather:
      h = Combine(h, static_cast<uint64_t>(dtype));
      h = Combine(h, counts.size());
      for (int64_t c : counts) h = Combine(h, static_cast<uint64_t>(c));
      break;
    case CollKind::kAllToAll:
    case CollKind::kPermute:
      h = Combine(h, static_cast<uint64_t>(dtype));
      break;
    case CollKind::kBarrier:
      break;
  }
  return h;
}

uint64_t CollDesc::PairFingerprint(const Group& group, int me) const {
  uint64_t p = 0;  // arithmetic mod 2^64
  if (kind == CollKind::kAllToAll) {
    for (size_t j = 0; j < group.size() && j < counts.size(); ++j)
      p += Transfer(me, group[j], counts[j]);
    for (size_t j = 0; j < group.size() && j < recv_counts.size(); ++j)
      p -= Transfer(group[j], me, recv_counts[j]);
  } else if (kind == CollKind::kPermute) {
    if (target >= 0) p += Transfer(me, target, send_count);
    if (source >= 0) p -= Transfer(source, me, recv_count);
  }
  return p;
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
    auto index_of = [&](int r) -> int {
      for (size_t j = 0; j < n; ++j) {
        if (group[j] == r) return static_cast<int>(j);
      }
      return -1;
    };
    for (size_t j = 0; j < n; ++j) {
      const CollDesc& pj = posts[j];
      if (pj.target >= 0) {
        int t = index_of(pj.target);
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
        int sidx = index_of(pj.source);
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

bool FingerprintsAgree(const std::vector<uint64_t>& shape_hashes,
                       const std::vector<uint64_t>& pair_fingerprints) {
  uint64_t sum = 0;
  for (size_t i = 0; i < shape_hashes.size(); ++i) {
    if (shape_hashes[i] != shape_hashes[0]) return false;
  }
  for (uint64_t p : pair_fingerprints) sum += p;
  return sum == 0;
}

}  // namespace distrt
