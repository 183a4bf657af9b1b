//===- ToolFlags.cpp - --plan auto for the tools ----------------*- C++ -*-===//
#include "distopt/AutoPlan/AutoPlan.h"

#include "distopt/Driver/Compilation.h"
#include "distopt/Driver/CompileFlags.h"
#include "distopt/Support/ByteSize.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::autoplan;

static llvm::cl::opt<bool> exhaustive(
    "plan-auto-exhaustive", llvm::cl::Hidden,
    llvm::cl::desc("--plan auto without its pruning rules: predict every "
                   "candidate (to test that they do not change the choice)"));

FailureOr<std::optional<SearchResult>> distopt::autoplan::resolveAutoPlan(
    MLIRContext &ctx, StringRef model, CompileOptions &options,
    llvm::raw_ostream &log, const TrialRunner *trials) {
  AutoPlanFlags flags = autoPlanFlags();
  if (!flags.requested)
    return std::optional<SearchResult>();
  Location loc = UnknownLoc::get(&ctx);
  if (flags.trials > 0 && !trials)
    return emitError(loc) << "--auto-trials trains the plans it compares, "
                             "which only dist-train does";
  SearchOptions search;
  search.devices = flags.devices;
  search.meshSpec = options.meshSpec;
  search.exhaustive = exhaustive;
  if (!flags.memoryBudget.empty()) {
    auto budget = parseByteSize(flags.memoryBudget);
    if (!budget)
      return emitError(loc)
             << "--memory-budget: " << llvm::toString(budget.takeError());
    search.memoryBudget = *budget;
  }
  FailureOr<SearchResult> result = searchPlans(ctx, model, options, search);
  if (failed(result))
    return failure();
  printAutoPlanLine(*result, log);
  if (flags.trials > 0 &&
      failed(runTrials(ctx, *result, options, *trials, flags.trials, log)))
    return failure();
  if (!flags.emitPlan.empty()) {
    std::string error;
    auto file = openOutputFile(flags.emitPlan, &error);
    if (!file)
      return emitError(loc) << "--emit-plan: " << error;
    writeAutoPlanFile(*result, file->os());
    file->keep();
  }
  options = result->options;
  return std::optional<SearchResult>(std::move(*result));
}

FailureOr<KeptCompile>
distopt::autoplan::takeWinnerCompile(SearchResult &result,
                                     const CompileOptions &options) {
  KeptCompile kept = std::move(result.winnerCompile);
  if (!kept.compilation)
    return KeptCompile();
  // What the compile said while the search hid it, as a compile of the
  // winner's options would say it now.
  DiagnosticEngine &engine =
      kept.compilation->module()->getContext()->getDiagEngine();
  for (std::shared_ptr<Diagnostic> &d : kept.diagnostics)
    engine.emit(std::move(*d));
  kept.diagnostics.clear();
  if (failed(kept.compilation->verifyTrial(options.verifyEachPass)))
    return failure();
  return kept;
}
