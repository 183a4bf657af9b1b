// Launcher pieces for one MPI process: MPI session, running this rank's
// program, gathering outputs at a root and broadcasting inputs from it.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>

#include "distrt/mpi_comm.h"

namespace distrt {

namespace {

Status MpiFailed(int code, const char* what) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) len = 0;
  return InternalError(what, " failed: ", std::string(buf, static_cast<size_t>(len)));
}

#define DISTRT_MPI(call, what)                                                 \
  do {                                                                         \
    int distrt_mpi_rc_ = (call);                                               \
    if (distrt_mpi_rc_ != MPI_SUCCESS) return MpiFailed(distrt_mpi_rc_, what); \
  } while (0)

Status RequireMpi(const char* fn) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) {
    return FailedPreconditionError(fn,
                                   ": MPI is not initialised (create a distrt::MpiSession "
                                   "first) or already finalised");
  }
  return OkStatus();
}

// ---- a tiny byte format for tensors with names ------------------------------

void PutU64(std::vector<uint8_t>* out, uint64_t v) {
  const size_t at = out->size();
  out->resize(at + 8);
  std::memcpy(out->data() + at, &v, 8);
}
void PutBytes(std::vector<uint8_t>* out, const void* p, size_t n) {
  PutU64(out, n);
  const size_t at = out->size();
  out->resize(at + n);
  if (n) std::memcpy(out->data() + at, p, n);
}

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool U64(uint64_t* v) {
    if (n_ - at_ < 8) return false;
    std::memcpy(v, p_ + at_, 8);
    at_ += 8;
    return true;
  }
  bool Bytes(const uint8_t** data, size_t* len) {
    uint64_t n;
    if (!U64(&n) || n > n_ - at_) return false;
    *data = p_ + at_;
    *len = static_cast<size_t>(n);
    at_ += static_cast<size_t>(n);
    return true;
  }

 private:
  const uint8_t* p_;
  size_t n_, at_ = 0;
};

void PutTensor(std::vector<uint8_t>* out, const Tensor& t) {
  PutU64(out, static_cast<uint64_t>(t.dtype()));
  PutU64(out, t.shape().size());
  for (int64_t d : t.shape()) PutU64(out, static_cast<uint64_t>(d));
  PutBytes(out, t.raw(), t.byte_size());
}

Status GetTensor(Reader* r, Tensor* t) {
  uint64_t dt, rank;
  if (!r->U64(&dt) || !r->U64(&rank) || rank > 64 || !IsValidDType(static_cast<int>(dt))) {
    return DataLossError("corrupt tensor header");
  }
  Shape shape(static_cast<size_t>(rank));
  for (auto& d : shape) {
    uint64_t v;
    if (!r->U64(&v)) return DataLossError("corrupt tensor shape");
    d = static_cast<int64_t>(v);
  }
  const uint8_t* data;
  size_t len;
  if (!r->Bytes(&data, &len)) return DataLossError("corrupt tensor data");
  DISTRT_RETURN_IF_ERROR(Tensor::Allocate(static_cast<DType>(dt), shape, t));
  if (len != t->byte_size())
    return DataLossError("tensor data has ", len, " bytes, expected ", t->byte_size());
  if (len) std::memcpy(t->raw(), data, len);
  return OkStatus();
}

// Messages bigger than 2 GiB go in pieces of at most this many bytes.
constexpr int64_t kChunk = int64_t{1} << 30;

Status SendBlob(const std::vector<uint8_t>& blob, int dst, MPI_Comm comm) {
  uint64_t n = blob.size();
  DISTRT_MPI(MPI_Send(&n, 1, MPI_UINT64_T, dst, 1, comm), "MPI_Send");
  for (uint64_t off = 0; off < n; off += kChunk) {
    const int c = static_cast<int>(std::min<uint64_t>(kChunk, n - off));
    DISTRT_MPI(MPI_Send(blob.data() + off, c, MPI_BYTE, dst, 2, comm), "MPI_Send");
  }
  return OkStatus();
}

