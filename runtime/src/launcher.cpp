#include "distrt/launcher.h"

#include <algorithm>
#include <functional>
#include <set>
#include <thread>

#include "distrt/local_comm.h"
#include "kernel_util.h"

namespace distrt {

namespace {
Status AssemblePieces(const std::vector<OutputPiece>& pieces, const char* what,
                      std::vector<NamedTensor>* global);
}  // namespace

Status LocalSession::Create(const std::vector<std::shared_ptr<const Program>>& programs,
                            const LocalRunOptions& options, std::unique_ptr<LocalSession>* out) {
  const int n = static_cast<int>(programs.size());
  if (n == 0) return InvalidArgumentError("RunLocal: no programs");
  for (int r = 0; r < n; ++r) {
    if (!programs[r]) return InvalidArgumentError("RunLocal: program ", r, " is null");
    if (programs[r]->rank() != r || programs[r]->world_size() != n) {
      return InvalidArgumentError("RunLocal: program ", r, " ('", programs[r]->source(),
                                  "') is rank ", programs[r]->rank(), " of ",
                                  programs[r]->world_size(), ", expected rank ", r, " of ", n);
    }
  }
  if (!options.devices.empty() && static_cast<int>(options.devices.size()) != n) {
    return InvalidArgumentError("LocalRunOptions.devices has ", options.devices.size(),
                                " entries for ", n, " ranks");
  }
  std::unique_ptr<LocalSession> session(new LocalSession());
  LocalCommOptions copts;
  copts.timeout = options.timeout;
  copts.poll_before_sleeping = ThreadsHaveOwnCores(n * std::max(1, options.threads_per_rank));
  DISTRT_RETURN_IF_ERROR(LocalWorld::Create(n, copts, &session->world_));
  // Executors load their weights in parallel, one thread per rank.
  session->execs_.resize(static_cast<size_t>(n));
  std::vector<Status> status(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ExecutorOptions eo;
      eo.threads = options.threads_per_rank;
      eo.profile = options.profile;
      eo.allow_host_fallback = options.allow_host_fallback;
      if (!options.devices.empty()) eo.device = options.devices[static_cast<size_t>(r)];
      status[r] = Executor::Create(programs[r], session->world_->comm(r), eo,
                                   &session->execs_[static_cast<size_t>(r)]);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    if (!status[r].ok()) return status[r].WithContext(StrCat("rank ", r));
  }
  *out = std::move(session);
  return OkStatus();
}

LocalSession::~LocalSession() = default;

int LocalSession::world_size() const { return static_cast<int>(execs_.size()); }

Status LocalSession::RunEach(const std::function<Status(Executor&, int)>& body,
                             std::vector<RunStats>* stats) {
  if (!broken_.ok()) {
    return FailedPreconditionError("the local session failed in an earlier run: ",
                                   broken_.message());
  }
  DISTRT_RETURN_IF_ERROR(world_->StartRun());
  const int n = world_size();
  std::vector<Status> status(static_cast<size_t>(n));
  auto run_rank = [&](int r) {
    Status s = body(*execs_[static_cast<size_t>(r)], r);  // aborts the world on failure
    if (s.ok()) world_->MarkFinished(r);
    status[r] = s;
  };
  if (n == 1) {
    run_rank(0);  // one rank: on this thread, not a thread started per run
  } else {
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) threads.emplace_back(run_rank, r);
    for (auto& t : threads) t.join();
  }
  // Root cause: the first rank that failed on its own (not ABORTED because of
  // another rank); else the first failure.
  int culprit = -1;
  for (int r = 0; r < n && culprit < 0; ++r) {
    if (!status[r].ok() && status[r].code() != StatusCode::kAborted) culprit = r;
  }
  for (int r = 0; r < n && culprit < 0; ++r) {
    if (!status[r].ok()) culprit = r;
  }
  if (culprit >= 0) {
    broken_ = status[culprit].WithContext(StrCat("rank ", culprit));
    return broken_;
  }
  if (stats) {
    stats->clear();
    for (auto& e : execs_) stats->push_back(e->stats());
  }
  return OkStatus();
}

Status LocalSession::Run(const std::vector<std::vector<Tensor>>& inputs,
                         std::vector<std::vector<Tensor>>* outputs,
                         std::vector<RunStats>* stats) {
  if (inputs.size() != execs_.size()) {
    return InvalidArgumentError("RunLocal: ", execs_.size(), " programs but inputs for ",
                                inputs.size(), " ranks");
  }
  std::vector<std::vector<Tensor>> outs(execs_.size());
  DISTRT_RETURN_IF_ERROR(RunEach(
      [&](Executor& e, int r) {
        return e.Run(inputs[static_cast<size_t>(r)], &outs[static_cast<size_t>(r)]);
      },
      stats));
  *outputs = std::move(outs);
  return OkStatus();
}

