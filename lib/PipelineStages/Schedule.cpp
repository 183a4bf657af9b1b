//===- Schedule.cpp - the order a pipeline stage runs microbatches -*- C++
//-*-===//
#include "distopt/PipelineStages/Schedule.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace distopt;
using llvm::ArrayRef;
using llvm::StringRef;

std::vector<std::vector<ScheduleAction>>
distopt::buildSchedule(StringRef kind, int64_t numStages, int64_t m,
                       bool withBackward) {
  std::vector<std::vector<ScheduleAction>> out(numStages);
  for (int64_t s = 0; s < numStages; ++s) {
    auto &acts = out[s];
    if (!withBackward) {
      for (int64_t i = 0; i < m; ++i)
        acts.push_back({i, true});
      continue;
    }
    if (kind == "gpipe") {
      for (int64_t i = 0; i < m; ++i)
        acts.push_back({i, true});
      for (int64_t i = m - 1; i >= 0; --i)
        acts.push_back({i, false});
      continue;
    }
    // 1F1B: warm up, then one forward and one backward at a time.
    int64_t warmup = std::min(numStages - s - 1, m);
    int64_t f = 0, bw = 0;
    for (; f < warmup; ++f)
      acts.push_back({f, true});
    while (f < m) {
      acts.push_back({f++, true});
      acts.push_back({bw++, false});
    }
    while (bw < m)
      acts.push_back({bw++, false});
  }
  return out;
}

ScheduleTimeline distopt::simulateSchedule(
    const std::vector<std::vector<ScheduleAction>> &schedule,
    ArrayRef<double> forwardTime, ArrayRef<double> backwardTime,
    double transferTime) {
  int64_t S = schedule.size();
  ScheduleTimeline tl;
  // done[stage][mb][phase]: finish time, once known.
  std::map<std::tuple<int64_t, int64_t, bool>, double> done;
  std::vector<size_t> next(S, 0);
  std::vector<double> free(S, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t s = 0; s < S; ++s) {
      while (next[s] < schedule[s].size()) {
        const ScheduleAction &a = schedule[s][next[s]];
        // A forward needs the previous stage's forward of the microbatch; a
        // backward the next stage's backward (or its own forward last).
        double ready = 0;
        if (a.forward && s > 0) {
          auto it = done.find({s - 1, a.microbatch, true});
          if (it == done.end())
            break;
          ready = it->second + transferTime;
        } else if (!a.forward) {
          auto it = s + 1 < S ? done.find({s + 1, a.microbatch, false})
                              : done.find({s, a.microbatch, true});
          if (it == done.end())
            break;
          ready = it->second + (s + 1 < S ? transferTime : 0);
        }
        double start = std::max(ready, free[s]);
        double end = start + (a.forward ? forwardTime[s] : backwardTime[s]);
        done[{s, a.microbatch, a.forward}] = end;
        free[s] = end;
        tl.slots.push_back({s, a.microbatch, a.forward, start, end});
        tl.makespan = std::max(tl.makespan, end);
        ++next[s];
        progress = true;
      }
    }
  }
  double busy = 0;
  for (const auto &slot : tl.slots)
    busy += slot.end - slot.start;
  if (tl.makespan > 0 && S > 0)
    tl.bubbleFraction = 1.0 - busy / (S * tl.makespan);
  return tl;
}
