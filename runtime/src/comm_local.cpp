// The local communicator: rendezvous of group members through one mutex and
// condition variable per world; data moves by memcpy between the members'
// own buffers (no intermediate copies except reduction accumulators).
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "distrt/local_comm.h"

namespace distrt {

namespace {

enum class Kind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kPermute, kBarrier };

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kAllReduce:
      return "all_reduce";
    case Kind::kAllGather:
      return "all_gather";
    case Kind::kReduceScatter:
      return "reduce_scatter";
    case Kind::kAllToAll:
      return "all_to_all";
    case Kind::kPermute:
      return "collective_permute";
    case Kind::kBarrier:
      return "barrier";
  }
  return "?";
}

std::string CountsToString(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// What a member posts for one collective call.
struct Post {
  Kind kind = Kind::kBarrier;
  DType dtype = DType::kUnspecified;
  ReduceOp op = ReduceOp::kSum;
  std::vector<int64_t> counts;       // all_gather/reduce_scatter: per member; all_reduce: {count}
  std::vector<int64_t> recv_counts;  // all_to_all
  int target = -1, source = -1;      // permute (global ranks)
  int64_t send_count = 0, recv_count = 0;
  const uint8_t* send = nullptr;
  uint8_t* recv = nullptr;

  std::string Describe() const {
    std::ostringstream os;
    os << KindName(kind) << "(";
    switch (kind) {
      case Kind::kAllReduce:
        os << ReduceOpName(op) << ", " << DTypeName(dtype) << ", " << counts[0] << " elements";
        break;
      case Kind::kAllGather:
        os << DTypeName(dtype) << ", counts " << CountsToString(counts);
        break;
      case Kind::kReduceScatter:
        os << ReduceOpName(op) << ", " << DTypeName(dtype) << ", counts " << CountsToString(counts);
        break;
      case Kind::kAllToAll:
        os << DTypeName(dtype) << ", send " << CountsToString(counts) << ", recv "
           << CountsToString(recv_counts);
        break;
      case Kind::kPermute:
        os << DTypeName(dtype) << ", to " << target << ", from " << source << ", " << send_count
           << "/" << recv_count << " elements";
        break;
      case Kind::kBarrier:
        break;
    }
    os << ")";
    return os.str();
  }
  // Fields every member must agree on.
  bool SameShape(const Post& o) const {
    if (kind != o.kind) return false;
    switch (kind) {
      case Kind::kAllReduce:
      case Kind::kReduceScatter:
        return dtype == o.dtype && op == o.op && counts == o.counts;
      case Kind::kAllGather:
        return dtype == o.dtype && counts == o.counts;
      case Kind::kAllToAll:
      case Kind::kPermute:
        return dtype == o.dtype;
      case Kind::kBarrier:
        return true;
    }
    return false;
  }
};

struct GroupState {
  Group ranks;
  std::vector<Post> posts;
  std::vector<uint64_t> at_gen;  // generation each member last arrived at
  int arrived = 0;
  uint64_t gen = 1;
};

struct Message {
  std::vector<uint8_t> data;
};

class LocalComm;

}  // namespace

struct LocalWorld::State {
  int world_size = 0;
  LocalCommOptions options;
  std::mutex mu;
  std::condition_variable cv;
  Status abort;  // "rank R failed: ..."
  std::vector<bool> finished;
  std::vector<std::string> doing;  // per rank: the call it is blocked in
  std::map<Group, std::unique_ptr<GroupState>> groups;
  std::map<std::tuple<int, int, int>, std::deque<Message>> mailbox;  // (src, dst, tag)
  std::vector<std::unique_ptr<LocalComm>> comms;
};

namespace {

using Clock = std::chrono::steady_clock;

std::string Seconds(std::chrono::milliseconds ms) {
  std::ostringstream os;
  os << static_cast<double>(ms.count()) / 1000.0 << "s";
  return os.str();
}

class LocalComm : public Communicator {
 public:
  LocalComm(LocalWorld* world, LocalWorld::State* s, int rank)
      : world_(world), s_(s), rank_(rank) {}

  int rank() const override { return rank_; }
  int world_size() const override { return s_->world_size; }
  std::string backend() const override { return "local"; }

