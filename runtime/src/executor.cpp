#include "distrt/executor.h"

#include <chrono>
#include <map>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "exec_common.h"
#include "scheduled_loop.h"
#include "kernel.h"
#include "thread_pool.h"
#include "via_f32.h"
#include "weights.h"

namespace distrt {

struct Executor::Impl {
  std::shared_ptr<Device> device;  // where the program runs
  bool on_host = true;             // device is the host
  std::unique_ptr<ThreadPool> pool;
  std::shared_ptr<MemoryTracker> weight_tracker = std::make_shared<MemoryTracker>();
  std::shared_ptr<MemoryTracker> run_tracker = std::make_shared<MemoryTracker>();
  std::vector<Tensor> persistent;     // weights and constants, by value index
  std::vector<const KernelDef*> kernels;  // per instruction
  // Per instruction: where its kernel runs (the device, or the host for an
  // instruction without a device kernel).
  std::vector<std::shared_ptr<Device>> runs_on;
  // Per instruction: a host kernel written for f32 runs it on its bf16/f16
  // operands widened to f32 (via_f32.h).
  std::vector<bool> via_f32;
  // Values to release after each instruction (last use there, or never used).
  std::vector<std::vector<int>> release_after;
  // Per instruction and input: the value dies there (candidate for in-place).
  std::vector<std::vector<bool>> dies_at;
  // Per instruction and output: the weight whose own buffer an optimizer
  // update overwrites in place (the state it updates, read last there, or
  // a weight it does not read whose readers have all run: a compute copy
  // rounded from the new master), or -1.
  std::vector<std::vector<int>> write_into;
  // A run failed after overwriting state in place: the state is partly this
  // step's; runs are refused until WritePersistent replaces it.
  bool partly_updated = false;
  bool profile = false;
  // Per instruction, what its prepare made (a packed weight), kept across
  // runs; empty when weights are not packed.
  std::vector<std::shared_ptr<KernelState>> prepared;
  // Bumped by WritePersistent. Updates need not bump it: they only write
  // weights the program updates, which no kernel sees as constant.
  uint64_t persistent_version = 0;
  std::vector<bool> updated;  // per value: a weight the program updates
  // With profiling: each instruction's entry in RunStats::op_times, and
  // its floating-point operations per run.
  std::vector<size_t> op_index;
  std::vector<double> op_flops;
  // Pipeline stages' loops, by their first instruction.
  std::map<int, ScheduledLoop> loop_plans;
  // Per value: an add's result that a loop's running sum takes when made
  // (Program::RunningSumOf).
  std::vector<bool> taken_by_sum;
};

Executor::~Executor() = default;

namespace {

// A copy of `t` in a buffer of its own, on t's device.
Status CopyOf(const Tensor& t, Tensor* out) {
  return t.CopyTo(t.buffer()->shared_device(), out);
}

// memcpy split over the pool: a training step copies every parameter and
// optimizer state, which is worth the threads for big models.
void ParallelHostCopy(void* dst, const void* src, size_t bytes, ThreadPool* pool) {
  constexpr size_t kChunk = size_t{1} << 20;
  const int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
  ParallelFor(pool, chunks, 4, [&](int64_t c0, int64_t c1) {
    const size_t b0 = static_cast<size_t>(c0) * kChunk;
    const size_t b1 = std::min(bytes, static_cast<size_t>(c1) * kChunk);
    std::memcpy(static_cast<uint8_t*>(dst) + b0, static_cast<const uint8_t*>(src) + b0, b1 - b0);
  });
}

}  // namespace

// Puts each update value into its weight's own buffer (copied, or its bytes
// swapped in when nothing else holds them), so the weight keeps its buffer
// (and tracker) across runs. Runs after the last
// instruction of a successful run only, so a failed run changes nothing.
Status Executor::ApplyUpdates(const std::vector<Tensor>& values,
                              std::vector<Tensor>* outputs) {
  const Program& p = *program_;
  Impl& im = *impl_;
  if (p.updates().empty()) return OkStatus();
  std::unordered_set<const Buffer*> updated;
  for (const Program::WeightUpdate& u : p.updates())
    updated.insert(im.persistent[u.value].buffer().get());
  // An output that shares an updated weight's buffer (the weight itself or a
  // reshape of it) must keep this run's contents: give it its own copy.
  for (Tensor& o : *outputs) {
    if (o.defined() && updated.count(o.buffer().get())) {
      Tensor copy;
      DISTRT_RETURN_IF_ERROR(CopyOf(o, &copy));
      o = std::move(copy);
    }
  }
  // An update that aliases another updated weight (w1 <- w2, w2 <- w1) is
  // snapshotted before any copy, so the order of the copies does not matter.
  std::vector<Tensor> src(p.updates().size());
  for (size_t k = 0; k < src.size(); ++k) {
    const Program::WeightUpdate& u = p.updates()[k];
    const Tensor& v = values[static_cast<size_t>(u.update)];
    if (v.buffer() == im.persistent[u.value].buffer()) continue;  // already there
    if (updated.count(v.buffer().get())) {
      DISTRT_RETURN_IF_ERROR(CopyOf(v, &src[k]));
    } else {
      src[k] = v;
    }
  }
  std::unordered_map<const Buffer*, long> held;  // by this run's values and updates
  for (const Tensor& v : values)
    if (v.defined()) ++held[v.buffer().get()];
  std::unordered_map<const Buffer*, long> in_updates;
  for (const Tensor& u : src)
    if (u.defined()) ++in_updates[u.buffer().get()];
  for (size_t k = 0; k < src.size(); ++k) {
    if (!src[k].defined() || src[k].byte_size() == 0) continue;
    Tensor& w = im.persistent[static_cast<size_t>(p.updates()[k].value)];
    // A new value only this run still holds (in `values` and in this one
    // update) gives its bytes to the weight and takes the old ones, which
    // the run's buffer cache gets back when `values` goes: no copy of the
    // model's parameters and optimizer states every step.
    const std::shared_ptr<Buffer>& b = src[k].buffer();
    if (in_updates[b.get()] == 1 && b.use_count() == held[b.get()] + 1 &&
        src[k].byte_size() == b->size() && w.byte_size() == w.buffer()->size() && w.buffer() != b &&
        w.buffer()->SwapData(*b))
      continue;
    if (w.on_host() && src[k].on_host()) {
      ParallelHostCopy(w.raw(), src[k].raw(), w.byte_size(), im.pool.get());
    } else if (w.device() == src[k].device()) {
      DISTRT_RETURN_IF_ERROR(w.device()->CopyWithin(w.raw(), src[k].raw(), w.byte_size()));
    } else {  // a host fallback computed the update
      DISTRT_RETURN_IF_ERROR(w.device()->CopyFromHost(w.raw(), src[k].raw(), w.byte_size()));
    }
  }
  return OkStatus();
}

void Executor::ClearProfile() {
  for (OpTime& t : stats_.op_times) {
    t.calls = 0;
    t.seconds = 0;
    t.flops = 0;
  }
  for (InstructionTime& t : stats_.instruction_times) {
    t.calls = 0;
    t.seconds = 0;
  }
  stats_.profiled_runs = 0;
}

// Runs every kernel's load-time preparation (packing constant weights for
// the GEMM), then frees the bytes of each constant weight that no reader
// needs any more: not training state (WritePersistent cannot replace it),
// not an output, held by nothing else, and every instruction reading it
// said so. Then only the packed copy stays in memory.
Status Executor::PrepareKernels(const std::unordered_set<int>& outputs) {
  const Program& p = *program_;
  Impl& im = *impl_;
  const int threads = im.pool ? im.pool->size() : 1;
  std::vector<bool> training_state(static_cast<size_t>(p.num_values()), false);
  for (const proto::Weight& w : p.proto().weights())
    if (IsTrainingState(w)) training_state[static_cast<size_t>(p.ValueIndex(w.value()))] = true;
  // Shared by the instructions while they prepare; what each made lives on
  // in `prepared`.
  KernelStates states;
  im.prepared.assign(static_cast<size_t>(p.num_instructions()), nullptr);
  std::vector<int> readers(static_cast<size_t>(p.num_values()), 0);
  for (int i = 0; i < p.num_instructions(); ++i)
    for (int v : p.InstructionInputs(i)) ++readers[static_cast<size_t>(v)];
  // Freed as soon as its last reader is prepared, so that the load holds
  // one weight's two copies at a time, not the whole model's.
  std::vector<int> unneeded(static_cast<size_t>(p.num_values()), 0);
  auto release_if_unneeded = [&](int v) {
    Tensor& t = im.persistent[static_cast<size_t>(v)];
    if (unneeded[v] == readers[v] && t.defined() && !training_state[v] &&
        !im.updated[static_cast<size_t>(v)] && !outputs.count(v) && t.buffer().use_count() == 1)
      t.buffer()->ReleaseData();
  };
  for (int i = 0; i < p.num_instructions(); ++i) {
    if (im.kernels[i] == nullptr || im.kernels[i]->prepare == nullptr) continue;
    const std::vector<int>& ins = p.InstructionInputs(i);
    PrepareContext ctx;
    ctx.inst = &p.proto().instructions(i);
    ctx.threads = threads;
    ctx.states = &states;
    ctx.state_tracker = im.weight_tracker;
    for (int v : ins) {
      ctx.inputs.push_back(p.value(v).type);
      const Tensor& held = im.persistent[static_cast<size_t>(v)];
      ctx.constant_inputs.push_back(
          held.defined() && !im.updated[static_cast<size_t>(v)] ? &held : nullptr);
    }
    ctx.data_unneeded.assign(ins.size(), false);
    Status st = im.via_f32[static_cast<size_t>(i)] ? PrepareViaF32(*im.kernels[i], ctx)
                                                   : im.kernels[i]->prepare(ctx);
    if (!st.ok()) return Status(st.code(), StrCat(p.DescribeInstruction(i), ": ", st.message()));
    im.prepared[static_cast<size_t>(i)] = std::move(ctx.prepared);
    for (size_t k = 0; k < ins.size(); ++k) {
      if (!ctx.data_unneeded[k]) continue;
      ++unneeded[static_cast<size_t>(ins[k])];
      release_if_unneeded(ins[k]);
    }
  }
  stats_.weight_bytes = im.weight_tracker->current();
  return OkStatus();
}

Status Executor::ReadPersistent(std::vector<PersistentTensor>* out) const {
  const Program& p = *program_;
  out->clear();
  for (int i = 0; i < p.proto().weights_size(); ++i) {
    const proto::Weight& w = p.proto().weights(i);
    if (!IsTrainingState(w)) continue;
    PersistentTensor t;
    t.weight = &w;
    DISTRT_RETURN_IF_ERROR(impl_->persistent[static_cast<size_t>(p.ValueIndex(w.value()))].CopyTo(
        CpuDevice(), &t.value));
    out->push_back(std::move(t));
  }
  return OkStatus();
}

Status Executor::WritePersistent(const std::vector<PersistentTensor>& values) {
  std::vector<int> at;
  DISTRT_RETURN_IF_ERROR(CheckPersistentWrite(*program_, values, &at));
  for (const PersistentTensor& v : values)
    if (!v.value.on_host()) return InvalidArgumentError("WritePersistent takes host tensors");
  for (size_t k = 0; k < values.size(); ++k) {
    Tensor& w = impl_->persistent[static_cast<size_t>(at[k])];
    if (w.byte_size() == 0) continue;
    DISTRT_RETURN_IF_ERROR(w.device()->CopyFromHost(w.raw(), values[k].value.raw(), w.byte_size()));
  }
  DISTRT_RETURN_IF_ERROR(impl_->device->Synchronize());
  if (!values.empty()) impl_->partly_updated = false;
  ++impl_->persistent_version;
  return OkStatus();
}

// Where instruction i runs and with which kernel: the device's kernel for
// its compute dtype when there is one that accepts it, else the host's.
static Status ChooseKernel(const Program& p, int i, Device* device, bool allow_host_fallback,
                           const KernelDef** def, bool* on_device) {
  const proto::Instruction& inst = p.proto().instructions(i);
  const KernelRegistry& reg = KernelRegistry::Get();
  *on_device = device->kind() == DeviceKind::kCpu;
  *def = reg.Find(inst.op());
  if (*on_device) return OkStatus();
  VerifyContext v;
  v.inst = &inst;
  for (int id : p.InstructionInputs(i)) v.inputs.push_back(p.value(id).type);
  for (int id : p.InstructionOutputs(i)) v.outputs.push_back(p.value(id).type);
  v.rank = p.rank();
  v.world_size = p.world_size();
  const DType dtype = ComputeDType(v.inputs, v.outputs);
  const KernelDef* d = reg.Find(inst.op(), device->kind(), dtype);
  if (d != nullptr && (d->accepts == nullptr || d->accepts(v))) {
    *def = d;
    *on_device = true;
    return OkStatus();
  }
  if (!allow_host_fallback) {
    return UnimplementedError(p.DescribeInstruction(i), ": no ", DeviceKindName(device->kind()),
                              " kernel for ", inst.op(), " on ", DTypeName(dtype),
                              d != nullptr ? " with these operands" : "",
                              ", and host fallback is off");
  }
  return OkStatus();
}

Device* Executor::device() const { return impl_->device.get(); }

std::vector<std::string> Executor::Placement() const {
  std::vector<std::string> out;
  for (const auto& d : impl_->runs_on) out.push_back(d->name());
  return out;
}

Status Executor::Create(std::shared_ptr<const Program> program, Communicator* comm,
                        const ExecutorOptions& options, std::unique_ptr<Executor>* out) {
  if (!program) return InvalidArgumentError("Executor::Create: no program");
  const Program& p = *program;
  DISTRT_RETURN_IF_ERROR(CheckCommunicator(p, comm));
  if (options.threads < 1) {
    return InvalidArgumentError("ExecutorOptions.threads must be >= 1, got ", options.threads);
  }
  std::unique_ptr<Executor> e(new Executor());
  e->program_ = program;
  e->comm_ = comm;
  e->impl_.reset(new Impl());
  Impl& im = *e->impl_;
  im.device = options.device ? options.device : CpuDevice();
  im.on_host = im.device->kind() == DeviceKind::kCpu;
  if (options.threads > 1) im.pool.reset(new ThreadPool(options.threads));
  im.profile = options.profile;
  const char* pack = std::getenv("DISTRT_PACK_WEIGHTS");
  const bool pack_weights =
      im.on_host && options.pack_weights && !(pack && std::string(pack) == "0");
  // Runs allocate the same sizes every time: keep freed buffers for the next
  // run (no fresh pages, no page faults or device allocations after the
  // first run).
  im.run_tracker->EnableReuse();

  const int n = p.num_instructions();
  im.kernels.resize(static_cast<size_t>(n));
  im.runs_on.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    bool on_device;
    Status st = ChooseKernel(p, i, im.device.get(), options.allow_host_fallback, &im.kernels[i],
                             &on_device);
    if (!st.ok()) return st.WithContext(p.source());
    im.runs_on[i] = on_device ? im.device : CpuDevice();
  }
  im.via_f32.assign(static_cast<size_t>(n), false);
  // The f32 copies, counted in the plan of a host program (on a device they
  // are host memory, not the device's the plan reserves).
  std::vector<int64_t> scratch(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    if (im.runs_on[i]->kind() != DeviceKind::kCpu) continue;
    VerifyContext vc;
    vc.inst = &p.proto().instructions(i);
    for (int id : p.InstructionInputs(i)) vc.inputs.push_back(p.value(id).type);
    for (int id : p.InstructionOutputs(i)) vc.outputs.push_back(p.value(id).type);
    if (!RunsViaF32(*im.kernels[i], vc)) continue;
    im.via_f32[static_cast<size_t>(i)] = true;
    ++e->stats_.instructions_via_f32;
    if (im.on_host) scratch[static_cast<size_t>(i)] = ViaF32ScratchBytes(vc.inputs, vc.outputs);
    NoteRunsViaF32(ComputeDType(vc.inputs, vc.outputs) == DType::kF16 ? DType::kF16
                                                                      : DType::kBF16);
  }

