//===- Trials.cpp - --auto-trials: measure the finalists --------*- C++ -*-===//
//
// Plans predicted a few percent apart are as likely to run in either order
// on a given machine (docs/auto-plan.md#measured-finalists): the tool trains
// the fastest predicted few for some steps each and keeps the fastest
// measured whose measured memory fits the budget.
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <chrono>
#include <map>

using namespace llvm;
using namespace mlir;
using namespace distopt;
using namespace distopt::autoplan;

static double toMiB(int64_t bytes) { return bytes / 1048576.0; }

std::vector<int64_t>
distopt::autoplan::trialFinalists(const SearchResult &result, int64_t count) {
  std::vector<int64_t> out;
  for (auto [i, e] : llvm::enumerate(result.evaluations)) {
    bool hasStep =
        e.status == Evaluation::Status::Compiled ||
        (e.status == Evaluation::Status::Predicted && e.prediction.timed);
    if (hasStep && e.fits && static_cast<int64_t>(i) != result.winner)
      out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&](int64_t a, int64_t b) {
    return result.evaluations[a].prediction.stepUs <
           result.evaluations[b].prediction.stepUs;
  });
  if (result.winner >= 0)
    out.insert(out.begin(), result.winner);
  if (static_cast<int64_t>(out.size()) > count)
    out.resize(std::max<int64_t>(count, 0));
  return out;
}

int64_t distopt::autoplan::fastestMeasured(ArrayRef<Trial> trials) {
  int64_t best = -1;
  for (auto [i, t] : llvm::enumerate(trials)) {
    if (!t.measured || t.overBudget)
      continue;
    if (best < 0 || t.measured->medianMs < trials[best].measured->medianMs)
      best = i;
  }
  return best;
}

LogicalResult distopt::autoplan::runTrials(MLIRContext &ctx,
                                           SearchResult &result,
                                           const CompileOptions &base,
                                           const TrialRunner &runner,
                                           int64_t count, raw_ostream &log) {
  auto start = std::chrono::steady_clock::now();
  std::vector<int64_t> finalists =
      trialFinalists(result, static_cast<int64_t>(result.evaluations.size()));
  log << "auto trials: training the "
      << std::min<int64_t>(count, finalists.size())
      << " plan(s) predicted fastest that fit, one after another (plans "
         "compiled to the same rank programs count once):\n";
  result.trials.clear();
  auto optionsOf = [&](const Trial &t) {
    return candidateOptions(&ctx, base,
                            result.evaluations[t.evaluation].candidate,
                            result.layerGlob);
  };
  // Pass 1, fastest predicted first. Digest of a trial's rank programs ->
  // that trial.
  std::map<std::string, int64_t> trained;
  int64_t distinct = 0;
  for (int64_t index : finalists) {
    if (distinct == count)
      break;
    Trial trial;
    trial.evaluation = index;
    auto measured = runner(optionsOf(trial), [&](StringRef digest) {
      return trained.count(digest.str());
    });
    if (!measured) {
      trial.error = toString(measured.takeError());
      ++distinct;
    } else if (!measured->ran) {
      trial.sameAs = trained.at(measured->programs);
    } else {
      ++distinct;
      trained.emplace(measured->programs, result.trials.size());
      trial.measured = *measured;
      trial.passMs.push_back(measured->medianMs);
    }
    result.trials.push_back(std::move(trial));
  }
  // Pass 2 in the reverse order: a machine that drifts, or a first trial
  // that pays for the process's cold start, weighs on every plan alike.
  for (Trial &trial : llvm::reverse(result.trials)) {
    if (!trial.measured)
      continue;
    auto again = runner(optionsOf(trial), [](StringRef) { return false; });
    if (!again) {
      trial.error = toString(again.takeError());
      trial.measured.reset();
      continue;
    }
    TrialMeasurement &m = *trial.measured;
    trial.passMs.push_back(again->medianMs);
    m.medianMs = (m.medianMs + again->medianMs) / 2;
    m.minMs = std::min(m.minMs, again->minMs);
    m.peakBytes = std::max(m.peakBytes, again->peakBytes);
  }
  for (Trial &trial : result.trials) {
    // The same programs: the same measurement, and no chance to win
    // against them by the machine's noise. (A twin comes earlier.)
    if (trial.sameAs >= 0)
      trial.measured = result.trials[trial.sameAs].measured;
    trial.overBudget = trial.measured && result.memoryBudget &&
                       trial.measured->peakBytes > *result.memoryBudget;
  }
  for (const Trial &trial : result.trials) {
    const Evaluation &e = result.evaluations[trial.evaluation];
    log << "  " << e.candidate.describe() << " on mesh " << e.candidate.mesh()
        << ": ";
    if (trial.sameAs >= 0) {
      log << "the same rank programs as "
          << result.evaluations[result.trials[trial.sameAs].evaluation]
                 .candidate.describe()
          << "; not trained again\n";
      continue;
    }
    if (!trial.measured) {
      log << "failed: " << trial.error << "\n";
      continue;
    }
    const TrialMeasurement &m = *trial.measured;
    log << format("measured %.3f ms (passes %.3f / %.3f, fastest step %.3f; "
                  "predicted %.3f), peak %.2f MiB on the busiest rank "
                  "(predicted %.2f)",
                  m.medianMs, trial.passMs[0], trial.passMs[1], m.minMs,
                  e.prediction.stepUs / 1e3, toMiB(m.peakBytes),
                  toMiB(e.prediction.peakBytes));
    if (trial.overBudget)
      log << format(": over the budget of %.2f MiB",
                    toMiB(*result.memoryBudget));
    log << "\n";
  }
  result.trialSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  int64_t best = fastestMeasured(result.trials);
  if (best < 0)
    return emitError(UnknownLoc::get(&ctx))
           << "--auto-trials: none of the " << result.trials.size()
           << " plan(s) tried ran within the budget (see the lines above)";
  int64_t chosen = result.trials[best].evaluation;
  const Evaluation &w = result.evaluations[chosen];
  const TrialMeasurement &m = *result.trials[best].measured;
  log << "auto plan (measured): " << w.candidate.describe() << " on mesh "
      << w.candidate.mesh() << format(": %.3f ms per step", m.medianMs);
  if (chosen == result.predictedWinner) {
    log << ", the predicted winner";
  } else {
    for (const Trial &t : result.trials)
      if (t.evaluation == result.predictedWinner && t.measured)
        log << format(", %.1f%% faster than the predicted winner",
                      100.0 * (1.0 - m.medianMs / t.measured->medianMs));
  }
  log << format(" (trials took %.2f s)\n", result.trialSeconds);
  if (chosen != result.winner) {
    result.winner = chosen;
    result.options =
        candidateOptions(&ctx, base, w.candidate, result.layerGlob);
    // The search's kept compile is the predicted winner's.
    result.winnerCompile = KeptCompile();
  }
  return success();
}
