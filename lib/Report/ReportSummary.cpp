//===- ReportSummary.cpp - the report on one screen ------------------------===//
//
// `--report=summary`: the mesh and machine, the collectives grouped by phase,
// kind and axes (counts, bytes, time), the busiest rank's memory and the
// step estimate, without the per-collective reasons of the full report.
//
//===----------------------------------------------------------------------===//
#include "HumanBytes.h"
#include "distopt/Report/Report.h"

#include "llvm/Support/Format.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace distopt;

namespace {
struct CollectiveGroup {
  int64_t count = 0;
  int64_t bytes = 0;
  double us = 0;
};
} // namespace

/// Where `phase` stands in kTrainingPhases; after them when it is none.
static int phaseRank(const std::string &phase) {
  int rank = 0;
  for (const char *p : kTrainingPhases) {
    if (phase == p)
      return rank;
    ++rank;
  }
  return rank;
}

static int64_t busiest(const std::vector<int64_t> &v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

void distopt::printReportSummary(const Report &r, llvm::raw_ostream &os) {
  os << "== distopt report summary: " << r.ranks << " rank(s)";
  if (!r.meshAxes.empty()) {
    os << " on mesh ";
    for (size_t a = 0; a < r.meshAxes.size(); ++a)
      os << (a ? "," : "") << r.meshAxes[a] << "=" << r.meshSizes[a];
  }
  os << "\nmachine profile: " << r.machine.profile
     << (r.machine.builtin ? " (built-in)" : "") << ", " << r.machine.device
     << "\n";

  // (phase order, phase, kind, axes, dtype) -> totals; the phase order
  // keeps forward before backward before the optimizer.
  using Key =
      std::tuple<int, std::string, std::string, std::string, std::string>;
  std::map<Key, CollectiveGroup> groups;
  for (const CollectiveEntry &e : r.collectives) {
    std::string axes;
    for (const std::string &a : e.axes)
      axes += (axes.empty() ? "" : ",") + a;
    CollectiveGroup &g =
        groups[{phaseRank(e.phase), e.phase, e.kind, axes, e.dtype}];
    g.count += e.count;
    g.bytes += e.count * e.bytes;
    g.us += e.count * e.timeUs;
  }
  os << "collectives (rank 0, bytes sent per rank):";
  if (groups.empty())
    os << " none";
  os << "\n";
  for (const auto &[key, g] : groups) {
    const auto &[order, phase, kind, axes, dtype] = key;
    os << llvm::format("  %-10s %-18s %-8s %5lld x %12s %-4s %10.1f us\n",
                       phase.empty() ? "-" : phase.c_str(), kind.c_str(),
                       axes.c_str(), (long long)g.count,
                       humanBytes(g.bytes).c_str(), dtype.c_str(), g.us);
  }

  os << "memory (busiest rank): parameters "
     << humanBytes(busiest(r.parameterBytesPerRank));
  if (r.training) {
    os << ", gradients " << humanBytes(busiest(r.gradientBytesPerRank))
       << ", optimizer states "
       << humanBytes(busiest(r.optimizerStateBytesPerRank));
    if (!r.computeDtype.empty())
      os << ", " << r.computeDtype << " copies "
         << humanBytes(busiest(r.computeCopyBytesPerRank));
  }
  os << "; activation peak " << humanBytes(r.activationBytesPeak)
     << " (rank 0)\n";

  if (r.pipeline) {
    const PipelineReport &p = *r.pipeline;
    os << llvm::format("pipeline: %lld stages, %lld microbatch(es), %s "
                       "schedule, bubble %.1f%%\n",
                       (long long)p.stages, (long long)p.microbatches,
                       p.schedule.c_str(), 100.0 * p.bubbleFraction);
  }
  if (!r.attentionChoices.empty()) {
    // One count per variant: "ring x2".
    std::map<std::string, int> counts;
    for (const AttentionDecision &d : r.attentionChoices)
      ++counts[d.variant];
    os << "context parallelism: attention by the cost model:";
    for (const auto &[variant, n] : counts)
      os << " " << variant << " x" << n;
    os << "\n";
  }
  if (!r.unmatchedPatterns.empty() || !r.planNotes.empty())
    os << "plan: " << r.unmatchedPatterns.size()
       << " pattern(s) match nothing, " << r.planNotes.size()
       << " note(s)\n";
  os << llvm::format("estimate (rank 0, one step): %.1f us = compute %.1f us "
                     "+ communication %.1f us (no overlap)\n",
                     r.computeUs + r.communicationUs, r.computeUs,
                     r.communicationUs)
     << "why each collective is there, per layer: --report\n";
}