  if (!im.on_host) {
    std::map<std::string, int> on_host;  // op -> instructions
    int host = 0;
    for (int i = 0; i < n; ++i)
      if (im.runs_on[i] != im.device) {
        ++on_host[p.proto().instructions(i).op()];
        ++host;
      }
    RunStats& stats = e->stats_;
    stats.device = StrCat(im.device->name(), " (", im.device->Description(), ")");
    if (host == 0) {
      stats.placement = StrCat("all ", n, " instructions on the device");
    } else {
      stats.placement = StrCat(n - host, " of ", n, " instructions on the device; on the host:");
      for (const auto& [op, count] : on_host) stats.placement += StrCat(" ", op, " x", count);
    }
  }

  im.persistent.resize(static_cast<size_t>(p.num_values()));
  if (im.on_host) {
    Status st = LoadWeightsAndConstants(p, im.weight_tracker, &im.persistent);
    if (!st.ok()) return st.WithContext(p.source());
  } else {  // read on the host, then moved to the device one by one
    Status st = LoadWeightsAndConstants(p, nullptr, &im.persistent);
    for (Tensor& t : im.persistent) {
      if (!st.ok()) break;
      if (!t.defined()) continue;
      Tensor on_device;
      st = t.CopyTo(im.device, &on_device, im.weight_tracker);
      t = std::move(on_device);
    }
    if (st.ok()) st = im.device->Synchronize();
    if (!st.ok()) return st.WithContext(p.source());
  }
  e->stats_.weight_bytes = im.weight_tracker->current();

