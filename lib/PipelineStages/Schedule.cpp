//===- Schedule.cpp - the order a pipeline stage runs microbatches -*- C++
//-*-===//
#include "distopt/PipelineStages/Schedule.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

using namespace distopt;
using llvm::ArrayRef;
using llvm::StringRef;

/// One forward, one backward after `warmup` forwards.
static std::vector<ScheduleAction> oneForwardOneBackward(int64_t warmup,
                                                         int64_t m) {
  std::vector<ScheduleAction> acts;
  int64_t f = 0, bw = 0;
  for (; f < std::min(warmup, m); ++f)
    acts.push_back({f, Pass::Forward});
  while (f < m) {
    acts.push_back({f++, Pass::Forward});
    acts.push_back({bw++, Pass::Backward});
  }
  while (bw < m)
    acts.push_back({bw++, Pass::Backward});
  return acts;
}

/// Megatron's interleaved order: task k of a direction runs chunk
/// (k / stages) % chunks (backwards: from the last chunk) of microbatch
/// (k / (stages * chunks)) * stages + k % stages.
static std::vector<ScheduleAction> interleaved(int64_t stage, int64_t stages,
                                               int64_t m, int64_t chunks) {
  int64_t n = m * chunks;
  auto task = [&](int64_t k, bool forward) {
    int64_t chunk = (k / stages) % chunks;
    int64_t mb = (k / (stages * chunks)) * stages + k % stages;
    return ScheduleAction{mb, forward ? Pass::Forward : Pass::Backward,
                          forward ? chunk : chunks - 1 - chunk};
  };
  int64_t warmup =
      std::min(n, (stages - stage - 1) * 2 + (chunks - 1) * stages);
  std::vector<ScheduleAction> acts;
  int64_t f = 0, bw = 0;
  for (; f < warmup; ++f)
    acts.push_back(task(f, true));
  while (f < n) {
    acts.push_back(task(f++, true));
    acts.push_back(task(bw++, false));
  }
  while (bw < n)
    acts.push_back(task(bw++, false));
  return acts;
}

std::vector<std::vector<ScheduleAction>>
distopt::buildSchedule(StringRef kind, int64_t numStages, int64_t m,
                       bool withBackward, int64_t virtualStages) {
  std::vector<std::vector<ScheduleAction>> out(numStages);
  for (int64_t s = 0; s < numStages; ++s) {
    auto &acts = out[s];
    if (!withBackward) {
      for (int64_t c = 0; c < virtualStages; ++c)
        for (int64_t i = 0; i < m; ++i)
          acts.push_back({i, Pass::Forward, c});
      continue;
    }
    if (kind == "gpipe") {
      for (int64_t i = 0; i < m; ++i)
        acts.push_back({i, Pass::Forward});
      // Backwards in microbatch order, as gradients accumulate.
      for (int64_t i = 0; i < m; ++i)
        acts.push_back({i, Pass::Backward});
      continue;
    }
    if (kind == "interleaved-1f1b") {
      acts = interleaved(s, numStages, m, virtualStages);
      continue;
    }
    acts = oneForwardOneBackward(numStages - s - 1, m);
    if (kind != "zb-h1")
      continue;
    // Weight gradients wait: in the steady state a stage keeps up to
    // (stages - 1) of them back, and in the cool-down, where it would wait
    // for the next stage's gradient, it runs one after each backward.
    std::vector<ScheduleAction> zb;
    std::deque<int64_t> pending;
    const size_t delay = numStages - 1;
    for (size_t i = 0; i < acts.size(); ++i) {
      zb.push_back(acts[i]);
      if (acts[i].pass != Pass::Backward)
        continue;
      pending.push_back(acts[i].microbatch);
      bool coolDown = i + 1 == acts.size() || !acts[i + 1].forward();
      if (pending.size() > delay || coolDown) {
        zb.push_back({pending.front(), Pass::Weight});
        pending.pop_front();
      }
    }
    for (int64_t mb : pending)
      zb.push_back({mb, Pass::Weight});
    acts = std::move(zb);
  }
  return out;
}

ScheduleTimeline distopt::simulateSchedule(
    const std::vector<std::vector<ScheduleAction>> &schedule,
    ArrayRef<double> forwardTime, ArrayRef<double> backwardTime,
    double transferTime, ArrayRef<double> weightTime) {
  int64_t S = schedule.size();
  int64_t chunks = 1;
  for (const auto &acts : schedule)
    for (const ScheduleAction &a : acts)
      chunks = std::max(chunks, a.chunk + 1);
  int64_t V = S * chunks; // virtual stages
  auto time = [](ArrayRef<double> t, int64_t vs) {
    return vs < static_cast<int64_t>(t.size()) ? t[vs] : 0.0;
  };
  ScheduleTimeline tl;
  // done[virtual stage][mb][pass]: finish time, once known.
  std::map<std::tuple<int64_t, int64_t, Pass>, double> done;
  std::vector<size_t> next(S, 0);
  std::vector<double> free(S, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t s = 0; s < S; ++s) {
      while (next[s] < schedule[s].size()) {
        const ScheduleAction &a = schedule[s][next[s]];
        int64_t vs = a.chunk * S + s;
        // A forward needs the previous virtual stage's forward; a backward
        // the next one's backward (or its own forward last); a weight pass
        // its own backward. Transfers cost only between stages.
        std::tuple<int64_t, int64_t, Pass> need;
        bool crosses = false, needs = true;
        switch (a.pass) {
        case Pass::Forward:
          needs = vs > 0;
          need = {vs - 1, a.microbatch, Pass::Forward};
          crosses = needs && (vs - 1) % S != s;
          break;
        case Pass::Backward:
          if (vs + 1 < V) {
            need = {vs + 1, a.microbatch, Pass::Backward};
            crosses = (vs + 1) % S != s;
          } else {
            need = {vs, a.microbatch, Pass::Forward};
          }
          break;
        case Pass::Weight:
          need = {vs, a.microbatch, Pass::Backward};
          break;
        }
        double ready = 0;
        if (needs) {
          auto it = done.find(need);
          if (it == done.end())
            break;
          ready = it->second + (crosses ? transferTime : 0);
        }
        double cost = a.pass == Pass::Forward    ? time(forwardTime, vs)
                      : a.pass == Pass::Backward ? time(backwardTime, vs)
                                                 : time(weightTime, vs);
        double start = std::max(ready, free[s]);
        double end = start + cost;
        done[{vs, a.microbatch, a.pass}] = end;
        free[s] = end;
        tl.slots.push_back({s, a.microbatch, a.pass, a.chunk, start, end});
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
