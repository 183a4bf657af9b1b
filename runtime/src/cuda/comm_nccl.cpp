// The `nccl` communicator: collectives on device buffers through NCCL, one
// NCCL communicator per group (created on first use), point-to-point
// messages on per-pair, per-direction communicators with a (size, tag)
// header, bounded waits, and the host-staging adapter.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "comm_check.h"
#include "cuda/comm_kernels.h"
#include "cuda/cuda_util.h"
#include "distrt/cuda.h"

namespace distrt {

namespace {

using Clock = std::chrono::steady_clock;

static_assert(sizeof(ncclUniqueId) == sizeof(NcclId), "NcclId must hold an ncclUniqueId");

Status NcclError(ncclResult_t r, const char* what) {
  return InternalError(what, " failed: ", ncclGetErrorString(r));
}

#define DISTRT_NCCL(call, what)                                                  \
  do {                                                                           \
    ncclResult_t distrt_nccl_rc_ = (call);                                       \
    if (distrt_nccl_rc_ != ncclSuccess) return NcclError(distrt_nccl_rc_, what); \
  } while (0)

// The NCCL type of a dtype; false for i16 (NCCL has no 16-bit integer).
bool NcclType(DType d, ncclDataType_t* t) {
  switch (d) {
    case DType::kF32:
      *t = ncclFloat32;
      return true;
    case DType::kF64:
      *t = ncclFloat64;
      return true;
    case DType::kF16:
      *t = ncclFloat16;
      return true;
    case DType::kBF16:
      *t = ncclBfloat16;
      return true;
    case DType::kI64:
      *t = ncclInt64;
      return true;
    case DType::kI32:
      *t = ncclInt32;
      return true;
    case DType::kI8:
      *t = ncclInt8;
      return true;
    case DType::kU8:
    case DType::kBool:
      *t = ncclUint8;
      return true;
    case DType::kU32:
      *t = ncclUint32;
      return true;
    case DType::kU64:
      *t = ncclUint64;
      return true;
    default:
      return false;
  }
}

ncclRedOp_t NcclOp(DType d, ReduceOp op) {
  if (d == DType::kBool) {  // values are 0/1: or = max, and = min
    return op == ReduceOp::kMin || op == ReduceOp::kProd ? ncclMin : ncclMax;
  }
  switch (op) {
    case ReduceOp::kProd:
      return ncclProd;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
    default:
      return ncclSum;  // sum; avg = sum, then DivideBy
  }
}

bool FloatMinMax(DType d, ReduceOp op) {
  return IsFloat(d) && (op == ReduceOp::kMax || op == ReduceOp::kMin);
}

// Header of a point-to-point message.
struct MsgHeader {
  int64_t bytes;
  int64_t tag;
};

class NcclComm : public NcclDeviceComm {
 public:
  NcclComm(const NcclCommOptions& o) : options_(o) {}

  Status Init(const NcclId& id, int rank, int size) {
    if (size < 1 || rank < 0 || rank >= size) {
      return InvalidArgumentError("nccl: rank ", rank, " of ", size);
    }
    DISTRT_RETURN_IF_ERROR(RequireCudaDevice(options_.device));
    rank_ = rank;
    size_ = size;
    device_ = options_.device >= 0 ? options_.device : rank % CudaDeviceCount();
    DISTRT_CUDA(cudaSetDevice(device_), "cudaSetDevice");
    DISTRT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    ncclUniqueId uid;
    std::memcpy(&uid, id.bytes, sizeof(uid));
    DISTRT_NCCL(ncclCommInitRank(&world_, size, uid, rank), "ncclCommInitRank (world)");
    // Scratch for ids and the collective check (see CheckCall).
    const size_t desc = CollDesc::EncodedSize(static_cast<size_t>(size)) * 8;
    DISTRT_RETURN_IF_ERROR(DeviceBuffer::Allocate(
        2 * sizeof(NcclId) + desc * (1 + static_cast<size_t>(size)), device_, stream_, &small_));
    return OkStatus();
  }