Status RecvBlob(int src, MPI_Comm comm, std::vector<uint8_t>* blob) {
  uint64_t n = 0;
  DISTRT_MPI(MPI_Recv(&n, 1, MPI_UINT64_T, src, 1, comm, MPI_STATUS_IGNORE), "MPI_Recv");
  blob->resize(static_cast<size_t>(n));
  for (uint64_t off = 0; off < n; off += kChunk) {
    const int c = static_cast<int>(std::min<uint64_t>(kChunk, n - off));
    DISTRT_MPI(MPI_Recv(blob->data() + off, c, MPI_BYTE, src, 2, comm, MPI_STATUS_IGNORE),
               "MPI_Recv");
  }
  return OkStatus();
}

Status BcastBlob(int root, MPI_Comm comm, std::vector<uint8_t>* blob) {
  uint64_t n = blob->size();
  DISTRT_MPI(MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm), "MPI_Bcast");
  blob->resize(static_cast<size_t>(n));
  for (uint64_t off = 0; off < n; off += kChunk) {
    const int c = static_cast<int>(std::min<uint64_t>(kChunk, n - off));
    DISTRT_MPI(MPI_Bcast(blob->data() + off, c, MPI_BYTE, root, comm), "MPI_Bcast");
  }
  return OkStatus();
}

// A duplicate of MPI_COMM_WORLD for the life of one helper call.
class ScopedComm {
 public:
  ScopedComm() {
    if (MPI_Comm_dup(MPI_COMM_WORLD, &comm_) != MPI_SUCCESS)
      comm_ = MPI_COMM_NULL;
    else
      MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~ScopedComm() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace

// ---- MpiSession -------------------------------------------------------------

Status MpiSession::Init(int* argc, char*** argv, std::unique_ptr<MpiSession>* out) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (fin) return FailedPreconditionError("MpiSession: MPI was already finalised");
  std::unique_ptr<MpiSession> s(new MpiSession());
  if (!init) {
    int provided = 0;
    DISTRT_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    s->owns_ = true;
  }
  DISTRT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &s->rank_), "MPI_Comm_rank");
  DISTRT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &s->world_size_), "MPI_Comm_size");
  *out = std::move(s);
  return OkStatus();
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  // Wait for every rank before finalising. If a peer fails or its watchdog
  // fires meanwhile, mpirun kills this process here, in a barrier. Without
  // it this rank would sit in MPI_Finalize, and Open MPI 4.1's mpirun was
  // seen to crash or hang (about 1 run in 10) when a rank dies while another
  // is inside MPI_Finalize.
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
}

std::string MpiSession::library_version() const {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "unknown MPI";
  std::string v(buf, static_cast<size_t>(len));
  const size_t nl = v.find_first_of("\r\n");
  if (nl != std::string::npos) v.resize(nl);
  return v;
}

// ---- MpiRank ----------------------------------------------------------------

MpiRank::~MpiRank() {
  exec_.reset();
  comm_.reset();
}

Status MpiRank::Create(std::shared_ptr<const Program> program, const MpiRunOptions& options,
                       std::unique_ptr<MpiRank>* out) {
  DISTRT_RETURN_IF_ERROR(RequireMpi("MpiRank::Create"));
  std::unique_ptr<MpiRank> r(new MpiRank());
  DISTRT_RETURN_IF_ERROR(CreateMpiCommunicator(ApplyMpiEnvOverrides(options.comm), &r->comm_));
  Communicator* comm = r->comm_.get();
  Status st;
  if (!program) {
    st = InvalidArgumentError("MpiRank: no program for rank ", comm->rank());
  } else if (program->rank() != comm->rank() || program->world_size() != comm->world_size()) {
    st = InvalidArgumentError(program->source(), ": the program is rank ", program->rank(), " of ",
                              program->world_size(), " but this MPI process is rank ", comm->rank(),
                              " of ", comm->world_size(), " (mpirun -np ", comm->world_size(), ")");
  } else {
    ExecutorOptions eo;
    eo.threads = options.threads;
    eo.profile = options.profile;
    eo.device = options.device;
    eo.allow_host_fallback = options.allow_host_fallback;
    st = Executor::Create(program, comm, eo, &r->exec_);
  }
  if (!st.ok()) {
    comm->Abort(st);  // with abort_job_on_error this does not return
    return st;
  }
  *out = std::move(r);
  return OkStatus();
}