  Status AllReduce(const Group& group, const void* send, void* recv, int64_t count, DType dtype,
                   ReduceOp op) override {
    Post p;
    p.kind = Kind::kAllReduce;
    p.dtype = dtype;
    p.op = op;
    p.counts = {count};
    p.send = static_cast<const uint8_t*>(send);
    p.recv = static_cast<uint8_t*>(recv);
    return Collective(group, p, [&](const std::vector<Post>& posts, int me) -> Status {
      const int n = static_cast<int>(posts.size());
      const size_t es = DTypeSize(dtype);
      // Member `me` reduces chunk `me` and writes it to every member.
      const int64_t base = count / n, extra = count % n;
      const int64_t begin = me * base + std::min<int64_t>(me, extra);
      const int64_t len = base + (me < extra ? 1 : 0);
      if (len == 0) return OkStatus();
      const size_t bytes = static_cast<size_t>(len) * es;
      // Reduce straight into this member's own output chunk (no scratch
      // buffer: a fresh multi-MB allocation per call costs page faults),
      // unless it works in place, where the chunk is still an input.
      uint8_t* mine = posts[me].recv + begin * es;
      std::vector<uint8_t> scratch;
      uint8_t* acc = mine;
      if (posts[me].recv == posts[me].send) {
        scratch.resize(bytes);
        acc = scratch.data();
      }
      std::memcpy(acc, posts[0].send + begin * es, bytes);
      for (int j = 1; j < n; ++j) {
        DISTRT_RETURN_IF_ERROR(ReduceInto(acc, posts[j].send + begin * es, len, dtype, op));
      }
      DISTRT_RETURN_IF_ERROR(FinishReduce(acc, len, dtype, op, n));
      if (acc != mine) std::memcpy(mine, acc, bytes);
      for (int j = 0; j < n; ++j) {
        if (j != me) std::memcpy(posts[j].recv + begin * es, mine, bytes);
      }
      return OkStatus();
    });
  }

  Status AllGather(const Group& group, const void* send, void* recv,
                   const std::vector<int64_t>& counts, DType dtype) override {
    Post p;
    p.kind = Kind::kAllGather;
    p.dtype = dtype;
    p.counts = counts;
    p.send = static_cast<const uint8_t*>(send);
    p.recv = static_cast<uint8_t*>(recv);
    return Collective(group, p, [&](const std::vector<Post>& posts, int me) -> Status {
      const size_t es = DTypeSize(dtype);
      int64_t off = 0;
      for (size_t j = 0; j < posts.size(); ++j) {
        const size_t bytes = static_cast<size_t>(counts[j]) * es;
        if (bytes) std::memcpy(posts[me].recv + off * es, posts[j].send, bytes);
        off += counts[j];
      }
      return OkStatus();
    });
  }

  Status ReduceScatter(const Group& group, const void* send, void* recv,
                       const std::vector<int64_t>& counts, DType dtype, ReduceOp op) override {
    Post p;
    p.kind = Kind::kReduceScatter;
    p.dtype = dtype;
    p.op = op;
    p.counts = counts;
    p.send = static_cast<const uint8_t*>(send);
    p.recv = static_cast<uint8_t*>(recv);
    return Collective(group, p, [&](const std::vector<Post>& posts, int me) -> Status {
      const size_t es = DTypeSize(dtype);
      const int n = static_cast<int>(posts.size());
      int64_t begin = 0;
      for (int j = 0; j < me; ++j) begin += counts[j];
      const int64_t len = counts[me];
      if (len == 0) return OkStatus();
      // Reduce straight into this member's output (it never aliases a send
      // buffer for reduce_scatter).
      uint8_t* acc = posts[me].recv;
      std::memcpy(acc, posts[0].send + begin * es, static_cast<size_t>(len) * es);
      for (int j = 1; j < n; ++j) {
        DISTRT_RETURN_IF_ERROR(ReduceInto(acc, posts[j].send + begin * es, len, dtype, op));
      }
      return FinishReduce(acc, len, dtype, op, n);
    });
  }