  ~NcclComm() override {
    cudaSetDevice(device_);
    if (failed_.ok()) {
      Status st = FlushSends();
      if (!st.ok())
        std::fprintf(stderr, "distrt[nccl]: rank %d: %s\n", rank_, st.message().c_str());
    }
    if (!failed_.ok()) AbortAll();  // nothing may still wait for a peer
    // Device buffers are freed on this communicator's streams: release them
    // before the streams go.
    for (auto& p : pending_) {
      if (p.done) cudaEventDestroy(p.done);
    }
    pending_.clear();
    scratch_[0].reset();
    scratch_[1].reset();
    small_.reset();
    for (auto& kv : pairs_) kv.second.unexpected.clear();
    cudaDeviceSynchronize();
    auto drop = [](ncclComm_t& c) {
      if (c != nullptr) ncclCommDestroy(c);
      c = nullptr;
    };
    for (auto& kv : groups_) {
      if (kv.second.comm != world_) drop(kv.second.comm);
    }
    for (auto& kv : pairs_) {
      drop(kv.second.to);
      drop(kv.second.from);
      if (kv.second.send_stream) cudaStreamDestroy(kv.second.send_stream);
      if (kv.second.recv_stream) cudaStreamDestroy(kv.second.recv_stream);
    }
    drop(world_);
    for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
    if (stream_) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  DeviceKind buffer_device() const override { return DeviceKind::kCuda; }

  // Queued on this communicator's stream behind the caller's stream (an
  // event, no host wait); the pending call's Wait puts the caller's stream
  // behind the collective. The host waits only where a call needs it (the
  // check of every collective, i16 reductions on the host).
  Status Start(const CollectiveCall& call, void* stream,
               std::unique_ptr<PendingCollective>* pending) override {
    cudaStream_t caller = static_cast<cudaStream_t>(stream);
    if (caller == nullptr) return Communicator::Start(call, stream, pending);
    DISTRT_CUDA(cudaSetDevice(device_), "cudaSetDevice");
    cudaEvent_t ready, done;
    DISTRT_RETURN_IF_ERROR(TakeEvent(&ready));
    DISTRT_CUDA(cudaEventRecord(ready, caller), "cudaEventRecord");
    DISTRT_CUDA(cudaStreamWaitEvent(stream_, ready, 0), "cudaStreamWaitEvent");
    GiveEvent(ready);  // reusable once recorded: the wait above holds its state
    enqueue_only_ = true;
    Status st = Run(call);
    enqueue_only_ = false;
    DISTRT_RETURN_IF_ERROR(st);
    DISTRT_RETURN_IF_ERROR(TakeEvent(&done));
    DISTRT_CUDA(cudaEventRecord(done, stream_), "cudaEventRecord");
    *pending = std::make_unique<Pending>(this, caller, done);
    return OkStatus();
  }
  int device() const override { return device_; }
  cudaStream_t stream() const override { return stream_; }
  Status WaitStream(const std::string& what) override {
    return Wait(
        stream_, [&] { return what; }, world_);
  }

  Status AllReduce(const Group& group, const void* send, void* recv, int64_t count, DType dtype,
                   ReduceOp op) override {
    const CollDesc d = CollDesc::AllReduce(count, dtype, op);
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    DISTRT_RETURN_IF_ERROR(
        AllReduceOn(*g, static_cast<int>(group.size()), send, recv, count, dtype, op));
    return Done(
        stream_, [&] { return d.DescribeOn(group); }, g->comm);
  }

  Status AllGather(const Group& group, const void* send, void* recv,
                   const std::vector<int64_t>& counts, DType dtype) override {
    const CollDesc d = CollDesc::AllGather(counts, dtype);
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    const size_t es = DTypeSize(dtype);
    const size_t n = group.size();
    bool equal = true;
    for (int64_t c : counts) equal = equal && c == counts[0];
    if (equal) {
      if (counts[0] > 0) {
        DISTRT_NCCL(ncclAllGather(send, recv, static_cast<size_t>(counts[0]) * es, ncclUint8,
                                  g->comm, stream_),
                    "ncclAllGather");
      }
    } else {
      std::vector<int64_t> off(n, 0);
      for (size_t j = 1; j < n; ++j) off[j] = off[j - 1] + counts[j - 1];
      uint8_t* r = static_cast<uint8_t*>(recv);
      const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(g->me)]) * es;
      if (mine > 0) {
        DISTRT_CUDA(cudaMemcpyAsync(r + off[static_cast<size_t>(g->me)] * es, send, mine,
                                    cudaMemcpyDeviceToDevice, stream_),
                    "cudaMemcpyAsync");
      }
      DISTRT_NCCL(ncclGroupStart(), "ncclGroupStart");
      for (size_t j = 0; j < n; ++j) {
        if (static_cast<int>(j) == g->me) continue;
        if (mine > 0) ncclSend(send, mine, ncclUint8, static_cast<int>(j), g->comm, stream_);
        if (counts[j] > 0) {
          ncclRecv(r + off[j] * es, static_cast<size_t>(counts[j]) * es, ncclUint8,
                   static_cast<int>(j), g->comm, stream_);
        }
      }
      DISTRT_NCCL(ncclGroupEnd(), "ncclGroupEnd (all_gather)");
    }
    return Done(
        stream_, [&] { return d.DescribeOn(group); }, g->comm);
  }