Status MpiRank::Run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  return exec_->Run(inputs, outputs);  // the executor aborts the communicator on failure
}

Status MpiRank::RunSchedule(const std::vector<std::vector<Tensor>>& inputs,
                            std::vector<std::vector<Tensor>>* outputs) {
  return exec_->RunSchedule(inputs, outputs);
}

Status RunMpiRank(std::shared_ptr<const Program> program, const std::vector<Tensor>& my_inputs,
                  std::vector<Tensor>* my_outputs, const MpiRunOptions& options,
                  RunStats* stats) {
  std::unique_ptr<MpiRank> r;
  DISTRT_RETURN_IF_ERROR(MpiRank::Create(std::move(program), options, &r));
  DISTRT_RETURN_IF_ERROR(r->Run(my_inputs, my_outputs));
  if (stats) *stats = r->executor().stats();
  return OkStatus();
}

Status RunMpiRankSchedule(std::shared_ptr<const Program> program,
                          const std::vector<std::vector<Tensor>>& my_inputs,
                          std::vector<std::vector<Tensor>>* my_outputs,
                          const MpiRunOptions& options, RunStats* stats) {
  std::unique_ptr<MpiRank> r;
  DISTRT_RETURN_IF_ERROR(MpiRank::Create(std::move(program), options, &r));
  DISTRT_RETURN_IF_ERROR(r->RunSchedule(my_inputs, my_outputs));
  if (stats) *stats = r->executor().stats();
  return OkStatus();
}

// ---- gather / broadcast -----------------------------------------------------

namespace {

// What GatherOutputs and GatherPersistent share: each rank sends its pieces
// (an Argument: name and slice, and the tensor) or, when `problem` is set,
// that message; the root assembles (AssembleOutputPieces / AssemblePersistent).
Status GatherPieces(const char* fn, const std::vector<proto::Argument>& args,
                    const std::vector<Tensor>& tensors, const std::string& problem, int root,
                    const std::function<Status(const std::vector<OutputPiece>&)>& assemble) {
  DISTRT_RETURN_IF_ERROR(RequireMpi(fn));
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (root < 0 || root >= size) {
    return InvalidArgumentError(fn, ": root ", root, " outside [0, ", size, ")");
  }
  // Payload: ok flag; then either an error message or, per piece, its
  // serialized Argument and the tensor. A rank with a problem still takes
  // part so the root can report it instead of hanging.
  std::vector<uint8_t> blob;
  if (!problem.empty()) {
    PutU64(&blob, 0);
    PutBytes(&blob, problem.data(), problem.size());
  } else {
    PutU64(&blob, 1);
    PutU64(&blob, tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::string arg = args[i].SerializeAsString();
      PutBytes(&blob, arg.data(), arg.size());
      PutTensor(&blob, tensors[i]);
    }
  }
  ScopedComm comm;
  if (comm.get() == MPI_COMM_NULL) return InternalError(fn, ": MPI_Comm_dup failed");
  if (rank != root) return SendBlob(blob, root, comm.get());

  std::vector<OutputPiece> pieces;
  Status first_error;
  for (int r = 0; r < size; ++r) {
    std::vector<uint8_t> theirs;
    if (r != root) DISTRT_RETURN_IF_ERROR(RecvBlob(r, comm.get(), &theirs));
    const std::vector<uint8_t>& b = r == root ? blob : theirs;
    Reader rd(b.data(), b.size());
    uint64_t ok = 0, n = 0;
    if (!rd.U64(&ok)) return DataLossError(fn, ": empty message from rank ", r);
    if (!ok) {
      const uint8_t* m;
      size_t len;
      if (first_error.ok()) {
        first_error = rd.Bytes(&m, &len)
                          ? InvalidArgumentError(std::string(reinterpret_cast<const char*>(m), len))
                          : DataLossError(fn, ": corrupt message from rank ", r);
      }
      continue;
    }
    if (!rd.U64(&n)) return DataLossError(fn, ": corrupt message from rank ", r);
    for (uint64_t i = 0; i < n; ++i) {
      OutputPiece p;
      p.rank = r;
      const uint8_t* a;
      size_t len;
      if (!rd.Bytes(&a, &len) || !p.argument.ParseFromArray(a, static_cast<int>(len))) {
        return DataLossError(fn, ": corrupt argument from rank ", r);
      }
      Status st = GetTensor(&rd, &p.tensor);
      if (!st.ok()) return st.WithContext(StrCat(fn, ": piece ", i, " of rank ", r));
      pieces.push_back(std::move(p));
    }
  }
  if (!first_error.ok()) return first_error;
  return assemble(pieces);
}

}  // namespace

