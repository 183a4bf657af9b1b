//===- Evaluate.cpp - one candidate, compiled and predicted -----*- C++ -*-===//
//
// A candidate is judged by the compiler's own predictions: it is compiled as
// `--mesh M --plan P` would be and its report read (docs/report.md): the cost
// model's compute and communication, the pipeline's simulated schedule, and
// the memory of parameters, optimizer states and the liveness peak.
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"

#include "distopt/Driver/Compilation.h"
#include "distopt/Report/Report.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>

using namespace mlir;
using namespace distopt;
using namespace distopt::autoplan;

std::string Prediction::dominantTerm() const {
  std::pair<int64_t, const char *> terms[] = {
      {parameterBytes, "parameters"},
      {gradientBytes, "gradients"},
      {optimizerStateBytes, "optimizer states"},
      {activationBytes, "activations"}};
  return std::max_element(std::begin(terms), std::end(terms),
                          [](auto &a, auto &b) { return a.first < b.first; })
      ->second;
}

/// The step's prediction from the compiler's report.
static Prediction predict(const Report &r) {
  Prediction p;
  // The busiest rank's stored states.
  int64_t states = 0;
  for (int64_t k = 0; k < r.ranks; ++k) {
    int64_t params = r.parameterBytesPerRank[k];
    int64_t opt = k < static_cast<int64_t>(r.optimizerStateBytesPerRank.size())
                      ? r.optimizerStateBytesPerRank[k]
                      : 0;
    if (params + opt >= states) {
      states = params + opt;
      p.parameterBytes = params;
      p.optimizerStateBytes = opt;
    }
  }
  for (int64_t g : r.gradientBytesPerRank)
    p.gradientBytes = std::max(p.gradientBytes, g);
  // The liveness peak holds what forward and backward compute, gradients
  // included (the runtime's "peak activations").
  int64_t live = r.activationBytesPeak;
  if (r.pipeline && !r.pipeline->stageActivationPeakBytes.empty())
    live = *std::max_element(r.pipeline->stageActivationPeakBytes.begin(),
                             r.pipeline->stageActivationPeakBytes.end());
  p.activationBytes = std::max<int64_t>(0, live - p.gradientBytes);
  p.gradientBytes = std::min(p.gradientBytes, live);
  p.peakBytes = states + live;

  p.communicationUs = r.communicationUs;
  if (!r.pipeline) {
    p.computeUs = r.computeUs;
    p.stepUs = r.computeUs + r.communicationUs;
    return p;
  }
  // A pipeline: the schedule's makespan (forward and backward of every
  // microbatch, idle time included), then the optimizer; collectives as
  // rank 0 issues them.
  double optimizerComm = 0;
  for (const CollectiveEntry &e : r.collectives)
    if (e.phase == "optimizer")
      optimizerComm += e.timeUs * e.count;
  double optimizerCompute =
      std::max(0.0, r.usByPhase.lookup("optimizer") - optimizerComm);
  const PipelineReport &pr = *r.pipeline;
  p.bubbleUs = pr.makespanUs * pr.bubbleFraction;
  p.computeUs = pr.makespanUs - p.bubbleUs + optimizerCompute;
  p.stepUs = pr.makespanUs + optimizerCompute + r.communicationUs;
  return p;
}

FailureOr<Report> distopt::autoplan::compileForReport(
    MLIRContext &ctx, ModuleOp imported, StringRef model,
    const CompileOptions &options, std::string &error, KeptCompile *keep) {
  // The compiler's refusal is the candidate's reason; warnings (what the
  // plan could not follow) are the report's, not the search's output, and
  // are kept for the tool if the compile is.
  error.clear();
  std::vector<std::shared_ptr<Diagnostic>> warnings;
  ScopedDiagnosticHandler quiet(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error) {
      if (error.empty())
        error = d.str();
    } else if (keep) {
      warnings.push_back(std::make_shared<Diagnostic>(std::move(d)));
    }
    return success();
  });
  FailureOr<Report> report = failure();
  auto compiled = Compilation::compile(ctx, imported, model, options);
  if (succeeded(compiled))
    report = buildReport(**compiled);
  if (failed(report)) {
    if (error.empty())
      error = "the compile failed";
    return report;
  }
  if (keep) {
    keep->compilation = std::move(*compiled);
    keep->report = std::make_shared<Report>(*report);
    keep->diagnostics = std::move(warnings);
  }
  return report;
}

Evaluation distopt::autoplan::evaluateCandidate(MLIRContext &ctx,
                                                ModuleOp imported,
                                                StringRef model,
                                                const CompileOptions &base,
                                                const Candidate &candidate,
                                                StringRef layerGlob,
                                                KeptCompile *keep) {
  Evaluation e{candidate, Evaluation::Status::Rejected, {}, {}, false};
  CompileOptions options = candidateOptions(&ctx, base, candidate, layerGlob);
  FailureOr<Report> report =
      compileForReport(ctx, imported, model, options, e.reason, keep);
  if (failed(report))
    return e;
  e.reason.clear();
  e.status = Evaluation::Status::Compiled;
  e.prediction = predict(*report);
  return e;
}
