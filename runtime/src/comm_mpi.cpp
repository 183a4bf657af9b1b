// The `mpi` communicator: one process per rank, collectives on cached
// per-group sub-communicators, a watchdog thread against hangs, and a cheap
// cross-member check of every collective's descriptor.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "comm_check.h"
#include "distrt/mpi_comm.h"

namespace distrt {

namespace {

using Clock = std::chrono::steady_clock;

Status MpiError(int code, const char* what) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) len = 0;
  return InternalError(
      what, " failed: ",
      len > 0 ? std::string(buf, static_cast<size_t>(len)) : StrCat("MPI error ", code));
}

#define DISTRT_MPI(call, what)                                                \
  do {                                                                        \
    int distrt_mpi_rc_ = (call);                                              \
    if (distrt_mpi_rc_ != MPI_SUCCESS) return MpiError(distrt_mpi_rc_, what); \
  } while (0)

MPI_Datatype MpiType(DType d) {
  switch (d) {
    case DType::kF32:
      return MPI_FLOAT;
    case DType::kF64:
      return MPI_DOUBLE;
    case DType::kI64:
      return MPI_INT64_T;
    case DType::kI32:
      return MPI_INT32_T;
    case DType::kI16:
      return MPI_INT16_T;
    case DType::kI8:
      return MPI_INT8_T;
    case DType::kU8:
    case DType::kBool:
      return MPI_UINT8_T;
    case DType::kU16:
      return MPI_UINT16_T;
    case DType::kU32:
      return MPI_UINT32_T;
    case DType::kU64:
      return MPI_UINT64_T;
    case DType::kF16:
    case DType::kBF16:
      return MPI_UINT16_T;  // moved as bits; reduced by user ops
    default:
      return MPI_DATATYPE_NULL;
  }
}

// User-defined reductions, for what MPI's predefined ops do not do the way
// the other backends do: f16/bf16 arithmetic, and NaN-propagating max/min on
// f32/f64. They call the same host reduction as the local backend.
template <DType D, ReduceOp O>
void UserReduce(void* in, void* inout, int* len, MPI_Datatype*) {
  // Cannot fail (kUserOps holds only pairs ReduceInto supports), and an MPI
  // user function has no way to report an error anyway.
  (void)ReduceInto(inout, in, *len, D, O);
}

struct UserOpDef {
  DType dtype;
  ReduceOp op;
  MPI_User_function* fn;
};
const UserOpDef kUserOps[] = {
    {DType::kF16, ReduceOp::kSum, &UserReduce<DType::kF16, ReduceOp::kSum>},
    {DType::kF16, ReduceOp::kMax, &UserReduce<DType::kF16, ReduceOp::kMax>},
    {DType::kF16, ReduceOp::kMin, &UserReduce<DType::kF16, ReduceOp::kMin>},
    {DType::kF16, ReduceOp::kProd, &UserReduce<DType::kF16, ReduceOp::kProd>},
    {DType::kBF16, ReduceOp::kSum, &UserReduce<DType::kBF16, ReduceOp::kSum>},
    {DType::kBF16, ReduceOp::kMax, &UserReduce<DType::kBF16, ReduceOp::kMax>},
    {DType::kBF16, ReduceOp::kMin, &UserReduce<DType::kBF16, ReduceOp::kMin>},
    {DType::kBF16, ReduceOp::kProd, &UserReduce<DType::kBF16, ReduceOp::kProd>},
    {DType::kF32, ReduceOp::kMax, &UserReduce<DType::kF32, ReduceOp::kMax>},
    {DType::kF32, ReduceOp::kMin, &UserReduce<DType::kF32, ReduceOp::kMin>},
    {DType::kF64, ReduceOp::kMax, &UserReduce<DType::kF64, ReduceOp::kMax>},
    {DType::kF64, ReduceOp::kMin, &UserReduce<DType::kF64, ReduceOp::kMin>},
};
constexpr size_t kNumUserOps = sizeof(kUserOps) / sizeof(kUserOps[0]);

constexpr int kPermuteTag = 7;
constexpr int kWatchdogExitCode = 124;  // like timeout(1)