  std::vector<bool> persistent(static_cast<size_t>(p.num_values()));
  for (int v = 0; v < p.num_values(); ++v) persistent[v] = im.persistent[v].defined();
  Liveness live = ComputeLiveness(p, persistent);
  for (int i = 0; i < p.num_instructions(); ++i) {
    if (p.proto().instructions(i).op() != "microbatch_loop" || !HasSchedule(p, i)) continue;
    Status st = PlanScheduledLoop(p, i, &im.loop_plans[i]);
    if (!st.ok()) return st.WithContext(p.source());
  }
  e->stats_.planned_peak_bytes = PlannedPeakBytes(p, live, persistent, scratch, im.loop_plans);
  if (!im.on_host) {
    // Known before any run: say now when the device cannot hold a run.
    const int64_t need = e->stats_.planned_peak_bytes, free = im.device->FreeMemory();
    if (free >= 0 && need > free) {
      return ResourceExhaustedError(
          p.source(), ": a run needs about ", need >> 20, " MiB of ", im.device->name(),
          "'s memory at once (its liveness plan's peak, besides the ",
          im.weight_tracker->current() >> 20, " MiB of weights and state already there), but ",
          free >> 20, " MiB are free");
    }
    Status st = im.device->Reserve(static_cast<size_t>(need));
    if (!st.ok()) return st.WithContext(p.source());
  }
  im.release_after = std::move(live.release_after);
  im.taken_by_sum.assign(static_cast<size_t>(p.num_values()), false);
  for (int i = 0; i < n; ++i)
    if (p.RunningSumOf(i) >= 0) im.taken_by_sum[p.InstructionOutputs(i)[0]] = true;
  im.dies_at.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    for (int v : p.InstructionInputs(i)) {
      im.dies_at[i].push_back(im.kernels[i]->in_place_ok && live.last_use[v] == i && !live.keep[v]);
    }
  }
  // Optimizer updates write into the parameters and states they update
  // when nothing reads those later: no second copy of the model states at
  // the end of a step.
  std::unordered_map<int, int> update_of;  // update value -> its weight
  im.updated.assign(static_cast<size_t>(p.num_values()), false);
  for (const Program::WeightUpdate& u : p.updates()) {
    update_of[u.update] = u.value;
    im.updated[static_cast<size_t>(u.value)] = true;
  }
  std::unordered_set<int> outputs;
  for (int i = 0; i < p.proto().outputs_size(); ++i) outputs.insert(p.OutputValue(i));
  im.write_into.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const std::vector<int>& outs = p.InstructionOutputs(i);
    // Empty: nothing in place (a host fallback of a device program works
    // on copies of the states, not on the states).
    if (!im.kernels[i]->updates_in_place || im.runs_on[i] != im.device) continue;
    im.write_into[i].assign(outs.size(), -1);
    for (size_t k = 0; k < outs.size(); ++k) {
      auto it = update_of.find(outs[k]);
      if (it != update_of.end() && !outputs.count(it->second) && live.last_use[it->second] <= i)
        im.write_into[i][k] = it->second;
    }
  }
  if (pack_weights) {
    Status prepared = e->PrepareKernels(outputs);
    if (!prepared.ok()) return prepared.WithContext(p.source());
  }
  if (im.profile) {
    std::map<std::pair<std::string, Device*>, size_t> kinds;
    std::vector<OpTime>& times = e->stats_.op_times;
    for (int i = 0; i < n; ++i) {
      const std::string& op = p.proto().instructions(i).op();
      InstructionTime it_time{i, op, "", p.proto().instructions(i).location()};
      const std::vector<int> outs = p.InstructionOutputs(i);
      if (!outs.empty()) it_time.output = p.value(outs[0]).type.ToString();
      e->stats_.instruction_times.push_back(std::move(it_time));
      auto [it, added] = kinds.emplace(std::make_pair(op, im.runs_on[i].get()), times.size());
      if (added) times.push_back(OpTime{op, 0, 0, im.runs_on[i]->name()});
      im.op_index.push_back(it->second);
      double flops = 0;
      if (im.kernels[i]->flops != nullptr) {
        VerifyContext v;
        v.inst = &p.proto().instructions(i);
        for (int id : p.InstructionInputs(i)) v.inputs.push_back(p.value(id).type);
        for (int id : p.InstructionOutputs(i)) v.outputs.push_back(p.value(id).type);
        flops = static_cast<double>(im.kernels[i]->flops(v));
      }
      im.op_flops.push_back(flops);
    }
    times.push_back(OpTime{"apply updates", 0, 0, im.device->name()});
  }
  *out = std::move(e);
  return OkStatus();
}