  Status ReduceScatter(const Group& group, const void* send, void* recv,
                       const std::vector<int64_t>& counts, DType dtype, ReduceOp op) override {
    const CollDesc d = CollDesc::ReduceScatter(counts, dtype, op);
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    const int n = static_cast<int>(group.size());
    const size_t es = DTypeSize(dtype);
    bool equal = true;
    int64_t total = 0, begin = 0;
    for (int j = 0; j < n; ++j) {
      equal = equal && counts[j] == counts[0];
      if (j < g->me) begin += counts[j];
      total += counts[j];
    }
    ncclDataType_t t;
    if (equal && NcclType(dtype, &t) && !FloatMinMax(dtype, op)) {
      if (counts[0] > 0) {
        DISTRT_NCCL(ncclReduceScatter(send, recv, static_cast<size_t>(counts[0]), t,
                                      NcclOp(dtype, op), g->comm, stream_),
                    "ncclReduceScatter");
        if (op == ReduceOp::kAvg) {
          DISTRT_CUDA(cuda::DivideBy(dtype, recv, counts[0], n, stream_), "divide kernel");
        }
      }
    } else {
      // Uneven blocks (or reductions NCCL cannot do directly): all-reduce the
      // whole buffer into scratch and keep this member's block. Correct,
      // n times the traffic of a reduce-scatter.
      void* tmp = nullptr;
      DISTRT_RETURN_IF_ERROR(Scratch(0, static_cast<size_t>(total) * es, &tmp));
      DISTRT_RETURN_IF_ERROR(AllReduceOn(*g, n, send, tmp, total, dtype, op));
      const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(g->me)]) * es;
      if (mine > 0) {
        DISTRT_CUDA(cudaMemcpyAsync(recv, static_cast<uint8_t*>(tmp) + begin * es, mine,
                                    cudaMemcpyDeviceToDevice, stream_),
                    "cudaMemcpyAsync");
      }
    }
    return Done(
        stream_, [&] { return d.DescribeOn(group); }, g->comm);
  }

  Status AllToAll(const Group& group, const void* send, const std::vector<int64_t>& send_counts,
                  void* recv, const std::vector<int64_t>& recv_counts, DType dtype) override {
    const CollDesc d = CollDesc::AllToAll(send_counts, recv_counts, dtype);
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    const size_t es = DTypeSize(dtype);
    const uint8_t* s = static_cast<const uint8_t*>(send);
    uint8_t* r = static_cast<uint8_t*>(recv);
    DISTRT_NCCL(ncclGroupStart(), "ncclGroupStart");
    int64_t soff = 0, roff = 0;
    for (size_t j = 0; j < group.size(); ++j) {
      if (send_counts[j] > 0) {
        ncclSend(s + soff * es, static_cast<size_t>(send_counts[j]) * es, ncclUint8,
                 static_cast<int>(j), g->comm, stream_);
      }
      if (recv_counts[j] > 0) {
        ncclRecv(r + roff * es, static_cast<size_t>(recv_counts[j]) * es, ncclUint8,
                 static_cast<int>(j), g->comm, stream_);
      }
      soff += send_counts[j];
      roff += recv_counts[j];
    }
    DISTRT_NCCL(ncclGroupEnd(), "ncclGroupEnd (all_to_all)");
    return Done(
        stream_, [&] { return d.DescribeOn(group); }, g->comm);
  }

  Status CollectivePermute(const Group& group, const void* send, int64_t send_count, int target,
                           void* recv, int64_t recv_count, int source, DType dtype) override {
    const CollDesc d = CollDesc::Permute(send_count, target, recv_count, source, dtype);
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    int t, s;
    DISTRT_RETURN_IF_ERROR(PermutePeers(group, d, &t, &s));
    const size_t es = DTypeSize(dtype);
    DISTRT_NCCL(ncclGroupStart(), "ncclGroupStart");
    if (t >= 0 && send_count > 0) {
      ncclSend(send, static_cast<size_t>(send_count) * es, ncclUint8, t, g->comm, stream_);
    }
    if (s >= 0 && recv_count > 0) {
      ncclRecv(recv, static_cast<size_t>(recv_count) * es, ncclUint8, s, g->comm, stream_);
    }
    DISTRT_NCCL(ncclGroupEnd(), "ncclGroupEnd (collective_permute)");
    return Done(
        stream_, [&] { return d.DescribeOn(group); }, g->comm);
  }

  Status Barrier(const Group& group) override {
    const CollDesc d = CollDesc::Barrier();
    GroupComm* g;
    DISTRT_RETURN_IF_ERROR(Prepare(group, d, &g));
    void* tmp = nullptr;
    DISTRT_RETURN_IF_ERROR(Scratch(0, 8, &tmp));
    DISTRT_NCCL(ncclAllReduce(tmp, tmp, 1, ncclInt64, ncclSum, g->comm, stream_), "ncclAllReduce");
    return Wait(
        stream_, [&] { return d.DescribeOn(group); }, g->comm);
  }

  Status Send(const void* data, int64_t bytes, int peer, int tag) override {
    DISTRT_RETURN_IF_ERROR(CheckP2P("send: ", bytes, peer));
    DISTRT_CUDA(cudaSetDevice(device_), "cudaSetDevice");
    Pair* p;
    DISTRT_RETURN_IF_ERROR(GetPair(peer, &p));
    DISTRT_RETURN_IF_ERROR(ReapSends());
    PendingSend ps;
    ps.host_header.reset(new MsgHeader{bytes, tag});
    DISTRT_RETURN_IF_ERROR(DeviceBuffer::Allocate(sizeof(MsgHeader), device_, stream_, &ps.header));
    DISTRT_RETURN_IF_ERROR(
        DeviceBuffer::Allocate(static_cast<size_t>(bytes), device_, stream_, &ps.payload));
    // Copy on the (idle) main stream and wait for that only: the caller may
    // reuse `data` once Send returns, while earlier messages on the send
    // stream may still be waiting for their receiver.
    DISTRT_CUDA(cudaMemcpyAsync(ps.header->data(), ps.host_header.get(), sizeof(MsgHeader),
                                cudaMemcpyHostToDevice, stream_),
                "cudaMemcpyAsync");
    if (bytes > 0) {
      DISTRT_CUDA(cudaMemcpyAsync(ps.payload->data(), data, static_cast<size_t>(bytes),
                                  cudaMemcpyDeviceToDevice, stream_),
                  "cudaMemcpyAsync");
    }
    DISTRT_RETURN_IF_ERROR(Wait(
        stream_,
        [&] {
          return StrCat("send to rank ", peer, " (tag ", tag, ", ", bytes, " bytes): copying");
        },
        p->to));
    const int other = rank_ < peer ? 1 : 0;
    DISTRT_NCCL(
        ncclSend(ps.header->data(), sizeof(MsgHeader), ncclUint8, other, p->to, p->send_stream),
        "ncclSend");
    if (bytes > 0) {
      DISTRT_NCCL(ncclSend(ps.payload->data(), static_cast<size_t>(bytes), ncclUint8, other, p->to,
                           p->send_stream),
                  "ncclSend");
    }
    DISTRT_CUDA(cudaEventCreateWithFlags(&ps.done, cudaEventDisableTiming), "cudaEventCreate");
    DISTRT_CUDA(cudaEventRecord(ps.done, p->send_stream), "cudaEventRecord");
    ps.peer = peer;
    ps.comm = p->to;
    pending_.push_back(std::move(ps));
    return OkStatus();
  }

  Status Recv(void* data, int64_t bytes, int peer, int tag) override {
    DISTRT_RETURN_IF_ERROR(CheckP2P("recv: ", bytes, peer));
    DISTRT_CUDA(cudaSetDevice(device_), "cudaSetDevice");
    Pair* p;
    DISTRT_RETURN_IF_ERROR(GetPair(peer, &p));
    const std::string what = DescribeRecv(peer, tag, bytes);
    auto describe = [&] { return what; };
    auto& early = p->unexpected[tag];
    if (!early.empty()) {  // arrived before, while waiting for another tag
      Early m = std::move(early.front());
      early.pop_front();
      if (m.bytes != bytes) return RecvSizeMismatch(rank_, what, m.bytes);
      if (bytes > 0) {
        DISTRT_CUDA(cudaMemcpyAsync(data, m.buffer->data(), static_cast<size_t>(bytes),
                                    cudaMemcpyDeviceToDevice, p->recv_stream),
                    "cudaMemcpyAsync");
      }
      return Wait(p->recv_stream, describe, p->from);
    }
    const int other = rank_ < peer ? 1 : 0;
    for (;;) {
      void* hdr = nullptr;
      DISTRT_RETURN_IF_ERROR(Scratch(1, sizeof(MsgHeader), &hdr));
      DISTRT_NCCL(ncclRecv(hdr, sizeof(MsgHeader), ncclUint8, other, p->from, p->recv_stream),
                  "ncclRecv");
      MsgHeader h;
      DISTRT_CUDA(cudaMemcpyAsync(&h, hdr, sizeof(h), cudaMemcpyDeviceToHost, p->recv_stream),
                  "cudaMemcpyAsync");
      DISTRT_RETURN_IF_ERROR(Wait(p->recv_stream, describe, p->from));
      if (h.tag == tag && h.bytes == bytes) {
        if (bytes > 0) {
          DISTRT_NCCL(
              ncclRecv(data, static_cast<size_t>(bytes), ncclUint8, other, p->from, p->recv_stream),
              "ncclRecv");
        }
        return Wait(p->recv_stream, describe, p->from);
      }
      // Another tag (keep it for later), or the right tag with the wrong
      // size (drain it, then report).
      Early m;
      m.bytes = h.bytes;
      DISTRT_RETURN_IF_ERROR(
          DeviceBuffer::Allocate(static_cast<size_t>(h.bytes), device_, p->recv_stream, &m.buffer));
      if (h.bytes > 0) {
        DISTRT_NCCL(ncclRecv(m.buffer->data(), static_cast<size_t>(h.bytes), ncclUint8, other,
                             p->from, p->recv_stream),
                    "ncclRecv");
      }
      DISTRT_RETURN_IF_ERROR(Wait(p->recv_stream, describe, p->from));
      if (h.tag == tag) return RecvSizeMismatch(rank_, what, h.bytes);
      p->unexpected[h.tag].push_back(std::move(m));
    }
  }

  void Abort(const Status& reason) override {
    AbortAll();
    if (failed_.ok()) failed_ = RankFailed(rank_, reason);
    if (options_.on_abort) options_.on_abort(rank_, reason);
  }

 private:
  struct GroupComm {
    ncclComm_t comm = nullptr;
    int me = -1;
  };
  struct Early {
    int64_t bytes = 0;
    std::shared_ptr<DeviceBuffer> buffer;
  };
  struct Pair {
    ncclComm_t to = nullptr, from = nullptr;  // this rank sends on `to`, receives on `from`
    cudaStream_t send_stream = nullptr, recv_stream = nullptr;
    std::map<int64_t, std::deque<Early>> unexpected;  // by tag
  };
  struct PendingSend {
    int peer = -1;
    ncclComm_t comm = nullptr;
    cudaEvent_t done = nullptr;
    std::unique_ptr<MsgHeader> host_header;
    std::shared_ptr<DeviceBuffer> header, payload;
  };

  // Waits for `s` up to the timeout, watching `comm` for asynchronous NCCL
  // errors. On timeout every NCCL communicator is aborted.
  Status Wait(cudaStream_t s, const std::function<std::string()>& what, ncclComm_t comm) {
    return WaitFor([s] { return cudaStreamQuery(s); }, what, comm);
  }
  Status WaitFor(const std::function<cudaError_t()>& query,
                 const std::function<std::string()>& what, ncclComm_t comm) {
    const auto deadline = Clock::now() + options_.timeout;
    for (;;) {
      cudaError_t e = query();
      if (e == cudaSuccess) return OkStatus();
      if (e != cudaErrorNotReady) return Fail(CudaError(e, StrCat("waiting in ", what()).c_str()));
      if (comm != nullptr) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
          return Fail(InternalError("rank ", rank_, ": NCCL error in ", what(), ": ",
                                    ncclGetErrorString(async)));
        }
      }
      if (Clock::now() > deadline) {
        return Fail(DeadlineExceededError("rank ", rank_, ": no progress in ", what(), " for ",
                                          Seconds(options_.timeout),
                                          "; the NCCL communicators are aborted"));
      }
      std::this_thread::yield();
    }
  }

  // A started collective: the caller's stream waits for its event.
  class Pending : public PendingCollective {
   public:
    Pending(NcclComm* comm, cudaStream_t caller, cudaEvent_t done)
        : comm_(comm), caller_(caller), done_(done) {}
    ~Pending() override {
      if (done_) comm_->GiveEvent(done_);
    }
    Status Wait() override {
      if (!done_) return OkStatus();
      const cudaError_t e = cudaStreamWaitEvent(caller_, done_, 0);
      comm_->GiveEvent(done_);
      done_ = nullptr;
      if (e != cudaSuccess) return CudaError(e, "cudaStreamWaitEvent");
      return OkStatus();
    }

   private:
    NcclComm* comm_;
    cudaStream_t caller_;
    cudaEvent_t done_;
  };

  // Events for Start, reused (creating one per collective costs a driver
  // call each).
  Status TakeEvent(cudaEvent_t* e) {
    std::lock_guard<std::mutex> lock(events_mu_);
    if (!free_events_.empty()) {
      *e = free_events_.back();
      free_events_.pop_back();
      return OkStatus();
    }
    DISTRT_CUDA(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate");
    return OkStatus();
  }
  void GiveEvent(cudaEvent_t e) {
    std::lock_guard<std::mutex> lock(events_mu_);
    free_events_.push_back(e);
  }

  // How a collective ends: the host waits for the stream, unless Start
  // only queues it.
  Status Done(cudaStream_t s, const std::function<std::string()>& what, ncclComm_t comm) {
    if (enqueue_only_) return OkStatus();
    return Wait(s, what, comm);
  }

  Status Fail(const Status& st) {
    AbortAll();
    if (failed_.ok()) failed_ = st;
    return st;
  }

  void AbortAll() {
    if (aborted_) return;
    aborted_ = true;
    for (auto& kv : groups_) {
      if (kv.second.comm != nullptr && kv.second.comm != world_) ncclCommAbort(kv.second.comm);
      kv.second.comm = nullptr;
    }
    for (auto& kv : pairs_) {
      if (kv.second.to) ncclCommAbort(kv.second.to);
      if (kv.second.from) ncclCommAbort(kv.second.from);
      kv.second.to = kv.second.from = nullptr;
    }
    if (world_) ncclCommAbort(world_);
    world_ = nullptr;
  }

  Status CheckP2P(const char* prefix, int64_t bytes, int peer) {
    if (!failed_.ok()) return AbortedError(prefix, failed_.message());
    return ValidatePeer(prefix, rank_, size_, peer, bytes);
  }

  // Growable device scratch, slot 0 or 1.
  Status Scratch(int slot, size_t bytes, void** out) {
    std::shared_ptr<DeviceBuffer>& b = scratch_[slot];
    if (!b || b->size() < bytes) {  // the old buffer is freed in stream order
      DISTRT_RETURN_IF_ERROR(
          DeviceBuffer::Allocate(std::max<size_t>(bytes, 256), device_, stream_, &b));
    }
    *out = b->data();
    return OkStatus();
  }

  // The all-reduce proper (enqueued on stream_, not waited for).
  Status AllReduceOn(GroupComm& g, int n, const void* send, void* recv, int64_t count, DType dtype,
                     ReduceOp op) {
    if (count == 0) return OkStatus();
    const size_t es = DTypeSize(dtype);
    ncclDataType_t t;
    if (!NcclType(dtype, &t)) {
      // No NCCL type (i16): gather every member's buffer and reduce on the
      // host in member order, as the local backend does.
      void* all = nullptr;
      DISTRT_RETURN_IF_ERROR(Scratch(1, static_cast<size_t>(count) * es * n, &all));
      DISTRT_NCCL(
          ncclAllGather(send, all, static_cast<size_t>(count) * es, ncclUint8, g.comm, stream_),
          "ncclAllGather");
      std::vector<uint8_t> host(static_cast<size_t>(count) * es * n);
      DISTRT_CUDA(cudaMemcpyAsync(host.data(), all, host.size(), cudaMemcpyDeviceToHost, stream_),
                  "cudaMemcpyAsync");
      DISTRT_RETURN_IF_ERROR(Wait(
          stream_, [&] { return std::string("all_reduce (host reduction)"); }, g.comm));
      for (int j = 1; j < n; ++j) {
        DISTRT_RETURN_IF_ERROR(
            ReduceInto(host.data(), host.data() + j * count * es, count, dtype, op));
      }
      DISTRT_RETURN_IF_ERROR(FinishReduce(host.data(), count, dtype, op, n));
      DISTRT_CUDA(cudaMemcpyAsync(recv, host.data(), static_cast<size_t>(count) * es,
                                  cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpyAsync");
      return Wait(
          stream_, [&] { return std::string("all_reduce (host reduction)"); }, g.comm);
    }
    uint8_t* mask = nullptr;
    if (FloatMinMax(dtype, op)) {
      // NCCL's max/min need not propagate NaN; distrt's do (docs/rank-program.md).
      void* m = nullptr;
      DISTRT_RETURN_IF_ERROR(Scratch(1, static_cast<size_t>(count), &m));
      mask = static_cast<uint8_t*>(m);
      DISTRT_CUDA(cuda::NanMask(dtype, send, mask, count, stream_), "NaN mask kernel");
    }
    DISTRT_NCCL(ncclAllReduce(send, recv, static_cast<size_t>(count), t, NcclOp(dtype, op), g.comm,
                              stream_),
                "ncclAllReduce");
    if (mask != nullptr) {
      DISTRT_NCCL(ncclAllReduce(mask, mask, static_cast<size_t>(count), ncclUint8, ncclMax, g.comm,
                                stream_),
                  "ncclAllReduce (NaN mask)");
      DISTRT_CUDA(cuda::ApplyNanMask(dtype, recv, mask, count, stream_), "NaN mask kernel");
    }
    if (op == ReduceOp::kAvg) {
      DISTRT_CUDA(cuda::DivideBy(dtype, recv, count, n, stream_), "divide kernel");
    }
    return OkStatus();
  }

  Status Prepare(const Group& group, const CollDesc& d, GroupComm** out) {
    if (!failed_.ok()) {
      return CannotStart(rank_, d.DescribeOn(group), failed_);
    }
    DISTRT_CUDA(cudaSetDevice(device_), "cudaSetDevice");
    int me;
    DISTRT_RETURN_IF_ERROR(ValidateCall(group, rank_, size_, d, &me));
    auto it = groups_.find(group);
    if (it == groups_.end()) {
      GroupComm gc;
      gc.me = me;
      DISTRT_RETURN_IF_ERROR(CreateGroupComm(group, me, d, &gc.comm));
      it = groups_.emplace(group, gc).first;
    }
    *out = &it->second;
    if (options_.check_collectives) DISTRT_RETURN_IF_ERROR(CheckCall(group, it->second, d));
    return OkStatus();
  }

  // The id travels from group[0] to the other members over the world
  // communicator; then the members initialise their communicator.
  Status CreateGroupComm(const Group& group, int me, const CollDesc& d, ncclComm_t* out) {
    bool whole = static_cast<int>(group.size()) == size_;
    for (size_t i = 0; whole && i < group.size(); ++i) whole = group[i] == static_cast<int>(i);
    if (whole) {
      *out = world_;
      return OkStatus();
    }
    ncclUniqueId uid;
    void* idbuf = small_->data();
    if (me == 0) {
      DISTRT_NCCL(ncclGetUniqueId(&uid), "ncclGetUniqueId");
      DISTRT_CUDA(cudaMemcpyAsync(idbuf, &uid, sizeof(uid), cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpyAsync");
      DISTRT_NCCL(ncclGroupStart(), "ncclGroupStart");
      for (size_t j = 1; j < group.size(); ++j) {
        ncclSend(idbuf, sizeof(uid), ncclUint8, group[j], world_, stream_);
      }
      DISTRT_NCCL(ncclGroupEnd(), "ncclGroupEnd (group id)");
    } else {
      DISTRT_NCCL(ncclRecv(idbuf, sizeof(uid), ncclUint8, group[0], world_, stream_), "ncclRecv");
      DISTRT_CUDA(cudaMemcpyAsync(&uid, idbuf, sizeof(uid), cudaMemcpyDeviceToHost, stream_),
                  "cudaMemcpyAsync");
    }
    DISTRT_RETURN_IF_ERROR(Wait(
        stream_, [&] { return StrCat(d.DescribeOn(group), " (sending the group's NCCL id)"); },
        world_));
    DISTRT_NCCL(ncclCommInitRank(out, static_cast<int>(group.size()), uid, me),
                "ncclCommInitRank (group)");
    return OkStatus();
  }

  // Point-to-point communicators of the pair {rank_, peer}: one per
  // direction, so both sides may send before either receives.
  Status GetPair(int peer, Pair** out) {
    auto it = pairs_.find(peer);
    if (it != pairs_.end()) {
      *out = &it->second;
      return OkStatus();
    }
    const bool lo = rank_ < peer;
    ncclUniqueId ids[2];  // [0]: lo -> hi, [1]: hi -> lo
    void* buf = small_->data();
    if (lo) {
      DISTRT_NCCL(ncclGetUniqueId(&ids[0]), "ncclGetUniqueId");
      DISTRT_NCCL(ncclGetUniqueId(&ids[1]), "ncclGetUniqueId");
      DISTRT_CUDA(cudaMemcpyAsync(buf, ids, sizeof(ids), cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpyAsync");
      DISTRT_NCCL(ncclSend(buf, sizeof(ids), ncclUint8, peer, world_, stream_), "ncclSend");
    } else {
      DISTRT_NCCL(ncclRecv(buf, sizeof(ids), ncclUint8, peer, world_, stream_), "ncclRecv");
      DISTRT_CUDA(cudaMemcpyAsync(ids, buf, sizeof(ids), cudaMemcpyDeviceToHost, stream_),
                  "cudaMemcpyAsync");
    }
    DISTRT_RETURN_IF_ERROR(Wait(
        stream_, [&] { return StrCat("connecting to rank ", peer, " for send/recv"); }, world_));
    Pair p;
    ncclComm_t c[2];
    const int my = lo ? 0 : 1;
    DISTRT_NCCL(ncclCommInitRank(&c[0], 2, ids[0], my), "ncclCommInitRank (pair)");
    DISTRT_NCCL(ncclCommInitRank(&c[1], 2, ids[1], my), "ncclCommInitRank (pair)");
    p.to = lo ? c[0] : c[1];
    p.from = lo ? c[1] : c[0];
    DISTRT_CUDA(cudaStreamCreateWithFlags(&p.send_stream, cudaStreamNonBlocking),
                "cudaStreamCreate");
    DISTRT_CUDA(cudaStreamCreateWithFlags(&p.recv_stream, cudaStreamNonBlocking),
                "cudaStreamCreate");
    *out = &pairs_.emplace(peer, std::move(p)).first->second;
    return OkStatus();
  }

  Status ReapSends() {
    std::vector<PendingSend> keep;
    for (auto& p : pending_) {
      cudaError_t e = cudaEventQuery(p.done);
      if (e == cudaSuccess) {
        cudaEventDestroy(p.done);
        continue;
      }
      if (e != cudaErrorNotReady) return Fail(CudaError(e, "send completion"));
      keep.push_back(std::move(p));
    }
    pending_ = std::move(keep);
    return OkStatus();
  }

  Status FlushSends() {
    const auto deadline = Clock::now() + options_.timeout;
    while (!pending_.empty()) {
      DISTRT_RETURN_IF_ERROR(ReapSends());
      if (pending_.empty()) break;
      if (Clock::now() > deadline) {
        return Fail(DeadlineExceededError("rank ", rank_, ": ", pending_.size(),
                                          " send(s) not received after ", Seconds(options_.timeout),
                                          " (first to rank ", pending_[0].peer, ")"));
      }
      std::this_thread::yield();
    }
    return OkStatus();
  }

  // The exchanges go through device scratch after the ids in small_: room
  // for one member's encoded descriptor, then for everybody's.
  Status CheckCall(const Group& group, GroupComm& g, const CollDesc& d) {
    uint8_t* dsend = static_cast<uint8_t*>(small_->data()) + 2 * sizeof(NcclId);
    uint8_t* drecv = dsend + CollDesc::EncodedSize(static_cast<size_t>(size_)) * 8;
    return CheckAcrossMembers(
        group, rank_, d,
        [&](const uint64_t* send, size_t words, uint64_t* recv, const char* phase) -> Status {
          const size_t n = group.size();
          DISTRT_CUDA(cudaMemcpyAsync(dsend, send, words * 8, cudaMemcpyHostToDevice, stream_),
                      "cudaMemcpyAsync");
          DISTRT_NCCL(ncclAllGather(dsend, drecv, words, ncclUint64, g.comm, stream_),
                      "ncclAllGather (check)");
          DISTRT_CUDA(cudaMemcpyAsync(recv, drecv, words * n * 8, cudaMemcpyDeviceToHost, stream_),
                      "cudaMemcpyAsync");
          return Wait(
              stream_, [&] { return StrCat(d.DescribeOn(group), " (", phase, ")"); }, g.comm);
        });
  }

  NcclCommOptions options_;
  int rank_ = 0, size_ = 1, device_ = 0;
  cudaStream_t stream_ = nullptr;
  bool enqueue_only_ = false;  // inside Start
  std::mutex events_mu_;
  std::vector<cudaEvent_t> free_events_;
  ncclComm_t world_ = nullptr;
  std::shared_ptr<DeviceBuffer> small_;
  std::shared_ptr<DeviceBuffer> scratch_[2];
  std::map<Group, GroupComm> groups_;
  std::map<int, Pair> pairs_;
  std::vector<PendingSend> pending_;
  Status failed_;
  bool aborted_ = false;
};

// ---- host staging --------------------------------------------------------------

class HostStagingComm : public Communicator {
 public:
  explicit HostStagingComm(NcclDeviceComm* d) : d_(d) {}

  int rank() const override { return d_->rank(); }
  int world_size() const override { return d_->world_size(); }
  std::string backend() const override { return "nccl"; }

  Status AllReduce(const Group& group, const void* send, void* recv, int64_t count, DType dtype,
                   ReduceOp op) override {
    const size_t bytes = static_cast<size_t>(count) * DTypeSize(dtype);
    DISTRT_RETURN_IF_ERROR(Ensure(&a_, bytes));
    DISTRT_RETURN_IF_ERROR(Up(a_->data(), send, bytes));
    DISTRT_RETURN_IF_ERROR(d_->AllReduce(group, a_->data(), a_->data(), count, dtype, op));
    return Down(recv, a_->data(), bytes);
  }

  Status AllGather(const Group& group, const void* send, void* recv,
                   const std::vector<int64_t>& counts, DType dtype) override {
    const size_t es = DTypeSize(dtype);
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    int me = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i] == rank()) me = static_cast<int>(i);
    }
    const size_t mine =
        me < static_cast<int>(counts.size()) ? static_cast<size_t>(counts[me]) * es : 0;
    DISTRT_RETURN_IF_ERROR(Ensure(&a_, mine));
    DISTRT_RETURN_IF_ERROR(Ensure(&b_, static_cast<size_t>(total) * es));
    DISTRT_RETURN_IF_ERROR(Up(a_->data(), send, mine));
    DISTRT_RETURN_IF_ERROR(d_->AllGather(group, a_->data(), b_->data(), counts, dtype));
    return Down(recv, b_->data(), static_cast<size_t>(total) * es);
  }

  Status ReduceScatter(const Group& group, const void* send, void* recv,
                       const std::vector<int64_t>& counts, DType dtype, ReduceOp op) override {
    const size_t es = DTypeSize(dtype);
    int64_t total = 0, mine = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      total += counts[i];
      if (i < group.size() && group[i] == rank()) mine = counts[i];
    }
    DISTRT_RETURN_IF_ERROR(Ensure(&a_, static_cast<size_t>(total) * es));
    DISTRT_RETURN_IF_ERROR(Ensure(&b_, static_cast<size_t>(mine) * es));
    DISTRT_RETURN_IF_ERROR(Up(a_->data(), send, static_cast<size_t>(total) * es));
    DISTRT_RETURN_IF_ERROR(d_->ReduceScatter(group, a_->data(), b_->data(), counts, dtype, op));
    return Down(recv, b_->data(), static_cast<size_t>(mine) * es);
  }

  Status AllToAll(const Group& group, const void* send, const std::vector<int64_t>& send_counts,
                  void* recv, const std::vector<int64_t>& recv_counts, DType dtype) override {
    const size_t es = DTypeSize(dtype);
    int64_t s = 0, r = 0;
    for (int64_t c : send_counts) s += c;
    for (int64_t c : recv_counts) r += c;
    DISTRT_RETURN_IF_ERROR(Ensure(&a_, static_cast<size_t>(s) * es));
    DISTRT_RETURN_IF_ERROR(Ensure(&b_, static_cast<size_t>(r) * es));
    DISTRT_RETURN_IF_ERROR(Up(a_->data(), send, static_cast<size_t>(s) * es));
    DISTRT_RETURN_IF_ERROR(
        d_->AllToAll(group, a_->data(), send_counts, b_->data(), recv_counts, dtype));
    return Down(recv, b_->data(), static_cast<size_t>(r) * es);
  }

  Status CollectivePermute(const Group& group, const void* send, int64_t send_count, int target,
                           void* recv, int64_t recv_count, int source, DType dtype) override {
    const size_t es = DTypeSize(dtype);
    const size_t sb = static_cast<size_t>(std::max<int64_t>(send_count, 0)) * es;
    const size_t rb = static_cast<size_t>(std::max<int64_t>(recv_count, 0)) * es;
    DISTRT_RETURN_IF_ERROR(Ensure(&a_, sb));
    DISTRT_RETURN_IF_ERROR(Ensure(&b_, rb));
    DISTRT_RETURN_IF_ERROR(Up(a_->data(), send, sb));
    DISTRT_RETURN_IF_ERROR(d_->CollectivePermute(group, a_->data(), send_count, target, b_->data(),
                                                 recv_count, source, dtype));
    if (source < 0) return OkStatus();  // received nothing: recv untouched
    return Down(recv, b_->data(), rb);
  }

  Status Send(const void* data, int64_t bytes, int peer, int tag) override {
    DISTRT_RETURN_IF_ERROR(Ensure(&a_, static_cast<size_t>(std::max<int64_t>(bytes, 0))));
    DISTRT_RETURN_IF_ERROR(Up(a_->data(), data, static_cast<size_t>(std::max<int64_t>(bytes, 0))));
    return d_->Send(a_->data(), bytes, peer, tag);
  }

  Status Recv(void* data, int64_t bytes, int peer, int tag) override {
    DISTRT_RETURN_IF_ERROR(Ensure(&b_, static_cast<size_t>(std::max<int64_t>(bytes, 0))));
    DISTRT_RETURN_IF_ERROR(d_->Recv(b_->data(), bytes, peer, tag));
    return Down(data, b_->data(), static_cast<size_t>(bytes));
  }

  Status Barrier(const Group& group) override { return d_->Barrier(group); }
  void Abort(const Status& reason) override { d_->Abort(reason); }

 private:
  Status Ensure(std::shared_ptr<DeviceBuffer>* b, size_t bytes) {
    if (!*b || (*b)->size() < bytes) {
      return DeviceBuffer::Allocate(std::max<size_t>(bytes, 256), d_->device(), d_->stream(), b);
    }
    return OkStatus();
  }
  Status Up(void* dev, const void* host, size_t bytes) {
    if (bytes == 0) return OkStatus();
    DISTRT_CUDA(cudaSetDevice(d_->device()), "cudaSetDevice");
    DISTRT_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, d_->stream()),
                "cudaMemcpyAsync (to device)");
    return OkStatus();
  }
  Status Down(void* host, const void* dev, size_t bytes) {
    if (bytes == 0) return OkStatus();
    DISTRT_CUDA(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, d_->stream()),
                "cudaMemcpyAsync (to host)");
    return d_->WaitStream("copying a result to the host");
  }

  NcclDeviceComm* d_;
  std::shared_ptr<DeviceBuffer> a_, b_;
};

}  // namespace