bool MpiUsable() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

class MpiComm : public Communicator {
 public:
  explicit MpiComm(const MpiCommOptions& options) : options_(options) {
    for (MPI_Op& op : user_ops_) op = MPI_OP_NULL;
  }

  Status Init() {
    if (!MpiUsable()) {
      return FailedPreconditionError(
          "CreateMpiCommunicator: MPI is not initialised (create a distrt::MpiSession first) or "
          "already finalised");
    }
    DISTRT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    DISTRT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    DISTRT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &p2p_), "MPI_Comm_dup");
    DISTRT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &create_parent_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(p2p_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(create_parent_, MPI_ERRORS_RETURN);
    DISTRT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group_), "MPI_Comm_group");
    void* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    tag_ub_ = flag && ub ? *static_cast<int*>(ub) : 32767;
    for (size_t i = 0; i < kNumUserOps; ++i) {
      DISTRT_MPI(MPI_Op_create(kUserOps[i].fn, /*commute=*/1, &user_ops_[i]), "MPI_Op_create");
    }
    if (options_.timeout.count() > 0) {
      watchdog_ = std::thread([this] { WatchdogLoop(); });
    }
    return OkStatus();
  }

  ~MpiComm() override {
    if (MpiUsable()) {
      Status st = FlushSends();
      if (!st.ok()) {
        std::fprintf(stderr, "distrt[mpi]: rank %d: %s\n", rank_, st.message().c_str());
      }
      for (auto& kv : groups_) {
        if (kv.second.comm != MPI_COMM_NULL) MPI_Comm_free(&kv.second.comm);
      }
      for (MPI_Op& op : user_ops_) {
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
      }
      if (world_group_ != MPI_GROUP_NULL) MPI_Group_free(&world_group_);
      if (p2p_ != MPI_COMM_NULL) MPI_Comm_free(&p2p_);
      if (create_parent_ != MPI_COMM_NULL) MPI_Comm_free(&create_parent_);
    }
    if (watchdog_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(wd_mu_);
        wd_stop_ = true;
      }
      wd_cv_.notify_all();
      watchdog_.join();
    }
  }

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  Status AllReduce(const Group& group, const void* send, void* recv, int64_t count, DType dtype,
                   ReduceOp op) override {
    const CollDesc d = CollDesc::AllReduce(count, dtype, op);
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    MPI_Op mop;
    DISTRT_RETURN_IF_ERROR(PickOp(dtype, op, &mop));
    const MPI_Datatype t = MpiType(dtype);
    const size_t es = DTypeSize(dtype);
    Busy busy(this, [&] { return d.DescribeOn(group); });
    // Counts are int in MPI: big buffers go in pieces (elementwise, so exact).
    const int64_t kMax = INT_MAX / 2;
    int64_t off = 0;
    do {
      const int c = static_cast<int>(std::min(kMax, count - off));
      uint8_t* r = static_cast<uint8_t*>(recv) + off * es;
      const void* s = send == recv ? MPI_IN_PLACE : static_cast<const uint8_t*>(send) + off * es;
      DISTRT_MPI(MPI_Allreduce(s, r, c, t, mop, g->comm), "MPI_Allreduce");
      off += c;
    } while (off < count);
    return FinishReduce(recv, count, dtype, op, static_cast<int>(group.size()));
  }

  Status AllGather(const Group& group, const void* send, void* recv,
                   const std::vector<int64_t>& counts, DType dtype) override {
    const CollDesc d = CollDesc::AllGather(counts, dtype);
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    std::vector<int> c, displs;
    DISTRT_RETURN_IF_ERROR(ToIntCounts(d, counts, &c, &displs));
    const MPI_Datatype t = MpiType(dtype);
    Busy busy(this, [&] { return d.DescribeOn(group); });
    if (std::all_of(c.begin(), c.end(), [&](int x) { return x == c[0]; })) {
      DISTRT_MPI(MPI_Allgather(send, c[0], t, recv, c[0], t, g->comm), "MPI_Allgather");
    } else {
      DISTRT_MPI(MPI_Allgatherv(send, c[static_cast<size_t>(g->me)], t, recv, c.data(),
                                displs.data(), t, g->comm),
                 "MPI_Allgatherv");
    }
    return OkStatus();
  }

  Status ReduceScatter(const Group& group, const void* send, void* recv,
                       const std::vector<int64_t>& counts, DType dtype, ReduceOp op) override {
    const CollDesc d = CollDesc::ReduceScatter(counts, dtype, op);
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    std::vector<int> c, displs;
    DISTRT_RETURN_IF_ERROR(ToIntCounts(d, counts, &c, &displs));
    MPI_Op mop;
    DISTRT_RETURN_IF_ERROR(PickOp(dtype, op, &mop));
    const MPI_Datatype t = MpiType(dtype);
    Busy busy(this, [&] { return d.DescribeOn(group); });
    if (std::all_of(c.begin(), c.end(), [&](int x) { return x == c[0]; })) {
      DISTRT_MPI(MPI_Reduce_scatter_block(send, recv, c[0], t, mop, g->comm),
                 "MPI_Reduce_scatter_block");
    } else {
      DISTRT_MPI(MPI_Reduce_scatter(send, recv, c.data(), t, mop, g->comm), "MPI_Reduce_scatter");
    }
    return FinishReduce(recv, counts[static_cast<size_t>(g->me)], dtype, op,
                        static_cast<int>(group.size()));
  }

  Status AllToAll(const Group& group, const void* send, const std::vector<int64_t>& send_counts,
                  void* recv, const std::vector<int64_t>& recv_counts, DType dtype) override {
    const CollDesc d = CollDesc::AllToAll(send_counts, recv_counts, dtype);
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    std::vector<int> sc, sd, rc, rd;
    DISTRT_RETURN_IF_ERROR(ToIntCounts(d, send_counts, &sc, &sd));
    DISTRT_RETURN_IF_ERROR(ToIntCounts(d, recv_counts, &rc, &rd));
    const MPI_Datatype t = MpiType(dtype);
    Busy busy(this, [&] { return d.DescribeOn(group); });
    DISTRT_MPI(MPI_Alltoallv(send, sc.data(), sd.data(), t, recv, rc.data(), rd.data(), t, g->comm),
               "MPI_Alltoallv");
    return OkStatus();
  }

  Status CollectivePermute(const Group& group, const void* send, int64_t send_count, int target,
                           void* recv, int64_t recv_count, int source, DType dtype) override {
    const CollDesc d = CollDesc::Permute(send_count, target, recv_count, source, dtype);
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    int t_idx, s_idx;
    DISTRT_RETURN_IF_ERROR(PermutePeers(group, d, &t_idx, &s_idx));
    if (t_idx < 0) t_idx = MPI_PROC_NULL;
    if (s_idx < 0) s_idx = MPI_PROC_NULL;
    if (send_count > INT_MAX || recv_count > INT_MAX || send_count < 0 || recv_count < 0) {
      return UnimplementedError("collective_permute of ", std::max(send_count, recv_count),
                                " elements: the mpi backend moves at most 2^31-1 per call");
    }
    const MPI_Datatype t = MpiType(dtype);
    Busy busy(this, [&] { return d.DescribeOn(group); });
    MPI_Status st;
    DISTRT_MPI(
        MPI_Sendrecv(send, static_cast<int>(t_idx == MPI_PROC_NULL ? 0 : send_count), t, t_idx,
                     kPermuteTag, recv, static_cast<int>(s_idx == MPI_PROC_NULL ? 0 : recv_count),
                     t, s_idx, kPermuteTag, g->comm, &st),
        "MPI_Sendrecv");
    if (s_idx != MPI_PROC_NULL) {
      int got = 0;
      MPI_Get_count(&st, t, &got);
      if (got != recv_count) {
        return FailedPreconditionError("collective_permute on group ", GroupToString(group),
                                       ": rank ", rank_, " expected ", recv_count,
                                       " elements from rank ", source, " and got ", got);
      }
    }
    return OkStatus();
  }

  Status Barrier(const Group& group) override {
    const CollDesc d = CollDesc::Barrier();
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    Busy busy(this, [&] { return d.DescribeOn(group); });
    DISTRT_MPI(MPI_Barrier(g->comm), "MPI_Barrier");
    return OkStatus();
  }

  Status Send(const void* data, int64_t bytes, int peer, int tag) override {
    DISTRT_RETURN_IF_ERROR(CheckP2P("send: ", "send to", bytes, peer, tag));
    DISTRT_RETURN_IF_ERROR(ProgressSends());
    PendingSend p;
    p.data.reset(new uint8_t[bytes > 0 ? static_cast<size_t>(bytes) : 1]);
    if (bytes > 0) std::memcpy(p.data.get(), data, static_cast<size_t>(bytes));
    DISTRT_MPI(MPI_Isend(p.data.get(), static_cast<int>(bytes), MPI_BYTE, peer, tag, p2p_, &p.req),
               "MPI_Isend");
    pending_.push_back(std::move(p));
    return OkStatus();
  }

  Status Recv(void* data, int64_t bytes, int peer, int tag) override {
    DISTRT_RETURN_IF_ERROR(CheckP2P("recv: ", "recv from", bytes, peer, tag));
    const std::string what = DescribeRecv(peer, tag, bytes);
    Busy busy(this, [&] { return what; });
    MPI_Message msg;
    MPI_Status st;
    DISTRT_MPI(MPI_Mprobe(peer, tag, p2p_, &msg, &st), "MPI_Mprobe");
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (got != bytes) {
      std::vector<uint8_t> sink(static_cast<size_t>(std::max(got, 1)));
      MPI_Mrecv(sink.data(), got, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
      return RecvSizeMismatch(rank_, what, got);
    }
    DISTRT_MPI(MPI_Mrecv(data, got, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "MPI_Mrecv");
    return OkStatus();
  }

  void Abort(const Status& reason) override {
    const Status failed = RankFailed(rank_, reason);
    if (options_.abort_job_on_error && MpiUsable()) {
      std::fprintf(stderr, "distrt[mpi]: %s; aborting the job (MPI_Abort)\n",
                   failed.message().c_str());
      std::fflush(stderr);
      alarm(30);  // if MPI_Abort itself hangs, SIGALRM ends this process
      MPI_Abort(MPI_COMM_WORLD, 1);
      _exit(1);
    }
    if (failed_.ok()) failed_ = failed;
  }

 private:
  struct GroupComm {
    MPI_Comm comm = MPI_COMM_NULL;
    int me = -1;
  };
  struct PendingSend {
    MPI_Request req = MPI_REQUEST_NULL;
    std::unique_ptr<uint8_t[]> data;
  };

  // Marks this rank as blocked in an MPI call for the watchdog. `describe` is
  // only called (under the lock) if the call overstays the timeout.
  class Busy {
   public:
    Busy(MpiComm* c, std::function<std::string()> describe, const char* phase = nullptr) : c_(c) {
      if (!c_->watchdog_.joinable()) return;
      std::lock_guard<std::mutex> lock(c_->wd_mu_);
      c_->busy_ = true;
      c_->busy_since_ = Clock::now();
      c_->describe_ = std::move(describe);
      c_->phase_ = phase;
    }
    ~Busy() {
      if (!c_->watchdog_.joinable()) return;
      std::lock_guard<std::mutex> lock(c_->wd_mu_);
      c_->busy_ = false;
      c_->describe_ = nullptr;
    }

   private:
    MpiComm* c_;
  };

  void WatchdogLoop() {
    const auto tick = std::max(std::chrono::milliseconds(10),
                               std::min(std::chrono::milliseconds(1000), options_.timeout / 10));
    std::unique_lock<std::mutex> lock(wd_mu_);
    while (!wd_stop_) {
      wd_cv_.wait_for(lock, tick);
      if (wd_stop_ || !busy_) continue;
      if (Clock::now() - busy_since_ < options_.timeout) continue;
      const std::string what = describe_ ? describe_() : std::string("an MPI call");
      const std::string phase = phase_ ? StrCat(" (", phase_, ")") : std::string();
      std::fprintf(stderr,
                   "distrt[mpi]: rank %d: no progress in %s for %s%s; ending this process "
                   "so mpirun aborts the job\n",
                   rank_, what.c_str(), Seconds(options_.timeout).c_str(), phase.c_str());
      std::fflush(stderr);
      // No MPI_Abort from this thread: the main thread is inside MPI, and
      // Open MPI 4.1's mpirun was seen to crash or hang when MPI_Abort from a
      // second thread races with it. A process that exits non-zero without
      // MPI_Finalize makes mpirun terminate the whole job just as well.
      _exit(kWatchdogExitCode);
    }
  }

  Status CheckP2P(const char* prefix, const char* verb, int64_t bytes, int peer, int tag) {
    if (!failed_.ok())
      return AbortedError("rank ", rank_, " ", verb, " rank ", peer, ": ", failed_.message());
    DISTRT_RETURN_IF_ERROR(ValidatePeer(prefix, rank_, size_, peer, bytes));
    if (bytes > INT_MAX) {
      return UnimplementedError(prefix, bytes,
                                " bytes: the mpi backend moves at most 2^31-1 bytes "
                                "per message");
    }
    if (tag < 0 || tag > tag_ub_) {
      return InvalidArgumentError(prefix, "tag ", tag, " outside MPI's range [0, ", tag_ub_, "]");
    }
    return OkStatus();
  }

  Status ProgressSends() {
    if (pending_.empty()) return OkStatus();
    std::vector<MPI_Request> reqs;
    for (auto& p : pending_) reqs.push_back(p.req);
    std::vector<int> idx(reqs.size());
    int done = 0;
    DISTRT_MPI(MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &done, idx.data(),
                            MPI_STATUSES_IGNORE),
               "MPI_Testsome");
    if (done == MPI_UNDEFINED || done == 0) return OkStatus();
    std::vector<PendingSend> keep;
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (reqs[i] != MPI_REQUEST_NULL) {
        pending_[i].req = reqs[i];
        keep.push_back(std::move(pending_[i]));
      }
    }
    pending_ = std::move(keep);
    return OkStatus();
  }

  Status FlushSends() {
    if (pending_.empty()) return OkStatus();
    std::vector<MPI_Request> reqs;
    for (auto& p : pending_) reqs.push_back(p.req);
    const size_t n = reqs.size();
    Busy busy(this, [n] { return StrCat("waiting for ", n, " buffered send(s) to be received"); });
    DISTRT_MPI(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE),
               "MPI_Waitall");
    pending_.clear();
    return OkStatus();
  }

  Status PickOp(DType dtype, ReduceOp op, MPI_Op* out) const {
    const ReduceOp base = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
    if (dtype == DType::kBool) {
      *out = base == ReduceOp::kMin || base == ReduceOp::kProd ? MPI_LAND : MPI_LOR;
      return OkStatus();
    }
    for (size_t i = 0; i < kNumUserOps; ++i) {
      if (kUserOps[i].dtype == dtype && kUserOps[i].op == base) {
        *out = user_ops_[i];
        return OkStatus();
      }
    }
    switch (base) {
      case ReduceOp::kSum:
        *out = MPI_SUM;
        break;
      case ReduceOp::kProd:
        *out = MPI_PROD;
        break;
      case ReduceOp::kMax:
        *out = MPI_MAX;
        break;
      case ReduceOp::kMin:
        *out = MPI_MIN;
        break;
      default:
        return InvalidArgumentError("unknown reduction");
    }
    return OkStatus();
  }

  // MPI's int counts and displacements (same decision on every member:
  // they agree on `counts` for all_gather / reduce_scatter).
  Status ToIntCounts(const CollDesc& d, const std::vector<int64_t>& counts, std::vector<int>* c,
                     std::vector<int>* displs) const {
    c->clear();
    displs->clear();
    int64_t off = 0;
    for (int64_t x : counts) {
      if (x < 0) return InvalidArgumentError(CollKindName(d.kind), ": negative count ", x);
      if (x > INT_MAX || off > INT_MAX) {
        return UnimplementedError(CollKindName(d.kind), " of ", x, " elements at offset ", off,
                                  ": the mpi backend moves at most 2^31-1 elements per call");
      }
      c->push_back(static_cast<int>(x));
      displs->push_back(static_cast<int>(off));
      off += x;
    }
    return OkStatus();
  }

  // Validates the call, finds (or creates) the group's communicator and
  // checks that all members make the same call.
  Status Prepare(const Group& group, const CollDesc& d, GroupComm** out) {
    if (!failed_.ok()) {
      return CannotStart(rank_, d.DescribeOn(group), failed_);
    }
    int me;
    DISTRT_RETURN_IF_ERROR(ValidateCall(group, rank_, size_, d, &me));
    auto it = groups_.find(group);
    if (it == groups_.end()) {
      GroupComm gc;
      gc.me = me;
      DISTRT_RETURN_IF_ERROR(CreateGroupComm(group, d, &gc.comm));
      it = groups_.emplace(group, gc).first;
    }
    *out = &it->second;
    if (options_.check_collectives) DISTRT_RETURN_IF_ERROR(CheckCall(group, it->second, d));
    return OkStatus();
  }

  Status CreateGroupComm(const Group& group, const CollDesc& d, MPI_Comm* out) {
    Busy busy(
        this, [&] { return d.DescribeOn(group); }, "creating the group's communicator");
    MPI_Group g;
    DISTRT_MPI(MPI_Group_incl(world_group_, static_cast<int>(group.size()), group.data(), &g),
               "MPI_Group_incl");
    // Every member passes the same tag (derived from the group), so creations
    // of different groups never match each other.
    uint64_t h = 1469598103934665603ull;
    for (int r : group) h = (h ^ static_cast<uint64_t>(r)) * 1099511628211ull;
    const int tag = static_cast<int>(h % 30000) + 1;
    const int rc = MPI_Comm_create_group(create_parent_, g, tag, out);
    MPI_Group_free(&g);
    if (rc != MPI_SUCCESS) return MpiError(rc, "MPI_Comm_create_group");
    MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
    return OkStatus();
  }

  Status CheckCall(const Group& group, GroupComm& g, const CollDesc& d) {
    return CheckAcrossMembers(
        group, rank_, d,
        [&](const uint64_t* send, size_t words, uint64_t* recv, const char* phase) -> Status {
          Busy busy(
              this, [&] { return d.DescribeOn(group); }, phase);
          DISTRT_MPI(MPI_Allgather(send, static_cast<int>(words), MPI_UINT64_T, recv,
                                   static_cast<int>(words), MPI_UINT64_T, g.comm),
                     "MPI_Allgather (collective check)");
          return OkStatus();
        });
  }

  MpiCommOptions options_;
  int rank_ = 0, size_ = 1, tag_ub_ = 32767;
  MPI_Comm p2p_ = MPI_COMM_NULL;            // send / recv
  MPI_Comm create_parent_ = MPI_COMM_NULL;  // parent of group communicators
  MPI_Group world_group_ = MPI_GROUP_NULL;
  std::map<Group, GroupComm> groups_;
  std::vector<PendingSend> pending_;
  MPI_Op user_ops_[kNumUserOps];
  Status failed_;

  std::thread watchdog_;
  std::mutex wd_mu_;
  std::condition_variable wd_cv_;
  bool wd_stop_ = false;
  bool busy_ = false;
  Clock::time_point busy_since_;
  std::function<std::string()> describe_;
  const char* phase_ = nullptr;
};

}  // namespace

MpiCommOptions ApplyMpiEnvOverrides(MpiCommOptions options) {
  if (const char* t = std::getenv("DISTRT_MPI_TIMEOUT")) {
    char* end = nullptr;
    const double s = std::strtod(t, &end);
    if (end != t && s >= 0) {
      options.timeout = std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
    }
  }
  if (const char* c = std::getenv("DISTRT_MPI_CHECK")) {
    options.check_collectives = std::string(c) != "0";
  }
  return options;
}

Status CreateMpiCommunicator(const MpiCommOptions& options, std::unique_ptr<Communicator>* out) {
  std::unique_ptr<MpiComm> c(new MpiComm(options));
  DISTRT_RETURN_IF_ERROR(c->Init());
  *out = std::move(c);
  return OkStatus();
}

}  // namespace distrt
