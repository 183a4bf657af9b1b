//===- AutoPlanTrialsTest.cpp - --auto-trials' choice -----------*- C++ -*-===//
//
// Which finalists --auto-trials trains and which it keeps, on search results
// and measurements made up here: the predicted winner is tried first, then
// the fastest predicted that fit; the fastest measured within the budget
// wins, a failed or over-budget trial never does.
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace distopt;
using namespace distopt::autoplan;

namespace {

using Status = Evaluation::Status;

Evaluation evaluation(int64_t dp, int64_t tp, int64_t zero, double stepMs,
                      Status status = Status::Compiled, bool fits = true,
                      bool timed = true) {
  Evaluation e;
  e.candidate.dp = dp;
  e.candidate.tp = tp;
  e.candidate.zero = zero;
  e.status = status;
  e.prediction.stepUs = stepMs * 1e3;
  e.prediction.timed = timed;
  e.prediction.peakBytes = 10 << 20;
  e.fits = fits;
  return e;
}

/// A search whose first evaluation won.
SearchResult searched(std::vector<Evaluation> evaluations) {
  SearchResult r;
  r.evaluations = std::move(evaluations);
  r.winner = r.predictedWinner = 0;
  return r;
}

/// dp 100 ms (the predicted winner), zero1 97 ms but over the budget, tp
/// 103 ms from layer terms, fsdp 102 ms, zero2 untimed, tp+sp rejected.
SearchResult sixCandidates() {
  SearchResult r;
  r.evaluations.push_back(evaluation(2, 1, 0, 100));
  r.evaluations.push_back(evaluation(2, 1, 1, 97, Status::Compiled, false));
  r.evaluations.push_back(evaluation(1, 2, 0, 103, Status::Predicted));
  r.evaluations.push_back(evaluation(2, 1, 3, 102));
  r.evaluations.push_back(
      evaluation(2, 1, 2, 90, Status::Predicted, true, /*timed=*/false));
  r.evaluations.push_back(evaluation(1, 2, 0, 80, Status::Rejected));
  r.winner = r.predictedWinner = 0;
  return r;
}

TEST(AutoPlanTrials, FinalistsAreTheWinnerThenTheFastestThatFit) {
  SearchResult r = sixCandidates();
  EXPECT_EQ(trialFinalists(r, 3), (std::vector<int64_t>{0, 3, 2}));
  EXPECT_EQ(trialFinalists(r, 2), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(trialFinalists(r, 1), (std::vector<int64_t>{0}));
  // Only three fit and have a predicted step.
  EXPECT_EQ(trialFinalists(r, 10), (std::vector<int64_t>{0, 3, 2}));
}

Trial measured(int64_t evaluation, double medianMs, int64_t peakBytes = 0,
               bool overBudget = false) {
  Trial t;
  t.evaluation = evaluation;
  t.measured = TrialMeasurement{medianMs, medianMs - 1, peakBytes};
  t.overBudget = overBudget;
  return t;
}

TEST(AutoPlanTrials, TheFastestMeasuredWithinTheBudgetWins) {
  std::vector<Trial> trials = {measured(0, 105), measured(3, 99),
                               measured(2, 101)};
  EXPECT_EQ(fastestMeasured(trials), 1);
  trials[1].overBudget = true;
  EXPECT_EQ(fastestMeasured(trials), 2);
  trials[2].measured.reset();
  trials[2].error = "cannot compile";
  EXPECT_EQ(fastestMeasured(trials), 0);
  trials[0].overBudget = true;
  EXPECT_EQ(fastestMeasured(trials), -1);
}

TEST(AutoPlanTrials, RunTrialsMakesTheFastestMeasuredTheWinner) {
  mlir::MLIRContext ctx;
  SearchResult r = sixCandidates();
  r.memoryBudget = 12 << 20;
  // fsdp measures fastest, tp faster still but over the budget.
  std::map<std::string, TrialMeasurement> runs = {
      {"dp=2", {104.0, 103.0, 11 << 20, "dp"}},
      {"tp=2", {95.0, 94.0, 13 << 20, "tp"}}};
  int calls = 0;
  TrialRunner runner = [&](const CompileOptions &o,
                           llvm::function_ref<bool(llvm::StringRef)> seen)
      -> llvm::Expected<TrialMeasurement> {
    ++calls;
    if (o.plan.specs.front().presets == std::vector<std::string>{"fsdp"})
      return TrialMeasurement{100.0, 99.0, 10 << 20, "fsdp"};
    return runs.at(o.meshSpec);
  };
  std::string log;
  llvm::raw_string_ostream os(log);
  ASSERT_TRUE(succeeded(runTrials(ctx, r, CompileOptions(), runner, 3, os)));
  EXPECT_EQ(calls, 6); // two passes
  EXPECT_EQ(r.winner, 3);
  EXPECT_EQ(r.predictedWinner, 0);
  EXPECT_EQ(r.options.meshSpec, "dp=2");
  EXPECT_EQ(r.options.plan.specs.front().presets,
            std::vector<std::string>{"fsdp"});
  ASSERT_EQ(r.trials.size(), 3u);
  for (const Trial &t : r.trials)
    EXPECT_EQ(t.sameAs, -1); // three digests: all trained
  EXPECT_TRUE(r.trials[2].overBudget);
  EXPECT_NE(log.find("tp on mesh tp=2: measured 95.000 ms (passes 95.000 / "
                     "95.000, fastest step 94.000; predicted 103.000), peak "
                     "13.00 MiB on the busiest rank (predicted 10.00): over "
                     "the budget of 12.00 MiB"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("auto plan (measured): fsdp on mesh dp=2: 100.000 ms "
                     "per step, 3.8% faster than the predicted winner"),
            std::string::npos)
      << log;
}

TEST(AutoPlanTrials, NoTrialThatRanIsAnError) {
  mlir::MLIRContext ctx;
  SearchResult r = sixCandidates();
  std::string error;
  ctx.getDiagEngine().registerHandler([&](mlir::Diagnostic &d) {
    error = d.str();
    return mlir::success();
  });
  TrialRunner failing = [](const CompileOptions &,
                           llvm::function_ref<bool(llvm::StringRef)>)
      -> llvm::Expected<TrialMeasurement> {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "out of memory");
  };
  std::string log;
  llvm::raw_string_ostream os(log);
  EXPECT_TRUE(failed(runTrials(ctx, r, CompileOptions(), failing, 2, os)));
  EXPECT_EQ(error, "--auto-trials: none of the 2 plan(s) tried ran within "
                   "the budget (see the lines above)");
  EXPECT_NE(log.find("dp on mesh dp=2: failed: out of memory"),
            std::string::npos)
      << log;
  EXPECT_EQ(r.winner, 0);
}

/// zero2 compiles to zero1's programs here: it is not trained, takes
/// zero1's measurement, does not count towards the plans asked for, and
/// never wins against the plan it equals (the first of equals wins).
TEST(AutoPlanTrials, PlansWithTheSameProgramsAreTrainedOnce) {
  mlir::MLIRContext ctx;
  SearchResult r = searched({evaluation(2, 1, 1, 100),   // zero1
                             evaluation(2, 1, 2, 100),   // zero2
                             evaluation(2, 1, 3, 101),   // fsdp
                             evaluation(2, 1, 0, 102)}); // dp
  std::vector<std::string> ran;
  TrialRunner runner = [&](const CompileOptions &o,
                           llvm::function_ref<bool(llvm::StringRef)> seen)
      -> llvm::Expected<TrialMeasurement> {
    std::string preset = o.plan.specs.front().presets.front();
    std::string digest = preset == "zero2" ? "zero1" : preset;
    TrialMeasurement m{preset == "fsdp" ? 110.0 : 105.0, 100.0, 1, digest};
    if (seen(digest)) {
      m.ran = false;
      return m;
    }
    ran.push_back(preset);
    return m;
  };
  std::string log;
  llvm::raw_string_ostream os(log);
  ASSERT_TRUE(succeeded(runTrials(ctx, r, CompileOptions(), runner, 3, os)));
  // The second pass in the reverse order.
  EXPECT_EQ(ran, (std::vector<std::string>{"zero1", "fsdp", "dp", "dp", "fsdp",
                                           "zero1"}));
  ASSERT_EQ(r.trials.size(), 4u);
  EXPECT_EQ(r.trials[1].sameAs, 0);
  EXPECT_EQ(r.trials[1].measured->medianMs, 105.0);
  EXPECT_EQ(r.winner, 0);
  EXPECT_NE(log.find("  zero2 on mesh dp=2: the same rank programs as zero1; "
                     "not trained again\n"),
            std::string::npos)
      << log;
  std::string file;
  llvm::raw_string_ostream fs(file);
  writeAutoPlanFile(r, fs);
  EXPECT_NE(file.find("the fastest of 3 plans trained"), std::string::npos)
      << file;
}

/// A machine that slows down by 10 ms a trial: the first pass alone would
/// rank the plans in the order they ran (dp first); with the reversed
/// second pass dp's and tp's means are equal and fsdp, 3 ms faster than
/// both, wins.
TEST(AutoPlanTrials, TheSecondPassCancelsADrift) {
  mlir::MLIRContext ctx;
  SearchResult r = searched({evaluation(2, 1, 0, 100),   // dp
                             evaluation(1, 2, 0, 101),   // tp
                             evaluation(2, 1, 3, 102)}); // fsdp
  int calls = 0;
  TrialRunner drifting = [&](const CompileOptions &o,
                             llvm::function_ref<bool(llvm::StringRef)>)
      -> llvm::Expected<TrialMeasurement> {
    double ms = 100 + 10 * calls++;
    // fsdp runs 3 ms faster than the others.
    if (o.plan.specs.front().presets == std::vector<std::string>{"fsdp"})
      ms -= 3;
    return TrialMeasurement{ms, ms, 1,
                            o.meshSpec + o.plan.specs.front().presets.front()};
  };
  std::string log;
  llvm::raw_string_ostream os(log);
  ASSERT_TRUE(succeeded(runTrials(ctx, r, CompileOptions(), drifting, 3, os)));
  // dp 100 and 150, tp 110 and 140, fsdp 117 and 127: means 125, 125, 122.
  EXPECT_EQ(r.trials[0].passMs, (std::vector<double>{100, 150}));
  EXPECT_EQ(r.trials[1].measured->medianMs, 125.0);
  EXPECT_EQ(r.winner, 2) << log;
}

} // namespace