  Status AllToAll(const Group& group, const void* send, const std::vector<int64_t>& send_counts,
                  void* recv, const std::vector<int64_t>& recv_counts, DType dtype) override {
    Post p;
    p.kind = Kind::kAllToAll;
    p.dtype = dtype;
    p.counts = send_counts;
    p.recv_counts = recv_counts;
    p.send = static_cast<const uint8_t*>(send);
    p.recv = static_cast<uint8_t*>(recv);
    return Collective(group, p, [&](const std::vector<Post>& posts, int me) -> Status {
      const size_t es = DTypeSize(dtype);
      const size_t n = posts.size();
      for (size_t j = 0; j < n; ++j) {  // pairwise agreement, same message on all members
        for (size_t k = 0; k < n; ++k) {
          if (posts[j].counts[k] != posts[k].recv_counts[j]) {
            return FailedPreconditionError("all_to_all mismatch on group ", GroupToString(group),
                                           ": rank ", group[j], " sends ", posts[j].counts[k],
                                           " elements to rank ", group[k], ", which expects ",
                                           posts[k].recv_counts[j]);
          }
        }
      }
      int64_t roff = 0;
      for (size_t j = 0; j < n; ++j) {
        int64_t soff = 0;
        for (int k = 0; k < me; ++k) soff += posts[j].counts[k];
        const size_t bytes = static_cast<size_t>(recv_counts[j]) * es;
        if (bytes) std::memcpy(posts[me].recv + roff * es, posts[j].send + soff * es, bytes);
        roff += recv_counts[j];
      }
      return OkStatus();
    });
  }

  Status CollectivePermute(const Group& group, const void* send, int64_t send_count, int target,
                           void* recv, int64_t recv_count, int source, DType dtype) override {
    Post p;
    p.kind = Kind::kPermute;
    p.dtype = dtype;
    p.target = target;
    p.source = source;
    p.send_count = send_count;
    p.recv_count = recv_count;
    p.send = static_cast<const uint8_t*>(send);
    p.recv = static_cast<uint8_t*>(recv);
    return Collective(group, p, [&](const std::vector<Post>& posts, int me) -> Status {
      const size_t n = posts.size();
      auto index_of = [&](int r) -> int {
        for (size_t j = 0; j < n; ++j) {
          if (group[j] == r) return static_cast<int>(j);
        }
        return -1;
      };
      for (size_t j = 0; j < n; ++j) {  // every pairing must agree both ways
        const Post& pj = posts[j];
        if (pj.target >= 0) {
          int t = index_of(pj.target);
          if (t < 0 || posts[t].source != group[j] || posts[t].recv_count != pj.send_count) {
            return FailedPreconditionError(
                "collective_permute mismatch on group ", GroupToString(group), ": rank ", group[j],
                " sends ", pj.send_count, " elements to rank ", pj.target, ", which ",
                t < 0 ? std::string("is not in the group")
                      : StrCat("expects ", posts[t].recv_count, " elements from rank ",
                               posts[t].source));
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
      const Post& mine = posts[me];
      if (mine.source >= 0) {
        const Post& from = posts[index_of(mine.source)];
        const size_t bytes = static_cast<size_t>(mine.recv_count) * DTypeSize(dtype);
        if (bytes) std::memcpy(mine.recv, from.send, bytes);
      }
      return OkStatus();
    });
  }

  Status Barrier(const Group& group) override {
    Post p;
    p.kind = Kind::kBarrier;
    return Collective(group, p, [](const std::vector<Post>&, int) { return OkStatus(); });
  }

  Status Send(const void* data, int64_t bytes, int peer, int tag) override {
    if (peer < 0 || peer >= s_->world_size || peer == rank_) {
      return InvalidArgumentError("send: invalid peer ", peer, " for rank ", rank_);
    }
    if (bytes < 0) return InvalidArgumentError("send: negative size");
    Message m;
    m.data.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
    std::lock_guard<std::mutex> lock(s_->mu);
    if (!s_->abort.ok())
      return AbortedError("send to rank ", peer, " aborted: ", s_->abort.message());
    s_->mailbox[std::make_tuple(rank_, peer, tag)].push_back(std::move(m));
    s_->cv.notify_all();
    return OkStatus();
  }

  Status Recv(void* data, int64_t bytes, int peer, int tag) override {
    if (peer < 0 || peer >= s_->world_size || peer == rank_) {
      return InvalidArgumentError("recv: invalid peer ", peer, " for rank ", rank_);
    }
    const std::string what = StrCat("recv from rank ", peer, " (tag ", tag, ", ", bytes, " bytes)");
    const auto deadline = Clock::now() + s_->options.timeout;
    std::unique_lock<std::mutex> lock(s_->mu);
    Doing doing(s_, rank_, what);
    auto key = std::make_tuple(peer, rank_, tag);
    for (;;) {
      auto it = s_->mailbox.find(key);
      if (it != s_->mailbox.end() && !it->second.empty()) {
        Message m = std::move(it->second.front());
        it->second.pop_front();
        if (static_cast<int64_t>(m.data.size()) != bytes) {
          return FailedPreconditionError("rank ", rank_, " ", what, ": the message has ",
                                         m.data.size(), " bytes");
        }
        if (bytes) std::memcpy(data, m.data.data(), m.data.size());
        return OkStatus();
      }
      if (!s_->abort.ok())
        return AbortedError("rank ", rank_, " ", what, " aborted: ", s_->abort.message());
      if (s_->finished[static_cast<size_t>(peer)]) {
        return FailedPreconditionError("rank ", rank_, " waits in ", what, " but rank ", peer,
                                       " finished its program without sending it");
      }
      if (s_->cv.wait_until(lock, deadline) == std::cv_status::timeout) {
        auto again = s_->mailbox.find(key);
        if (again != s_->mailbox.end() && !again->second.empty()) continue;
        return DeadlineExceededError("rank ", rank_, " timed out after ",
                                     Seconds(s_->options.timeout), " waiting for rank ", peer,
                                     " in ", what, PeerState(peer));
      }
    }
  }

  void Abort(const Status& reason) override { world_->Abort(rank_, reason); }

 private:
  // Marks what this rank is blocked in, for other ranks' timeout messages.
  struct Doing {
    Doing(LocalWorld::State* s, int r, const std::string& what) : s_(s), r_(r) {
      s_->doing[static_cast<size_t>(r_)] = what;
    }
    ~Doing() { s_->doing[static_cast<size_t>(r_)].clear(); }
    LocalWorld::State* s_;
    int r_;
  };

  // " (rank 2 is waiting in ...)" — call with the lock held.
  std::string PeerState(int r) const {
    if (s_->finished[static_cast<size_t>(r)]) return StrCat(" (rank ", r, " has finished)");
    const std::string& d = s_->doing[static_cast<size_t>(r)];
    if (d.empty()) return StrCat(" (rank ", r, " is computing or has not arrived)");
    return StrCat(" (rank ", r, " is waiting in ", d, ")");
  }

  Status CheckGroup(const Group& group, int* me) const {
    *me = -1;
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i] < 0 || group[i] >= s_->world_size) {
        return InvalidArgumentError("group ", GroupToString(group), " has rank ", group[i],
                                    " outside [0, ", s_->world_size, ")");
      }
      for (size_t j = 0; j < i; ++j) {
        if (group[j] == group[i]) {
          return InvalidArgumentError("group ", GroupToString(group), " lists rank ", group[i],
                                      " twice");
        }
      }
      if (group[i] == rank_) *me = static_cast<int>(i);
    }
    if (*me < 0) {
      return InvalidArgumentError("rank ", rank_, " calls a collective on group ",
                                  GroupToString(group), ", which does not contain it");
    }
    return OkStatus();
  }

