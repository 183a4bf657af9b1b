#include "scheduled_loop.h"

#include <map>

#include "kernel.h"

namespace distrt {

bool HasSchedule(const Program& p, int begin) {
  const auto& attrs = p.proto().instructions(begin).attrs();
  return attrs.find("schedule") != attrs.end();
}

Status PlanScheduledLoop(const Program& p, int begin, ScheduledLoop* out) {
  const proto::RankProgram& proto = p.proto();
  const std::string what = p.DescribeInstruction(begin);
  ScheduledLoop l;
  l.begin = begin;
  AttrReader attrs(proto.instructions(begin));
  std::vector<int64_t> table;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("microbatches", &l.microbatches));
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("schedule", &table));
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("tag_stride", &l.tag_stride));
  if (table.size() % 3 != 0)
    return InvalidArgumentError(what, ": schedule needs (microbatch, pass, chunk) triples, got ",
                                table.size(), " numbers");
  if (l.tag_stride < 0) return InvalidArgumentError(what, ": tag_stride ", l.tag_stride, " < 0");
  // The body's actions by (pass, chunk).
  std::map<std::pair<int64_t, int64_t>, int> segment_of;
  const int n = proto.instructions_size();
  int i = begin + 1;
  for (; i < n && proto.instructions(i).op() != "microbatch_yield"; ++i) {
    const proto::Instruction& inst = proto.instructions(i);
    for (int v : p.InstructionOutputs(i)) l.body_values.push_back(v);
    if (inst.op() != "microbatch_action") {
      if (i == begin + 1)
        return InvalidArgumentError(what, ": its body must start with a microbatch_action");
      continue;
    }
    int64_t pass = -1, chunk = -1;
    AttrReader marker(inst);
    DISTRT_RETURN_IF_ERROR(marker.GetInt("pass", &pass));
    DISTRT_RETURN_IF_ERROR(marker.GetInt("chunk", &chunk));
    if (pass < 0 || pass > kSumsPass || chunk < 0)
      return InvalidArgumentError(p.DescribeInstruction(i), ": pass ", pass, " chunk ", chunk,
                                  " is not an action");
    if (l.sums_begin >= 0)
      return InvalidArgumentError(p.DescribeInstruction(i), ": an action after the sums");
    if (!l.segments.empty() && l.segments.back().second < 0) l.segments.back().second = i;
    if (pass == kSumsPass) {
      l.sums_begin = i + 1;
      continue;
    }
    if (!segment_of.emplace(std::make_pair(pass, chunk), l.segments.size()).second)
      return InvalidArgumentError(p.DescribeInstruction(i), ": pass ", pass, " of chunk ", chunk,
                                  " appears twice");
    l.segments.push_back({i + 1, -1});
  }
  if (i >= n) return InvalidArgumentError(what, " is never closed");
  l.end = i;
  if (l.sums_begin < 0) return InvalidArgumentError(what, ": its body has no sums action");
  // Each microbatch runs the body's actions once each, in body order.
  std::vector<int> next(static_cast<size_t>(l.microbatches), 0);
  l.last_action.assign(static_cast<size_t>(l.microbatches), table.size());
  for (size_t a = 0; a < table.size(); a += 3) {
    const int64_t j = table[a], pass = table[a + 1], chunk = table[a + 2];
    if (j < 0 || j >= l.microbatches || pass < 0 || pass >= kSumsPass || chunk < 0)
      return InvalidArgumentError(what, ": schedule action ", a / 3, " (", j, ", ", pass, ", ",
                                  chunk, ") is out of range");
    auto it = segment_of.find({pass, chunk});
    const int segment = it == segment_of.end() ? -1 : it->second;
    if (segment >= 0) {
      if (segment != next[static_cast<size_t>(j)])
        return InvalidArgumentError(what, ": schedule action ", a / 3, " runs pass ", pass,
                                    " of chunk ", chunk, " for microbatch ", j,
                                    " out of the body's order");
      ++next[static_cast<size_t>(j)];
    }
    l.actions.push_back({j, segment});
    l.last_action[static_cast<size_t>(j)] = l.actions.size() - 1;
  }
  for (int64_t j = 0; j < l.microbatches; ++j)
    if (l.last_action[static_cast<size_t>(j)] == table.size())
      return InvalidArgumentError(what, ": the schedule never runs microbatch ", j);
  for (int64_t j = 0; j < l.microbatches; ++j)
    if (next[static_cast<size_t>(j)] != static_cast<int>(l.segments.size()))
      return InvalidArgumentError(what, ": the schedule runs ", next[static_cast<size_t>(j)],
                                  " of the body's ", l.segments.size(), " actions for microbatch ",
                                  j);
  *out = std::move(l);
  return OkStatus();
}

}  // namespace distrt
