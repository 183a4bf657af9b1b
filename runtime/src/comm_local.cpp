// The local communicator: rendezvous of group members through one mutex and
// condition variable per world; data moves by memcpy between the members'
// own buffers (no intermediate copies except reduction accumulators).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "comm_check.h"
#include "distrt/local_comm.h"
#include "spin_wait.h"

namespace distrt {

namespace {

// What a member posts for one collective call.
struct Post {
  CollDesc desc;
  const uint8_t* send = nullptr;
  uint8_t* recv = nullptr;
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
  // Counts the changes that wake waiters (written under mu): a poller
  // watches it without the lock.
  std::atomic<uint64_t> changes{0};
  Status abort;  // "rank R failed: ..."
  std::vector<bool> finished;
  std::vector<std::string> doing;  // per rank: the call it is blocked in
  std::map<Group, std::unique_ptr<GroupState>> groups;
  std::map<std::tuple<int, int, int>, std::deque<Message>> mailbox;  // (src, dst, tag)
  // Buffers of received messages, for the next sends: a fresh allocation of
  // megabytes per message costs a page fault per 4 KiB (milliseconds).
  std::vector<std::vector<uint8_t>> spare_buffers;
  std::vector<std::unique_ptr<LocalComm>> comms;
};

namespace {

using Clock = std::chrono::steady_clock;

// About 200-500 us of polling (a pause is some 20-50 ns): longer than the
// skew of ranks that run the same compute between collectives.
constexpr int kPollIterations = 10000;

// Something a waiter may be waiting for happened. Call with the lock held.
void WakeWaiters(LocalWorld::State* s) {
  s->changes.fetch_add(1, std::memory_order_release);
  s->cv.notify_all();
}

// Blocks until a change or `deadline`; polls first while `polls_left`
// lasts (decremented by the polls made). Lock held on entry and exit.
// Returns false on timeout.
bool WaitForChange(LocalWorld::State* s, std::unique_lock<std::mutex>& lock,
                   Clock::time_point deadline, int* polls_left) {
  if (*polls_left > 0) {
    const uint64_t seen = s->changes.load(std::memory_order_relaxed);
    lock.unlock();
    int polls = 0;
    bool changed = SpinFor(*polls_left, [&] {
      ++polls;
      return s->changes.load(std::memory_order_acquire) != seen;
    });
    *polls_left -= polls;
    lock.lock();
    if (changed || s->changes.load(std::memory_order_relaxed) != seen) return true;
  }
  return s->cv.wait_until(lock, deadline) != std::cv_status::timeout;
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
    const Post p = MakePost(CollDesc::AllReduce(count, dtype, op), send, recv);
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
      uint8_t* acc = mine;
      if (posts[me].recv == posts[me].send) {
        if (scratch_.size() < bytes) scratch_.resize(bytes);  // kept: no faults next call
        acc = scratch_.data();
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
    const Post p = MakePost(CollDesc::AllGather(counts, dtype), send, recv);
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
    const Post p = MakePost(CollDesc::ReduceScatter(counts, dtype, op), send, recv);
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
    const Post p = MakePost(CollDesc::AllToAll(send_counts, recv_counts, dtype), send, recv);
    return Collective(group, p, [&](const std::vector<Post>& posts, int me) -> Status {
      const size_t es = DTypeSize(dtype);
      const size_t n = posts.size();
      int64_t roff = 0;
      for (size_t j = 0; j < n; ++j) {
        int64_t soff = 0;
        for (int k = 0; k < me; ++k) soff += posts[j].desc.counts[k];
        const size_t bytes = static_cast<size_t>(recv_counts[j]) * es;
        if (bytes) std::memcpy(posts[me].recv + roff * es, posts[j].send + soff * es, bytes);
        roff += recv_counts[j];
      }
      return OkStatus();
    });
  }

  Status CollectivePermute(const Group& group, const void* send, int64_t send_count, int target,
                           void* recv, int64_t recv_count, int source, DType dtype) override {
    const Post p =
        MakePost(CollDesc::Permute(send_count, target, recv_count, source, dtype), send, recv);
    return Collective(group, p, [&](const std::vector<Post>& posts, int me) -> Status {
      // The pairings agree (CheckCollDescs), so the source is a member.
      const Post& mine = posts[me];
      if (source >= 0) {
        const Post& from = posts[IndexInGroup(group, source)];
        const size_t bytes = static_cast<size_t>(recv_count) * DTypeSize(dtype);
        if (bytes) std::memcpy(mine.recv, from.send, bytes);
      }
      return OkStatus();
    });
  }

  Status Barrier(const Group& group) override {
    return Collective(group, MakePost(CollDesc::Barrier(), nullptr, nullptr),
                      [](const std::vector<Post>&, int) { return OkStatus(); });
  }

  Status Send(const void* data, int64_t bytes, int peer, int tag) override {
    DISTRT_RETURN_IF_ERROR(ValidatePeer("send: ", rank_, s_->world_size, peer, bytes));
    Message m;
    {
      std::lock_guard<std::mutex> lock(s_->mu);
      m.data = TakeSpareBuffer(bytes);
    }
    m.data.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
    std::lock_guard<std::mutex> lock(s_->mu);
    if (!s_->abort.ok())
      return AbortedError("send to rank ", peer, " aborted: ", s_->abort.message());
    s_->mailbox[std::make_tuple(rank_, peer, tag)].push_back(std::move(m));
    WakeWaiters(s_);
    return OkStatus();
  }

  Status Recv(void* data, int64_t bytes, int peer, int tag) override {
    DISTRT_RETURN_IF_ERROR(ValidatePeer("recv: ", rank_, s_->world_size, peer, bytes));
    const std::string what = DescribeRecv(peer, tag, bytes);
    const auto deadline = Clock::now() + s_->options.timeout;
    std::unique_lock<std::mutex> lock(s_->mu);
    Doing doing(s_, rank_, what);
    auto key = std::make_tuple(peer, rank_, tag);
    int polls_left = PollBudget();
    for (;;) {
      auto it = s_->mailbox.find(key);
      if (it != s_->mailbox.end() && !it->second.empty()) {
        Message m = std::move(it->second.front());
        it->second.pop_front();
        if (static_cast<int64_t>(m.data.size()) != bytes) {
          return RecvSizeMismatch(rank_, what, static_cast<int64_t>(m.data.size()));
        }
        if (bytes) std::memcpy(data, m.data.data(), m.data.size());
        KeepSpareBuffer(std::move(m.data));
        return OkStatus();
      }
      if (!s_->abort.ok())
        return AbortedError("rank ", rank_, " ", what, " aborted: ", s_->abort.message());
      if (s_->finished[static_cast<size_t>(peer)]) {
        return FailedPreconditionError("rank ", rank_, " waits in ", what, " but rank ", peer,
                                       " finished its program without sending it");
      }
      if (!WaitForChange(s_, lock, deadline, &polls_left)) {
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

  // The smallest spare buffer that holds `bytes`, or an empty one. Lock
  // held.
  std::vector<uint8_t> TakeSpareBuffer(int64_t bytes) {
    auto& spare = s_->spare_buffers;
    auto best = spare.end();
    for (auto it = spare.begin(); it != spare.end(); ++it) {
      if (static_cast<int64_t>(it->capacity()) >= bytes &&
          (best == spare.end() || it->capacity() < best->capacity())) {
        best = it;
      }
    }
    if (best == spare.end()) return {};
    std::vector<uint8_t> taken = std::move(*best);
    spare.erase(best);
    return taken;
  }

  // Keeps a received message's buffer for later sends: at most two per
  // rank, the largest. Lock held.
  void KeepSpareBuffer(std::vector<uint8_t> buffer) {
    auto& spare = s_->spare_buffers;
    if (buffer.capacity() == 0) return;
    spare.push_back(std::move(buffer));
    if (spare.size() > 2 * static_cast<size_t>(s_->world_size)) {
      spare.erase(std::min_element(spare.begin(), spare.end(), [](const auto& a, const auto& b) {
        return a.capacity() < b.capacity();
      }));
    }
  }

  int PollBudget() const { return s_->options.poll_before_sleeping ? kPollIterations : 0; }

  static Post MakePost(CollDesc desc, const void* send, void* recv) {
    return Post{std::move(desc), static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv)};
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
      WakeWaiters(s_);
      return OkStatus();
    }
    Doing doing(s_, rank_, what);
    int polls_left = PollBudget();
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
      if (!WaitForChange(s_, lock, deadline, &polls_left) && g.gen == my_gen) {
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
    DISTRT_RETURN_IF_ERROR(ValidateCall(group, rank_, s_->world_size, post.desc, &me));
    const size_t n = group.size();
    const std::string what = post.desc.DescribeOn(group);
    const auto deadline = Clock::now() + s_->options.timeout;
    std::unique_lock<std::mutex> lock(s_->mu);
    if (!s_->abort.ok()) {
      return CannotStart(rank_, what, s_->abort);
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
    // posts, so all of them fail alike on a mismatch) and do the work.
    std::vector<Post> posts = g.posts;
    lock.unlock();
    std::vector<CollDesc> descs;
    for (const Post& q : posts) descs.push_back(q.desc);
    Status st = CheckCollDescs(group, descs);
    if (st.ok()) st = work(posts, me);
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
  std::vector<uint8_t> scratch_;  // an in-place all-reduce's accumulator
};

}  // namespace

bool ThreadsHaveOwnCores(int threads) {
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 && threads >= 1 && static_cast<unsigned>(threads) <= cores;
}

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
  WakeWaiters(state_.get());
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
    state_->abort = RankFailed(rank, reason);
  }
  WakeWaiters(state_.get());
}

Status LocalWorld::abort_status() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->abort;
}

}  // namespace distrt