Status GatherOutputs(const Program& program, const std::vector<Tensor>& my_outputs, int root,
                     std::vector<NamedTensor>* global) {
  global->clear();
  std::string problem;
  std::vector<proto::Argument> args;
  if (static_cast<int>(my_outputs.size()) != program.proto().outputs_size()) {
    problem = StrCat("rank ", program.rank(), " has ", my_outputs.size(), " outputs, its program ",
                     program.proto().outputs_size());
  } else {
    args.assign(program.proto().outputs().begin(), program.proto().outputs().end());
  }
  return GatherPieces(
      "GatherOutputs", args, my_outputs, problem, root,
      [&](const std::vector<OutputPiece>& pieces) { return AssembleOutputPieces(pieces, global); });
}

Status GatherPersistent(const std::vector<PersistentTensor>& mine, int root,
                        std::vector<NamedTensor>* global) {
  global->clear();
  std::string problem;
  std::vector<proto::Argument> args;
  std::vector<Tensor> tensors;
  for (const PersistentTensor& t : mine) {
    if (t.weight == nullptr) {
      problem = "GatherPersistent: a piece has no weight";
      break;
    }
    proto::Argument a;
    a.set_name(t.weight->name());
    *a.mutable_slice() = t.weight->slice();
    args.push_back(std::move(a));
    tensors.push_back(t.value);
  }
  return GatherPieces("GatherPersistent", args, tensors, problem, root,
                      [&](const std::vector<OutputPiece>& pieces) {
                        // Same placement rules as AssemblePersistent: rebuild its input.
                        std::vector<std::vector<PersistentTensor>> per_rank;
                        std::vector<proto::Weight> weights(pieces.size());
                        for (size_t i = 0; i < pieces.size(); ++i) {
                          weights[i].set_name(pieces[i].argument.name());
                          *weights[i].mutable_slice() = pieces[i].argument.slice();
                          const size_t r = static_cast<size_t>(pieces[i].rank);
                          if (per_rank.size() <= r) per_rank.resize(r + 1);
                          per_rank[r].push_back({&weights[i], pieces[i].tensor});
                        }
                        return AssemblePersistent(per_rank, global);
                      });
}

Status BroadcastTensors(int root, std::vector<NamedTensor>* tensors) {
  DISTRT_RETURN_IF_ERROR(RequireMpi("BroadcastTensors"));
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (root < 0 || root >= size) {
    return InvalidArgumentError("BroadcastTensors: root ", root, " outside [0, ", size, ")");
  }
  std::vector<uint8_t> blob;
  if (rank == root) {
    PutU64(&blob, tensors->size());
    for (const NamedTensor& t : *tensors) {
      PutBytes(&blob, t.name.data(), t.name.size());
      PutTensor(&blob, t.tensor);
    }
  }
  ScopedComm comm;
  if (comm.get() == MPI_COMM_NULL) return InternalError("BroadcastTensors: MPI_Comm_dup failed");
  DISTRT_RETURN_IF_ERROR(BcastBlob(root, comm.get(), &blob));
  if (rank == root) return OkStatus();
  Reader rd(blob.data(), blob.size());
  uint64_t n = 0;
  if (!rd.U64(&n)) return DataLossError("BroadcastTensors: corrupt message");
  std::vector<NamedTensor> out;
  for (uint64_t i = 0; i < n; ++i) {
    NamedTensor t;
    const uint8_t* name;
    size_t len;
    if (!rd.Bytes(&name, &len)) return DataLossError("BroadcastTensors: corrupt message");
    t.name.assign(reinterpret_cast<const char*>(name), len);
    DISTRT_RETURN_IF_ERROR(GetTensor(&rd, &t.tensor));
    out.push_back(std::move(t));
  }
  *tensors = std::move(out);
  return OkStatus();
}

}  // namespace distrt