  // Waits until every member of `g` arrives at the current generation.
  // Lock held on entry and exit.
  Status Arrive(std::unique_lock<std::mutex>& lock, GroupState& g, int me, const std::string& what,
                Clock::time_point deadline) {
    const uint64_t my_gen = g.gen;
    g.at_gen[static_cast<size_t>(me)] = my_gen;
    if (++g.arrived == static_cast<int>(g.ranks.size())) {
      g.arrived = 0;
      ++g.gen;
      s_->cv.notify_all();
      return OkStatus();
    }
    Doing doing(s_, rank_, what);
    while (g.gen == my_gen) {
      if (!s_->abort.ok()) {
        return AbortedError("rank ", rank_, " stopped waiting in ", what, ": ",
                            s_->abort.message());
      }
      for (size_t j = 0; j < g.ranks.size(); ++j) {
        if (g.at_gen[j] != my_gen && s_->finished[static_cast<size_t>(g.ranks[j])]) {
          return FailedPreconditionError("rank ", rank_, " waits in ", what, " but rank ",
                                         g.ranks[j],
                                         " finished its program without joining it (the ranks' "
                                         "programs disagree)");
        }
      }
      if (s_->cv.wait_until(lock, deadline) == std::cv_status::timeout && g.gen == my_gen) {
        std::string missing, detail;
        for (size_t j = 0; j < g.ranks.size(); ++j) {
          if (g.at_gen[j] != my_gen) {
            missing += (missing.empty() ? "" : ", ") + std::to_string(g.ranks[j]);
            detail += PeerState(g.ranks[j]);
          }
        }
        return DeadlineExceededError("rank ", rank_, " timed out after ",
                                     Seconds(s_->options.timeout), " waiting for rank ", missing,
                                     " in ", what, detail);
      }
    }
    return OkStatus();
  }