// ---- public entry points ---------------------------------------------------------

Status NewNcclId(NcclId* id) {
  DISTRT_RETURN_IF_ERROR(RequireCudaDevice(-1));
  ncclUniqueId uid;
  DISTRT_NCCL(ncclGetUniqueId(&uid), "ncclGetUniqueId");
  std::memcpy(id->bytes, &uid, sizeof(uid));
  return OkStatus();
}

std::string NcclIdToHex(const NcclId& id) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (char c : id.bytes) {
    const unsigned char u = static_cast<unsigned char>(c);
    s += kHex[u >> 4];
    s += kHex[u & 15];
  }
  return s;
}

Status NcclIdFromHex(const std::string& hex, NcclId* id) {
  if (hex.size() != 2 * sizeof(id->bytes)) {
    return InvalidArgumentError("an NCCL id has ", 2 * sizeof(id->bytes), " hex digits, got ",
                                hex.size());
  }
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < sizeof(id->bytes); ++i) {
    const int hi = val(hex[2 * i]), lo = val(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return InvalidArgumentError("NCCL id: '", hex.substr(2 * i, 2), "' is not hex");
    id->bytes[i] = static_cast<char>(hi * 16 + lo);
  }
  return OkStatus();
}

Status CreateNcclCommunicator(const NcclId& id, int rank, int world_size,
                              const NcclCommOptions& options, std::unique_ptr<Communicator>* out) {
  std::unique_ptr<NcclComm> c(new NcclComm(options));
  DISTRT_RETURN_IF_ERROR(c->Init(id, rank, world_size));
  *out = std::move(c);
  return OkStatus();
}