Status Executor::Run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  const Program& p = *program_;
  Impl& im = *impl_;
  auto fail = [&](const Status& st) {
    if (comm_ != nullptr) comm_->Abort(st);
    return st;
  };
  const auto start = std::chrono::steady_clock::now();
  if (im.partly_updated)
    return fail(FailedPreconditionError(
        p.source(),
        ": an earlier run failed after updating training state in place; "
        "write the state again (WritePersistent, e.g. from a checkpoint) before running"));
  bool wrote_in_place = false;
  auto fail_run = [&](const Status& st) {
    im.partly_updated = im.partly_updated || wrote_in_place;
    return fail(st);
  };
  Status checked = CheckInputs(p, inputs);
  if (!checked.ok()) return fail(checked);
  std::vector<Tensor> values = im.persistent;
  for (size_t i = 0; i < inputs.size(); ++i) values[p.InputValue(static_cast<int>(i))] = inputs[i];
  // A value's copy on the other side (host or device) for the instructions
  // that read it there; dropped with the value. None on the host.
  std::vector<Tensor> mirror(im.on_host ? 0 : values.size());
  int64_t host_instructions = 0, to_device = 0, to_host = 0;
  auto on = [&](int v, const std::shared_ptr<Device>& where, Tensor** t) -> Status {
    Tensor& value = values[static_cast<size_t>(v)];
    if (!value.defined() || value.device() == where.get()) {
      *t = &value;
      return OkStatus();
    }
    Tensor& copy = mirror[static_cast<size_t>(v)];
    if (!copy.defined() || copy.device() != where.get()) {
      DISTRT_RETURN_IF_ERROR(value.CopyTo(where, &copy, im.run_tracker));
      (where->kind() == DeviceKind::kCpu ? to_host : to_device) +=
          static_cast<int64_t>(value.byte_size());
    }
    *t = &copy;
    return OkStatus();
  };
  const int64_t baseline = im.run_tracker->current();
  im.run_tracker->ResetPeak();

  KernelContext ctx;
  ctx.pool = im.pool.get();
  ctx.comm = comm_;
  ctx.rank = p.rank();
  ctx.tag_offset = tag_offset_;
  ctx.tracker = im.run_tracker;
  ctx.persistent_version = im.persistent_version;
  std::vector<Tensor> results;
  const int n = p.num_instructions();
  auto set = [&](int v, Tensor t) {
    values[static_cast<size_t>(v)] = std::move(t);
    if (!im.on_host) mirror[static_cast<size_t>(v)] = Tensor();
  };
  auto release_after = [&](int i) {
    for (int v : im.release_after[static_cast<size_t>(i)]) set(v, Tensor());
  };
  // Runs instruction i, one that computes (not one of a loop's own).
  auto run_instruction = [&](int i) -> Status {
    const proto::Instruction& inst = p.proto().instructions(i);
    const std::vector<int>& in_ids = p.InstructionInputs(i);
    const std::vector<int>& out_ids = p.InstructionOutputs(i);
    const std::shared_ptr<Device>& where = im.runs_on[static_cast<size_t>(i)];
    const bool fallback = where != im.device;
    host_instructions += fallback ? 1 : 0;
    ctx.inst = &inst;
    if (ctx.device != where) ctx.device = where;
    ctx.inputs.clear();
    ctx.donatable.clear();
    ctx.prepared = im.prepared.empty() ? nullptr : im.prepared[static_cast<size_t>(i)].get();
    Status st;
    for (size_t k = 0; k < in_ids.size() && st.ok(); ++k) {
      Tensor* t = &values[static_cast<size_t>(in_ids[k])];
      if (!im.on_host) st = on(in_ids[k], where, &t);
      ctx.inputs.push_back(t);
      // Only buffers nobody else holds (not the caller's inputs, not an
      // alias kept by another value, not a copy) may be overwritten.
      ctx.donatable.push_back(st.ok() && t == &values[static_cast<size_t>(in_ids[k])] &&
                              im.dies_at[i][k] && t->defined() && t->buffer().use_count() == 1);
    }
    if (!st.ok()) {
      return fail_run(Status(
          st.code(), StrCat(p.source(), ": ", p.DescribeInstruction(i), ": ", st.message())));
    }
    ctx.output_types.clear();
    for (int v : out_ids) ctx.output_types.push_back(p.value(v).type);
    // In place only while the run and the executor are the state's sole
    // holders (no reshape of it still live).
    const std::vector<int>& targets = im.write_into[static_cast<size_t>(i)];
    ctx.write_into.assign(targets.size(), nullptr);
    for (size_t k = 0; k < targets.size(); ++k) {
      if (targets[k] < 0) continue;
      const Tensor& t = values[static_cast<size_t>(targets[k])];
      if (t.defined() && t.device() == where.get() && t.buffer().use_count() == 2) {
        ctx.write_into[k] = &t;
        wrote_in_place = true;
      }
    }
    results.assign(out_ids.size(), Tensor());
    ctx.outputs = &results;
    // A device's piece can be empty (a dimension split over more devices than
    // it has elements): compute on nothing, but still take part in
    // communication.
    bool empty = !im.kernels[i]->communicates && !out_ids.empty();
    for (int v : out_ids) empty = empty && NumElements(p.value(v).type.shape) == 0;
    if (empty) {
      for (size_t k = 0; k < out_ids.size() && st.ok(); ++k)
        st = Tensor::AllocateOn(where, ctx.output_types[k].dtype, ctx.output_types[k].shape,
                                &results[k], im.run_tracker);
    } else if (im.profile) {
      const auto t0 = std::chrono::steady_clock::now();
      st = im.via_f32[static_cast<size_t>(i)] ? RunViaF32(*im.kernels[i], ctx)
                                               : im.kernels[i]->run(ctx);
      if (st.ok()) st = where->Synchronize();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      OpTime& t = stats_.op_times[im.op_index[static_cast<size_t>(i)]];
      t.seconds += seconds;
      t.flops += im.op_flops[static_cast<size_t>(i)];
      ++t.calls;
      InstructionTime& one = stats_.instruction_times[static_cast<size_t>(i)];
      one.seconds += seconds;
      ++one.calls;
    } else {
      st = im.via_f32[static_cast<size_t>(i)] ? RunViaF32(*im.kernels[i], ctx)
                                               : im.kernels[i]->run(ctx);
    }
    if (st.ok()) {
      for (size_t k = 0; k < out_ids.size() && st.ok(); ++k) {
        if (!results[k].defined()) {
          st = InternalError("kernel produced no output ", k);
        } else {
          st = CheckOutputType(ctx.output_types[k], results[k].type());
        }
      }
    }
    if (!st.ok()) {
      return fail_run(Status(
          st.code(), StrCat(p.source(), ": ", p.DescribeInstruction(i), ": ", st.message())));
    }
    for (size_t k = 0; k < out_ids.size(); ++k) {
      values[out_ids[k]] = std::move(results[k]);
      if (!im.on_host) mirror[static_cast<size_t>(out_ids[k])] = Tensor();
    }
    for (int v : im.release_after[i]) {
      values[v] = Tensor();
      if (!im.on_host) mirror[static_cast<size_t>(v)] = Tensor();
    }
    // A loop's running sum takes its add's result at once (eager
    // accumulation: a microbatch's gradient is added as soon as it is made).
    if (const int sum = p.RunningSumOf(i); sum >= 0) {
      set(sum, std::move(values[static_cast<size_t>(out_ids[0])]));
      set(out_ids[0], Tensor());
    }
    return OkStatus();
  };
  // Whether the yield's input is a result its running sum took already.
  auto taken = [&](int v) { return im.taken_by_sum[static_cast<size_t>(v)]; };
  // The open microbatch loop (validated: they do not nest): its first
  // instruction, its count and the microbatch running.
  int loop_begin = -1;
  int64_t microbatches = 0, microbatch = 0;
  // A scheduled loop runs its actions in the schedule's order; between two
  // actions of a microbatch, its values wait in `waiting[microbatch]`.
  auto run_scheduled_loop = [&](const ScheduledLoop& l) -> Status {
    const std::vector<int>& sums = p.InstructionOutputs(l.begin);
    const std::vector<int>& yielded = p.InstructionInputs(l.end);
    std::vector<std::vector<Tensor>> waiting(static_cast<size_t>(l.microbatches));
    auto run_range = [&](int first, int last) -> Status {
      for (int k = first; k < last; ++k) {
        const std::string& op = p.proto().instructions(k).op();
        if (op == "microbatch_action") continue;
        if (op == "microbatch_select") {
          set(p.InstructionOutputs(k)[0],
              values[p.InstructionInputs(k)[static_cast<size_t>(1 + microbatch)]]);
          release_after(k);
          continue;
        }
        DISTRT_RETURN_IF_ERROR(run_instruction(k));
      }
      return OkStatus();
    };
    for (size_t a = 0; a < l.actions.size(); ++a) {
      const ScheduledLoop::Action& action = l.actions[a];
      microbatch = action.microbatch;
      std::vector<Tensor>& mine = waiting[static_cast<size_t>(microbatch)];
      for (size_t k = 0; k < mine.size(); ++k) set(l.body_values[k], std::move(mine[k]));
      mine.clear();
      set(sums[0], Tensor::Scalar<int64_t>(microbatch));
      ctx.tag_offset = tag_offset_ + microbatch * l.tag_stride;
      if (action.segment >= 0) {
        const auto& [first, last] = l.segments[static_cast<size_t>(action.segment)];
        DISTRT_RETURN_IF_ERROR(run_range(first, last));
      }
      if (a == l.last_action[static_cast<size_t>(microbatch)]) {
        // Its last action: add what it yields to the sums (those no action
        // added to already).
        DISTRT_RETURN_IF_ERROR(run_range(l.sums_begin, l.end));
        for (size_t k = 0; k < yielded.size(); ++k)
          if (!taken(yielded[k])) set(sums[k + 1], values[yielded[k]]);
        for (int v : l.body_values) set(v, Tensor());
        continue;
      }
      mine.resize(l.body_values.size());
      for (size_t k = 0; k < mine.size(); ++k) {
        mine[k] = std::move(values[static_cast<size_t>(l.body_values[k])]);
        set(l.body_values[k], Tensor());
      }
    }
    ctx.tag_offset = tag_offset_;
    const std::vector<int>& results = p.InstructionOutputs(l.end);
    for (size_t k = 0; k < results.size(); ++k)
      set(results[k], std::move(values[static_cast<size_t>(sums[k + 1])]));
    release_after(l.end);  // what the loop read from before it
    return OkStatus();
  };
  for (int i = 0; i < n; ++i) {
    const proto::Instruction& inst = p.proto().instructions(i);
    const std::vector<int>& in_ids = p.InstructionInputs(i);
    const std::vector<int>& out_ids = p.InstructionOutputs(i);
    const std::shared_ptr<Device>& where = im.runs_on[static_cast<size_t>(i)];
    // The loop's own instructions move values and compute nothing: the
    // index, zeroed running sums, the microbatch's inputs, the sums carried
    // into the next microbatch (or out of the loop after the last).
    if (inst.op() == "microbatch_loop") {
      Status st = AttrReader(inst).GetInt("microbatches", &microbatches);
      loop_begin = i;
      microbatch = 0;
      set(out_ids[0], Tensor::Scalar<int64_t>(0));
      for (size_t k = 1; k < out_ids.size() && st.ok(); ++k) {
        const TensorType& t = p.value(out_ids[k]).type;
        st = Tensor::AllocateOn(where, t.dtype, t.shape, &values[out_ids[k]], im.run_tracker,
                                /*zero=*/true);
      }
      if (!st.ok()) {
        return fail_run(Status(
            st.code(), StrCat(p.source(), ": ", p.DescribeInstruction(i), ": ", st.message())));
      }
      release_after(i);
      if (!im.loop_plans.count(i)) continue;
      // A pipeline stage's loop: its actions, interleaved over the
      // microbatches as the schedule says.
      st = run_scheduled_loop(im.loop_plans.at(i));
      if (!st.ok()) return st;
      i = im.loop_plans.at(i).end;
      continue;
    }
    if (inst.op() == "microbatch_select") {
      set(out_ids[0], values[in_ids[static_cast<size_t>(1 + microbatch)]]);
      release_after(i);
      continue;
    }
    if (inst.op() == "microbatch_yield") {
      const std::vector<int>& sums = p.InstructionOutputs(loop_begin);
      const bool again = ++microbatch < microbatches;
      if (again) set(sums[0], Tensor::Scalar<int64_t>(microbatch));
      for (size_t k = 0; k < in_ids.size(); ++k) {
        if (!taken(in_ids[k]))
          set(again ? sums[k + 1] : out_ids[k], values[in_ids[k]]);
        else if (!again)
          set(out_ids[k], std::move(values[static_cast<size_t>(sums[k + 1])]));
      }
      if (!again) {
        release_after(i);  // what the loop read from before it, too
        continue;
      }
      for (int v : in_ids) set(v, Tensor());
      i = loop_begin;
      continue;
    }
    Status st = run_instruction(i);
    if (!st.ok()) return st;
  }
  mirror.clear();
  outputs->clear();
  Status copied;
  for (int i = 0; i < p.proto().outputs_size() && copied.ok(); ++i) {
    const Tensor& v = values[p.OutputValue(i)];
    if (v.on_host()) {
      outputs->push_back(v);
      continue;
    }
    Tensor host;
    copied = v.CopyTo(CpuDevice(), &host);
    to_host += static_cast<int64_t>(v.byte_size());
    outputs->push_back(std::move(host));
  }
  if (!copied.ok()) {
    outputs->clear();
    return fail_run(copied.WithContext(StrCat(p.source(), ": copying the outputs to the host")));
  }
  const auto t_apply = std::chrono::steady_clock::now();
  Status applied = ApplyUpdates(values, outputs);
  if (applied.ok()) applied = im.device->Synchronize();
  if (im.profile) {
    OpTime& t = stats_.op_times.back();
    t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_apply).count();
    t.calls += p.updates().empty() ? 0 : 1;
    ++stats_.profiled_runs;
  }
  if (!applied.ok()) {
    outputs->clear();
    return fail_run(applied.WithContext(StrCat(p.source(), ": applying weight updates")));
  }
  values.clear();
  stats_.weight_bytes = im.weight_tracker->current();
  stats_.peak_live_bytes = im.run_tracker->peak() - baseline;
  stats_.instructions = n;
  stats_.host_instructions = im.on_host ? 0 : host_instructions;
  stats_.bytes_to_device = to_device;
  stats_.bytes_to_host = to_host;
  stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return OkStatus();
}

}  // namespace distrt