  template <typename Fn>
  Status Collective(const Group& group, const Post& post, Fn&& work) {
    int me;
    DISTRT_RETURN_IF_ERROR(CheckGroup(group, &me));
    const size_t n = group.size();
    if ((post.kind == Kind::kAllGather || post.kind == Kind::kReduceScatter) &&
        post.counts.size() != n) {
      return InvalidArgumentError(KindName(post.kind), ": ", post.counts.size(),
                                  " counts for a group of ", n);
    }
    if (post.kind == Kind::kAllToAll && (post.counts.size() != n || post.recv_counts.size() != n)) {
      return InvalidArgumentError("all_to_all: counts must have one entry per member (", n, ")");
    }
    if (DTypeSize(post.dtype) == 0 && post.kind != Kind::kBarrier) {
      return InvalidArgumentError(KindName(post.kind), ": invalid dtype");
    }
    const std::string what = StrCat(post.Describe(), " on group ", GroupToString(group));
    const auto deadline = Clock::now() + s_->options.timeout;
    std::unique_lock<std::mutex> lock(s_->mu);
    if (!s_->abort.ok()) {
      return AbortedError("rank ", rank_, " cannot start ", what, ": ", s_->abort.message());
    }
    auto& slot = s_->groups[group];
    if (!slot) {
      slot.reset(new GroupState());
      slot->ranks = group;
      slot->posts.resize(n);
      slot->at_gen.assign(n, 0);
    }
    GroupState& g = *slot;
    g.posts[static_cast<size_t>(me)] = post;
    DISTRT_RETURN_IF_ERROR(Arrive(lock, g, me, what, deadline));
    // Everybody has posted: compare descriptors (each member sees the same
    // posts, so all of them fail alike on a mismatch).
    std::vector<Post> posts = g.posts;
    lock.unlock();
    for (size_t j = 1; j < n; ++j) {
      if (!posts[j].SameShape(posts[0])) {
        return FailedPreconditionError("collective mismatch on group ", GroupToString(group),
                                       ": rank ", group[0], " calls ", posts[0].Describe(),
                                       " but rank ", group[j], " calls ", posts[j].Describe());
      }
    }
    Status st = work(posts, me);
    lock.lock();
    // Second rendezvous: nobody returns (and frees its send buffer) while a
    // peer may still read it.
    Status st2 = Arrive(lock, g, me, StrCat("the end of ", what), deadline);
    if (!st.ok()) return st;
    return st2;
  }

  LocalWorld* world_;
  LocalWorld::State* s_;
  int rank_;
};

}  // namespace

Status LocalWorld::Create(int world_size, const LocalCommOptions& options,
                          std::shared_ptr<LocalWorld>* out) {
  if (world_size < 1) return InvalidArgumentError("world size must be >= 1, got ", world_size);
  std::shared_ptr<LocalWorld> w(new LocalWorld());
  w->state_.reset(new State());
  State& s = *w->state_;
  s.world_size = world_size;
  s.options = options;
  s.finished.assign(static_cast<size_t>(world_size), false);
  s.doing.assign(static_cast<size_t>(world_size), "");
  for (int r = 0; r < world_size; ++r) s.comms.emplace_back(new LocalComm(w.get(), &s, r));
  *out = std::move(w);
  return OkStatus();
}

LocalWorld::~LocalWorld() = default;

int LocalWorld::world_size() const { return state_->world_size; }

Communicator* LocalWorld::comm(int rank) {
  if (rank < 0 || rank >= state_->world_size) return nullptr;
  return state_->comms[static_cast<size_t>(rank)].get();
}

void LocalWorld::MarkFinished(int rank) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (rank >= 0 && rank < state_->world_size) state_->finished[static_cast<size_t>(rank)] = true;
  state_->cv.notify_all();
}

Status LocalWorld::StartRun() {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!state_->abort.ok()) return state_->abort;
  for (const auto& [key, queue] : state_->mailbox) {
    if (!queue.empty()) {
      return FailedPreconditionError("rank ", std::get<0>(key), " sent rank ", std::get<1>(key),
                                     " a message with tag ", std::get<2>(key),
                                     " that was never received");
    }
  }
  state_->finished.assign(state_->finished.size(), false);
  return OkStatus();
}

void LocalWorld::Abort(int rank, const Status& reason) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->abort.ok()) {
    state_->abort = AbortedError(
        "rank ", rank, " failed: ", reason.ok() ? std::string("aborted") : reason.message());
  }
  state_->cv.notify_all();
}

Status LocalWorld::abort_status() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->abort;
}

}  // namespace distrt
