//===- Output.cpp - what --plan auto tells the user -------------*- C++ -*-===//
//
// The one-line verdict, the --report section (the five best predictions and
// the terms where each loses to the winner; what was not compiled and why)
// and the plan file that reproduces the winner.
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>

using namespace llvm;
using namespace distopt;
using namespace distopt::autoplan;

static double toMiB(int64_t bytes) { return bytes / 1048576.0; }

void distopt::autoplan::printAutoPlanLine(const SearchResult &result,
                                          raw_ostream &os) {
  const Evaluation &w = result.evaluations[result.winner];
  os << "auto plan: " << w.candidate.describe() << " on mesh "
     << w.candidate.mesh() << ": "
     << format("predicted step %.3f ms, peak memory %.2f MiB per rank",
               w.prediction.stepUs / 1e3, toMiB(w.prediction.peakBytes))
     << " (" << result.compiled + result.predicted << " candidates, "
     << result.fit << " fit)\n";
}

/// "communication +0.120 ms, bubble +0.050 ms": the terms in which `e` is
/// worse than the winner `w`.
static std::string losses(const Evaluation &e, const Evaluation &w,
                          std::optional<int64_t> budget) {
  std::string out;
  auto add = [&](const std::string &term) {
    out += (out.empty() ? "" : ", ") + term;
  };
  const Prediction &p = e.prediction, &q = w.prediction;
  // Differences under 0.5% of the winner's step are noise of the model.
  double noise = 0.005 * q.stepUs;
  std::pair<const char *, double> terms[] = {
      {"compute", p.computeUs - q.computeUs},
      {"communication", p.communicationUs - q.communicationUs},
      {"bubble", p.bubbleUs - q.bubbleUs},
      {"recompute", p.recomputeUs - q.recomputeUs}};
  for (auto [name, delta] : terms)
    if (delta > noise)
      add(std::string(name) + " " + formatv("+{0:F3} ms", delta / 1e3).str());
  if (!e.fits && budget)
    add(formatv("memory {0:F2} MiB over the budget",
                toMiB(p.peakBytes - *budget))
            .str());
  return out.empty() ? "-" : out;
}

/// Why a faster-looking prediction was not compiled: its layer terms are
/// another candidate's, whose whole compile stands for both.
static std::string alikeNote(const Evaluation &twin) {
  return formatv("predicted as {0}; its compile ({1:F3} ms) stands for this",
                 twin.candidate.describe(), twin.prediction.stepUs / 1e3)
      .str();
}