Status CreateNcclCommunicatorFromFile(const std::string& path_in, int rank, int world_size,
                                      const NcclCommOptions& options,
                                      std::unique_ptr<Communicator>* out) {
  std::string path = path_in;
  if (path.empty()) {
    const char* env = std::getenv("DISTRT_NCCL_ID");
    if (env == nullptr || *env == 0) {
      return InvalidArgumentError("nccl rendezvous: no path given and DISTRT_NCCL_ID is not set");
    }
    path = env;
  }
  DISTRT_RETURN_IF_ERROR(RequireCudaDevice(options.device));
  NcclId id;
  if (rank == 0) {
    DISTRT_RETURN_IF_ERROR(NewNcclId(&id));
    const std::string tmp = StrCat(path, ".tmp.", getpid());
    {
      std::ofstream f(tmp, std::ios::trunc);
      f << NcclIdToHex(id) << "\n";
      if (!f) return InternalError("nccl rendezvous: cannot write ", tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      return InternalError("nccl rendezvous: cannot rename ", tmp, " to ", path);
    }
  } else {
    const auto deadline = Clock::now() + options.timeout;
    for (;;) {
      std::ifstream f(path);
      std::string hex;
      if (f && (f >> hex) && hex.size() == 2 * sizeof(id.bytes)) {
        DISTRT_RETURN_IF_ERROR(NcclIdFromHex(hex, &id));
        break;
      }
      if (Clock::now() > deadline) {
        return DeadlineExceededError("nccl rendezvous: rank ", rank, " found no id in ", path,
                                     " after ", Seconds(options.timeout));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return CreateNcclCommunicator(id, rank, world_size, options, out);
}

Status NewHostStagingCommunicator(Communicator* nccl, std::unique_ptr<Communicator>* out) {
  auto* d = dynamic_cast<NcclDeviceComm*>(nccl);
  if (d == nullptr) {
    return InvalidArgumentError("NewHostStagingCommunicator needs a nccl communicator, got '",
                                nccl ? nccl->backend() : std::string("null"), "'");
  }
  out->reset(new HostStagingComm(d));
  return OkStatus();
}

}  // namespace distrt