namespace distrt {

// Send/recv tags of microbatch m are tag + m * kMicrobatchTagStride.
constexpr int64_t kMicrobatchTagStride = int64_t{1} << 20;

int Executor::microbatches() const {
  const proto::RankProgram& p = program_->proto();
  return p.has_schedule() && p.schedule().microbatches() > 0 ? p.schedule().microbatches() : 1;
}

Status Executor::RunSchedule(const std::vector<std::vector<Tensor>>& inputs,
                             std::vector<std::vector<Tensor>>* outputs) {
  const proto::RankProgram& p = program_->proto();
  const int m = microbatches();
  if (static_cast<int>(inputs.size()) != m) {
    Status st = InvalidArgumentError(program_->source(), ": the schedule runs ", m,
                                     " microbatches but inputs for ", inputs.size(), " were given");
    if (comm_ != nullptr) comm_->Abort(st);
    return st;
  }
  outputs->assign(static_cast<size_t>(m), {});
  if (!p.has_schedule()) {
    tag_offset_ = 0;
    return Run(inputs[0], &(*outputs)[0]);
  }
  for (const proto::ScheduleAction& a : p.schedule().actions()) {
    if (a.phase() != proto::ScheduleAction::FORWARD) {
      Status st = UnimplementedError(program_->source(),
                                     ": the schedule has a backward action; distrt runs "
                                     "forward (inference) schedules only");
      if (comm_ != nullptr) comm_->Abort(st);
      return st;
    }
    if (a.microbatch() < 0 || a.microbatch() >= m) {
      Status st = InvalidArgumentError(program_->source(), ": schedule action for microbatch ",
                                       a.microbatch(), " of ", m);
      if (comm_ != nullptr) comm_->Abort(st);
      return st;
    }
    tag_offset_ = a.microbatch() * kMicrobatchTagStride;
    DISTRT_RETURN_IF_ERROR(Run(inputs[static_cast<size_t>(a.microbatch())],
                               &(*outputs)[static_cast<size_t>(a.microbatch())]));
  }
  tag_offset_ = 0;
  return OkStatus();
}

}  // namespace distrt