void distopt::autoplan::printAutoPlanReport(const SearchResult &result,
                                            raw_ostream &os) {
  int64_t total = result.evaluations.size();
  os << "== --plan auto: " << total << " candidates: " << result.predicted
     << " predicted from layer terms (" << result.probes
     << " compiles of the model cut to its first layers), " << result.compiled
     << " compiled whole";
  if (result.alike > 0)
    os << " (" << result.alike
       << " more predicted exactly as one of them on its mesh, not compiled)";
  if (result.nearMisses > 0)
    os << " (" << result.nearMisses
       << " of them predicted just over the budget, compiled as nothing "
          "predicted fit)";
  os << ", " << result.rejected << " rejected, " << result.screened
     << " ruled out by the memory bound, " << result.dominated
     << " skipped as recompute of a plan that fits; " << result.fit << " fit";
  if (result.memoryBudget)
    os << format(" the budget of %.2f MiB", toMiB(*result.memoryBudget));
  os << format(" (%.2f s; compiling: %.2f s the cut models, %.2f s whole "
               "steps)\n",
               result.seconds, result.probeSeconds, result.compileSeconds);
  if (result.overBudget + result.bounded > 0)
    os << "pipelines predicted without simulating the schedule: "
       << result.overBudget << " over the budget, " << result.bounded
       << " whose busiest stage alone is slower than the fastest fit\n";
  if (!result.layerGlob.empty())
    os << "repeated layers: " << result.layerGlob
       << " (pipeline split and recompute glob)\n";
  // The winner, then the fastest others, fitting or not.
  std::vector<const Evaluation *> ranked;
  for (const Evaluation &e : result.evaluations)
    if ((e.status == Evaluation::Status::Compiled ||
         (e.status == Evaluation::Status::Predicted && e.prediction.timed)) &&
        &e != &result.evaluations[result.winner])
      ranked.push_back(&e);
  std::stable_sort(ranked.begin(), ranked.end(), [](auto *a, auto *b) {
    return a->prediction.stepUs < b->prediction.stepUs;
  });
  ranked.insert(ranked.begin(), &result.evaluations[result.winner]);
  if (ranked.size() > 5)
    ranked.resize(5);
  const Evaluation &w = *ranked.front();
  os << "top candidates (predicted; step = compute + communication + bubble "
        "+ recompute; from: the whole step compiled, or its layer terms):\n";
  os << format("  %-2s %-36s %-16s %10s %9s %9s %9s %9s %11s %-7s  %s\n", "#",
               "plan", "mesh", "step ms", "compute", "comm", "bubble", "recomp",
               "peak MiB", "from", "loses on");
  for (auto [i, e] : llvm::enumerate(ranked)) {
    const Prediction &p = e->prediction;
    os << format("  %-2d %-36s %-16s %10.3f %9.3f %9.3f %9.3f %9.3f %11.2f "
                 "%-7s  ",
                 int(i + 1), e->candidate.describe().c_str(),
                 e->candidate.mesh().c_str(), p.stepUs / 1e3, p.computeUs / 1e3,
                 p.communicationUs / 1e3, p.bubbleUs / 1e3, p.recomputeUs / 1e3,
                 toMiB(p.peakBytes),
                 e->status == Evaluation::Status::Compiled ? "compile"
                                                           : "layers")
       << (i == 0            ? std::string("(chosen)")
           : e->alikeOf >= 0 ? alikeNote(result.evaluations[e->alikeOf])
                             : losses(*e, w, result.memoryBudget))
       << "\n";
  }
  // How far the layer terms were from the whole compile where both exist.
  bool header = false;
  for (const Evaluation &e : result.evaluations) {
    if (!e.composed || e.status != Evaluation::Status::Compiled)
      continue;
    if (!header)
      os << "confirmed by a whole compile (from layer terms -> compiled):\n";
    header = true;
    // A pipeline composed over the budget was not simulated: no step.
    std::string composedStep =
        e.composed->timed ? formatv("{0:F3}", e.composed->stepUs / 1e3).str()
                          : std::string("(not simulated)");
    os << format("  %-36s %-16s step %s -> %.3f ms, peak %.2f -> %.2f MiB\n",
                 e.candidate.describe().c_str(), e.candidate.mesh().c_str(),
                 composedStep.c_str(), e.prediction.stepUs / 1e3,
                 toMiB(e.composed->peakBytes), toMiB(e.prediction.peakBytes));
  }
  // What was not compiled, grouped by why.
  for (auto status :
       {Evaluation::Status::Rejected, Evaluation::Status::Screened}) {
    std::map<std::string, std::vector<const Evaluation *>> byReason;
    for (const Evaluation &e : result.evaluations)
      if (e.status == status)
        byReason[e.reason].push_back(&e);
    if (byReason.empty())
      continue;
    os << (status == Evaluation::Status::Rejected
               ? "rejected (the compiler's reason, or a batch the "
                 "microbatches do not divide):\n"
               : "ruled out before compiling (lower bound over the budget):\n");
    for (auto &[reason, list] : byReason)
      os << "  " << list.size() << " candidate(s), e.g. "
         << list.front()->candidate.describe() << " on mesh "
         << list.front()->candidate.mesh() << ": " << reason << "\n";
  }
  os << "\n";
}

void distopt::autoplan::writeAutoPlanFile(const SearchResult &result,
                                          raw_ostream &os) {
  const Evaluation &w = result.evaluations[result.winner];
  const Candidate &c = w.candidate;
  os << "# --plan auto chose " << c.describe() << ": "
     << format("predicted step %.3f ms, peak memory %.2f MiB per rank",
               w.prediction.stepUs / 1e3, toMiB(w.prediction.peakBytes));
  int trained = llvm::count_if(
      result.trials, [](const Trial &t) { return t.sameAs < 0 && t.measured; });
  for (const Trial &t : result.trials)
    if (t.evaluation == result.winner && t.measured)
      os << format("; measured %.3f ms, %.2f MiB, the fastest of %d plans "
                   "trained (--auto-trials)",
                   t.measured->medianMs, toMiB(t.measured->peakBytes), trained);
  os << "\n";
  os << "mesh: " << c.mesh() << "\n";
  std::vector<std::string> presets = c.presets();
  if (!presets.empty()) {
    os << "presets: [";
    llvm::interleaveComma(presets, os);
    os << "]\n";
  }
  if (c.pp > 1) {
    os << "pipeline:\n"
       << "  split: \"" << result.layerGlob << "\"\n"
       << "  microbatches: " << c.microbatches << "\n"
       << "  schedule: " << c.schedule << "\n";
    if (c.virtualStages > 1)
      os << "  virtual_stages: " << c.virtualStages << "\n";
  }
  if (c.recompute)
    os << "recompute: [\"" << result.layerGlob << "\"]\n";
}
