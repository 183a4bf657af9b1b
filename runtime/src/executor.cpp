#include "distrt/executor.h"

#include <chrono>

#include "exec_common.h"
#include "kernel.h"
#include "thread_pool.h"
#include "weights.h"

namespace distrt {

struct Executor::Impl {
  std::unique_ptr<ThreadPool> pool;
  std::shared_ptr<MemoryTracker> weight_tracker = std::make_shared<MemoryTracker>();
  std::shared_ptr<MemoryTracker> run_tracker = std::make_shared<MemoryTracker>();
  std::vector<HostTensor> persistent;     // weights and constants, by value index
  std::vector<const KernelDef*> kernels;  // per instruction
  // Values to release after each instruction (last use there, or never used).
  std::vector<std::vector<int>> release_after;
  // Per instruction and input: the value dies there (candidate for in-place).
  std::vector<std::vector<bool>> dies_at;
};

Executor::~Executor() = default;

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
  if (options.threads > 1) im.pool.reset(new ThreadPool(options.threads));
  // Runs allocate the same sizes every time: keep freed buffers for the next
  // run (no fresh pages, no page faults after the first run).
  im.run_tracker->EnableReuse();
  im.persistent.resize(static_cast<size_t>(p.num_values()));
  Status st = LoadWeightsAndConstants(p, im.weight_tracker, &im.persistent);
  if (!st.ok()) return st.WithContext(p.source());
  e->stats_.weight_bytes = im.weight_tracker->current();

  const int n = p.num_instructions();
  im.kernels.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    im.kernels[i] = KernelRegistry::Get().Find(p.proto().instructions(i).op());
  }
  std::vector<bool> persistent(static_cast<size_t>(p.num_values()));
  for (int v = 0; v < p.num_values(); ++v) persistent[v] = im.persistent[v].defined();
  Liveness live = ComputeLiveness(p, persistent);
  im.release_after = std::move(live.release_after);
  im.dies_at.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    for (int v : p.InstructionInputs(i)) {
      im.dies_at[i].push_back(im.kernels[i]->in_place_ok && live.last_use[v] == i && !live.keep[v]);
    }
  }
  *out = std::move(e);
  return OkStatus();
}

Status Executor::Run(const std::vector<HostTensor>& inputs, std::vector<HostTensor>* outputs) {
  const Program& p = *program_;
  Impl& im = *impl_;
  auto fail = [&](const Status& st) {
    if (comm_ != nullptr) comm_->Abort(st);
    return st;
  };
  const auto start = std::chrono::steady_clock::now();
  Status checked = CheckInputs(p, inputs);
  if (!checked.ok()) return fail(checked);
  std::vector<HostTensor> values = im.persistent;
  for (size_t i = 0; i < inputs.size(); ++i) values[p.InputValue(static_cast<int>(i))] = inputs[i];
  const int64_t baseline = im.run_tracker->current();
  im.run_tracker->ResetPeak();

  KernelContext ctx;
  ctx.pool = im.pool.get();
  ctx.comm = comm_;
  ctx.rank = p.rank();
  ctx.tag_offset = tag_offset_;
  ctx.tracker = im.run_tracker;
  std::vector<HostTensor> results;
  const int n = p.num_instructions();
  for (int i = 0; i < n; ++i) {
    const proto::Instruction& inst = p.proto().instructions(i);
    const std::vector<int>& in_ids = p.InstructionInputs(i);
    const std::vector<int>& out_ids = p.InstructionOutputs(i);
    ctx.inst = &inst;
    ctx.inputs.clear();
    ctx.donatable.clear();
    for (size_t k = 0; k < in_ids.size(); ++k) {
      HostTensor& t = values[in_ids[k]];
      ctx.inputs.push_back(&t);
      // Only buffers nobody else holds (not the caller's inputs, not an
      // alias kept by another value) may be overwritten.
      ctx.donatable.push_back(im.dies_at[i][k] && t.defined() && t.buffer().use_count() == 1);
    }
    ctx.output_types.clear();
    for (int v : out_ids) ctx.output_types.push_back(p.value(v).type);
    results.assign(out_ids.size(), HostTensor());
    ctx.outputs = &results;
    // A device's piece can be empty (a dimension split over more devices than
    // it has elements): compute on nothing, but still take part in
    // communication.
    bool empty = !im.kernels[i]->communicates && !out_ids.empty();
    for (int v : out_ids) empty = empty && NumElements(p.value(v).type.shape) == 0;
    Status st;
    if (empty) {
      for (size_t k = 0; k < out_ids.size() && st.ok(); ++k)
        st = HostTensor::Allocate(ctx.output_types[k].dtype, ctx.output_types[k].shape, &results[k],
                                  im.run_tracker);
    } else {
      st = im.kernels[i]->run(ctx);
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
      return fail(Status(st.code(),
                         StrCat(p.source(), ": ", p.DescribeInstruction(i), ": ", st.message())));
    }
    for (size_t k = 0; k < out_ids.size(); ++k) values[out_ids[k]] = std::move(results[k]);
    for (int v : im.release_after[i]) values[v] = HostTensor();
  }
  outputs->clear();
  for (int i = 0; i < p.proto().outputs_size(); ++i) outputs->push_back(values[p.OutputValue(i)]);
  values.clear();
  stats_.peak_live_bytes = im.run_tracker->peak() - baseline;
  stats_.instructions = n;
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

Status Executor::RunSchedule(const std::vector<std::vector<HostTensor>>& inputs,
                             std::vector<std::vector<HostTensor>>* outputs) {
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
