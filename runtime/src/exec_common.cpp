#include "exec_common.h"

#include <algorithm>

#include "kernel.h"

namespace distrt {

Status CheckCommunicator(const Program& p, const Communicator* comm) {
  if (comm != nullptr && (comm->rank() != p.rank() || comm->world_size() != p.world_size())) {
    return InvalidArgumentError(p.source(), ": the program is rank ", p.rank(), " of ",
                                p.world_size(), " but the communicator is rank ", comm->rank(),
                                " of ", comm->world_size());
  }
  if (comm == nullptr && p.communicates()) {
    return FailedPreconditionError(p.source(),
                                   ": the program communicates but no communicator was given");
  }
  return OkStatus();
}

Status CheckInputs(const Program& p, const std::vector<Tensor>& inputs) {
  const int nin = p.proto().inputs_size();
  if (static_cast<int>(inputs.size()) != nin) {
    return InvalidArgumentError(p.source(), ": expected ", nin, " inputs, got ", inputs.size());
  }
  for (int i = 0; i < nin; ++i) {
    const TensorType& want = p.value(p.InputValue(i)).type;
    if (!inputs[i].defined() || inputs[i].type() != want) {
      return InvalidArgumentError(
          p.source(), ": input ", i, " '", p.proto().inputs(i).name(), "' must be ",
          want.ToString(), ", got ",
          inputs[i].defined() ? inputs[i].type().ToString() : std::string("an undefined tensor"));
    }
  }
  return OkStatus();
}

Status CheckPersistentWrite(const Program& p, const std::vector<PersistentTensor>& entries,
                            std::vector<int>* values) {
  values->clear();
  for (const PersistentTensor& e : entries) {
    int index = -1;
    for (int i = 0; i < p.proto().weights_size() && index < 0; ++i)
      if (&p.proto().weights(i) == e.weight) index = i;
    if (index < 0 || !IsTrainingState(*e.weight)) {
      return InvalidArgumentError(p.source(), ": WritePersistent: '",
                                  e.weight ? e.weight->name() : std::string("(none)"),
                                  "' is not a training-state weight of this program");
    }
    const int v = p.ValueIndex(e.weight->value());
    const TensorType& want = p.value(v).type;
    if (!e.value.defined() || e.value.type() != want) {
      return InvalidArgumentError(
          p.source(), ": WritePersistent: '", e.weight->name(), "' must be ", want.ToString(),
          ", got ", e.value.defined() ? e.value.type().ToString() : std::string("nothing"));
    }
    values->push_back(v);
  }
  return OkStatus();
}

Liveness ComputeLiveness(const Program& p, const std::vector<bool>& persistent) {
  const int n = p.num_instructions();
  Liveness l;
  l.last_use.assign(static_cast<size_t>(p.num_values()), -1);
  l.keep = persistent;
  for (int i = 0; i < p.proto().outputs_size(); ++i) l.keep[p.OutputValue(i)] = true;
  // Updates are copied into their weights after the last instruction.
  for (const Program::WeightUpdate& u : p.updates()) l.keep[u.update] = true;
  for (int i = 0; i < n; ++i) {
    for (int v : p.InstructionInputs(i)) l.last_use[v] = i;
  }
  // A microbatch loop's body runs again after its last instruction: what it
  // reads from before the loop lives until the loop ends.
  std::vector<int> defined_at(static_cast<size_t>(p.num_values()), -1);
  for (int i = 0; i < n; ++i)
    for (int v : p.InstructionOutputs(i)) defined_at[static_cast<size_t>(v)] = i;
  for (int begin = 0; begin < n; ++begin) {
    if (p.proto().instructions(begin).op() != "microbatch_loop") continue;
    int end = begin + 1;
    while (end < n && p.proto().instructions(end).op() != "microbatch_yield") ++end;
    for (int i = begin + 1; i <= end && i < n; ++i)
      for (int v : p.InstructionInputs(i))
        if (defined_at[static_cast<size_t>(v)] < begin)
          l.last_use[v] = std::max(l.last_use[v], end);
    begin = end;
  }
  l.release_after.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    for (int v : p.InstructionOutputs(i)) {
      if (l.last_use[v] < i && !l.keep[v]) l.release_after[i].push_back(v);  // dead result
    }
  }
  for (int v = 0; v < p.num_values(); ++v) {
    if (l.last_use[v] >= 0 && !l.keep[v]) l.release_after[l.last_use[v]].push_back(v);
  }
  return l;
}