Status LocalSession::RunSchedule(const std::vector<std::vector<std::vector<Tensor>>>& inputs,
                                 std::vector<std::vector<std::vector<Tensor>>>* outputs,
                                 std::vector<RunStats>* stats) {
  if (inputs.size() != execs_.size()) {
    return InvalidArgumentError("RunLocalSchedule: ", execs_.size(), " programs but inputs for ",
                                inputs.size(), " ranks");
  }
  std::vector<std::vector<std::vector<Tensor>>> outs(execs_.size());
  DISTRT_RETURN_IF_ERROR(RunEach(
      [&](Executor& e, int r) {
        return e.RunSchedule(inputs[static_cast<size_t>(r)], &outs[static_cast<size_t>(r)]);
      },
      stats));
  *outputs = std::move(outs);
  return OkStatus();
}

Status LocalSession::ReadPersistent(std::vector<std::vector<PersistentTensor>>* per_rank) const {
  per_rank->assign(execs_.size(), {});
  for (size_t r = 0; r < execs_.size(); ++r) {
    Status st = execs_[r]->ReadPersistent(&(*per_rank)[r]);
    if (!st.ok()) return st.WithContext(StrCat("rank ", r));
  }
  return OkStatus();
}

Status RunLocal(const std::vector<std::shared_ptr<const Program>>& programs,
                const std::vector<std::vector<Tensor>>& inputs,
                std::vector<std::vector<Tensor>>* outputs, const LocalRunOptions& options,
                std::vector<RunStats>* stats) {
  if (inputs.size() != programs.size()) {
    return InvalidArgumentError("RunLocal: ", programs.size(), " programs but inputs for ",
                                inputs.size(), " ranks");
  }
  std::unique_ptr<LocalSession> session;
  DISTRT_RETURN_IF_ERROR(LocalSession::Create(programs, options, &session));
  return session->Run(inputs, outputs, stats);
}

Status RunLocalSchedule(const std::vector<std::shared_ptr<const Program>>& programs,
                        const std::vector<std::vector<std::vector<Tensor>>>& inputs,
                        std::vector<std::vector<std::vector<Tensor>>>* outputs,
                        const LocalRunOptions& options, std::vector<RunStats>* stats) {
  if (inputs.size() != programs.size()) {
    return InvalidArgumentError("RunLocalSchedule: ", programs.size(), " programs but inputs for ",
                                inputs.size(), " ranks");
  }
  std::unique_ptr<LocalSession> session;
  DISTRT_RETURN_IF_ERROR(LocalSession::Create(programs, options, &session));
  return session->RunSchedule(inputs, outputs, stats);
}

namespace {
const Tensor* FindNamed(const std::vector<NamedTensor>& v, const std::string& name) {
  for (const auto& t : v) {
    if (t.name == name) return &t.tensor;
  }
  return nullptr;
}
}  // namespace

Status SliceInputs(const Program& p, const std::vector<NamedTensor>& global,
                   std::vector<Tensor>* mine) {
  mine->clear();
  for (int i = 0; i < p.proto().inputs_size(); ++i) {
    const proto::Argument& a = p.proto().inputs(i);
    const TensorType& local = p.value(p.InputValue(i)).type;
    const Tensor* g = FindNamed(global, a.name());
    if (g == nullptr) return NotFoundError("no global input named '", a.name(), "'");
    SliceInfo s;
    DISTRT_RETURN_IF_ERROR(ResolveSlice(a.slice(), local.shape, &s));
    if (g->dtype() != local.dtype || g->shape() != s.global_shape) {
      return InvalidArgumentError("global input '", a.name(), "' is ", g->type().ToString(),
                                  ", rank ", p.rank(), " expects ",
                                  TensorType{local.dtype, s.global_shape}.ToString());
    }
    // The slice's offsets count in the program's order of the dimension.
    Tensor reordered;
    if (a.chunk_order().chunks_size() > 0) {
      DISTRT_RETURN_IF_ERROR(ReorderChunks(*g, a.chunk_order(), /*to_program=*/true, &reordered));
      g = &reordered;
    }
    Tensor piece;
    DISTRT_RETURN_IF_ERROR(Tensor::Allocate(local.dtype, local.shape, &piece));
    CopyWindow(g->data<uint8_t>(), g->shape(), s.offsets, s.sizes, DTypeSize(local.dtype),
               piece.data<uint8_t>());
    mine->push_back(std::move(piece));
  }
  return OkStatus();
}

Status ScatterInputs(const std::vector<std::shared_ptr<const Program>>& programs,
                     const std::vector<NamedTensor>& global,
                     std::vector<std::vector<Tensor>>* per_rank) {
  per_rank->assign(programs.size(), {});
  for (size_t r = 0; r < programs.size(); ++r) {
    DISTRT_RETURN_IF_ERROR(SliceInputs(*programs[r], global, &(*per_rank)[r]));
  }
  return OkStatus();
}