int64_t PlannedPeakBytes(const Program& p, const Liveness& live,
                         const std::vector<bool>& persistent,
                         const std::vector<int64_t>& scratch,
                         const std::map<int, ScheduledLoop>& loops) {
  // What each value added to the live total, taken off at its release.
  std::vector<int64_t> counted(static_cast<size_t>(p.num_values()), 0);
  int64_t now = 0, peak = 0;
  auto bytes_of = [&](int v) {
    const TensorType& t = p.value(v).type;
    return NumElements(t.shape) * static_cast<int64_t>(DTypeSize(t.dtype));
  };
  // A running sum's add makes nothing new: its result replaces the sum,
  // counted from the loop's start until its yield hands it on.
  auto counts = [&](int i) {
    const std::string& op = p.proto().instructions(i).op();
    return op != "reshape" && op != "identity" && p.RunningSumOf(i) < 0;
  };
  std::vector<bool> updated_sum(static_cast<size_t>(p.num_values()), false);
  for (int i = 0; i < p.num_instructions(); ++i)
    if (p.RunningSumOf(i) >= 0) updated_sum[static_cast<size_t>(p.RunningSumOf(i))] = true;
  auto extra = [&](int i) { return scratch.empty() ? 0 : scratch[static_cast<size_t>(i)]; };
  for (int i = 0; i < p.proto().inputs_size(); ++i) {
    counted[static_cast<size_t>(p.InputValue(i))] = bytes_of(p.InputValue(i));
    now += bytes_of(p.InputValue(i));
  }
  peak = now;
  // A scheduled loop's microbatches hold their own values between their
  // actions: run its schedule, each microbatch's values counted apart.
  auto scheduled = [&](const ScheduledLoop& l) {
    const std::vector<int>& own = p.InstructionOutputs(l.begin);  // index, sums
    std::map<int64_t, std::map<int, int64_t>> held;
    int64_t waiting = 0;
    auto run = [&](int first, int last, std::map<int, int64_t>& mine) {
      for (int k = first; k < last; ++k) {
        if (counts(k))
          for (int v : p.InstructionOutputs(k))
            if (!persistent[static_cast<size_t>(v)]) {
              mine[v] = bytes_of(v);
              waiting += mine[v];
            }
        peak = std::max(peak, now + waiting + extra(k));
        for (int v : live.release_after[static_cast<size_t>(k)]) {
          if (auto it = mine.find(v); it != mine.end()) {
            waiting -= it->second;
            mine.erase(it);
          } else if (std::find(own.begin(), own.end(), v) == own.end()) {
            now -= counted[static_cast<size_t>(v)];
            counted[static_cast<size_t>(v)] = 0;
          }
        }
      }
    };
    for (size_t a = 0; a < l.actions.size(); ++a) {
      const ScheduledLoop::Action& action = l.actions[a];
      std::map<int, int64_t>& mine = held[action.microbatch];
      if (action.segment >= 0) {
        const auto& [first, last] = l.segments[static_cast<size_t>(action.segment)];
        run(first, last, mine);
      }
      if (a == l.last_action[static_cast<size_t>(action.microbatch)]) {
        run(l.sums_begin, l.end, mine);
        for (auto& [v, b] : mine) waiting -= b;
        held.erase(action.microbatch);
      }
    }
  };
  for (int i = 0; i < p.num_instructions(); ++i) {
    if (counts(i))
      for (int v : p.InstructionOutputs(i))
        if (!persistent[static_cast<size_t>(v)]) {
          counted[static_cast<size_t>(v)] = bytes_of(v);
          now += counted[static_cast<size_t>(v)];
        }
    peak = std::max(peak, now + extra(i));
    for (int v : live.release_after[static_cast<size_t>(i)]) {
      if (updated_sum[static_cast<size_t>(v)]) continue;
      now -= counted[static_cast<size_t>(v)];
      counted[static_cast<size_t>(v)] = 0;
    }
    if (p.proto().instructions(i).op() == "microbatch_yield") {
      // Its outputs (counted above) are the sums its adds updated.
      int64_t begin = -1;
      (void)AttrReader(p.proto().instructions(i)).GetInt("loop", &begin);
      for (int v : p.InstructionOutputs(static_cast<int>(begin)))
        if (updated_sum[static_cast<size_t>(v)]) {
          now -= counted[static_cast<size_t>(v)];
          counted[static_cast<size_t>(v)] = 0;
        }
    }
    if (auto it = loops.find(i); it != loops.end()) {
      scheduled(it->second);
      i = it->second.end - 1;  // the yield is counted as any instruction
    }
  }
  return peak;
}

}  // namespace distrt