Status AssembleOutputs(const std::vector<std::shared_ptr<const Program>>& programs,
                       const std::vector<std::vector<Tensor>>& per_rank,
                       std::vector<NamedTensor>* global) {
  if (per_rank.size() != programs.size()) {
    return InvalidArgumentError("AssembleOutputs: ", programs.size(), " programs but outputs of ",
                                per_rank.size(), " ranks");
  }
  std::vector<OutputPiece> pieces;
  for (size_t r = 0; r < programs.size(); ++r) {
    const Program& p = *programs[r];
    if (static_cast<int>(per_rank[r].size()) != p.proto().outputs_size()) {
      return InvalidArgumentError("rank ", r, " has ", per_rank[r].size(), " outputs, its program ",
                                  p.proto().outputs_size());
    }
    for (int i = 0; i < p.proto().outputs_size(); ++i) {
      pieces.push_back(
          {static_cast<int>(r), p.proto().outputs(i), per_rank[r][static_cast<size_t>(i)]});
    }
  }
  return AssembleOutputPieces(pieces, global);
}

Status AssemblePersistent(const std::vector<std::vector<PersistentTensor>>& per_rank,
                          std::vector<NamedTensor>* global) {
  // A weight's name and slice are what an output's Argument holds.
  std::vector<OutputPiece> pieces;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    for (const PersistentTensor& t : per_rank[r]) {
      if (t.weight == nullptr) {
        return InvalidArgumentError("AssemblePersistent: rank ", r, " has a piece without weight");
      }
      OutputPiece piece;
      piece.rank = static_cast<int>(r);
      piece.argument.set_name(t.weight->name());
      *piece.argument.mutable_slice() = t.weight->slice();
      piece.tensor = t.value;
      pieces.push_back(std::move(piece));
    }
  }
  return AssemblePieces(pieces, "weight", global);
}

Status AssembleOutputPieces(const std::vector<OutputPiece>& pieces,
                            std::vector<NamedTensor>* global) {
  return AssemblePieces(pieces, "output", global);
}

namespace {

// AssembleOutputPieces; `what` names the kind of tensor in messages.
Status AssemblePieces(const std::vector<OutputPiece>& pieces, const char* what,
                      std::vector<NamedTensor>* global) {
  struct Acc {
    std::string name;
    proto::ChunkOrder order;  // the pieces' order of one dimension
    Tensor tensor;
    std::vector<uint8_t> covered;           // per element
    std::set<std::vector<int64_t>> placed;  // offsets already written
  };
  std::vector<Acc> acc;
  for (const OutputPiece& op : pieces) {
    const int r = op.rank;
    const proto::Argument& a = op.argument;
    const Tensor& piece = op.tensor;
    SliceInfo s;
    DISTRT_RETURN_IF_ERROR(ResolveSlice(a.slice(), piece.shape(), &s));
    Acc* slot = nullptr;
    for (auto& x : acc) {
      if (x.name == a.name()) slot = &x;
    }
    if (slot == nullptr) {
      acc.push_back(Acc());
      slot = &acc.back();
      slot->name = a.name();
      slot->order = a.chunk_order();
      DISTRT_RETURN_IF_ERROR(Tensor::Allocate(piece.dtype(), s.global_shape, &slot->tensor));
      slot->covered.assign(static_cast<size_t>(slot->tensor.num_elements()), 0);
    }
    if (slot->tensor.shape() != s.global_shape || slot->tensor.dtype() != piece.dtype()) {
      return InvalidArgumentError(what, " '", a.name(), "': rank ", r, " has a piece of ",
                                  TensorType{piece.dtype(), s.global_shape}.ToString(),
                                  ", another rank of ", slot->tensor.type().ToString());
    }
    std::vector<int64_t> key = s.offsets;
    key.insert(key.end(), s.sizes.begin(), s.sizes.end());
    if (!slot->placed.insert(key).second) continue;  // a replica: take one copy
    PasteWindow(piece.data<uint8_t>(), s.sizes, slot->tensor.data<uint8_t>(), s.global_shape,
                s.offsets, DTypeSize(piece.dtype()));
    std::vector<uint8_t> ones(static_cast<size_t>(piece.num_elements()), 1);
    PasteWindow(ones.data(), s.sizes, slot->covered.data(), s.global_shape, s.offsets, 1);
  }
  global->clear();
  for (auto& x : acc) {
    for (size_t k = 0; k < x.covered.size(); ++k) {
      if (!x.covered[k]) {
        return InvalidArgumentError(what, " '", x.name, "': element ", k,
                                    " of the global tensor is held by no rank");
      }
    }
    if (x.order.chunks_size() > 0) {
      // Assembled in the program's order; handed back in the global one.
      Tensor original;
      DISTRT_RETURN_IF_ERROR(ReorderChunks(x.tensor, x.order, /*to_program=*/false, &original));
      x.tensor = std::move(original);
    }
    global->push_back({x.name, std::move(x.tensor)});
  }
  return OkStatus();
}

}  // namespace

}  // namespace distrt
