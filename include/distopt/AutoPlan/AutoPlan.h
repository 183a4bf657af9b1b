//===- AutoPlan.h - choose the plan: fastest predicted that fits -*- C++
//-*-===//
//
// `--plan auto`: enumerate plans (mesh factorisations into dp x tp x pp,
// the ZeRO level of dp, sequence parallelism with tp, pipeline schedules and
// microbatches, recomputation of the repeated layers), predict each from the
// compiler's own terms of one repeated layer (the model cut to a few layers,
// compiled once per tp/sp/ZeRO/recompute choice: the one cost model, the
// liveness memory), compile the fastest that fit whole to confirm, and keep
// the fastest confirmed step whose predicted per-rank peak memory fits the
// budget. A lower bound on each candidate's model states rules out, before
// predicting, those that cannot fit. See docs/auto-plan.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_AUTOPLAN_AUTOPLAN_H
#define DISTOPT_AUTOPLAN_AUTOPLAN_H

#include "distopt/Driver/CompilePipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Diagnostic;
} // namespace mlir

namespace distopt {
class Compilation;
struct Report;
} // namespace distopt

namespace distopt::autoplan {

/// One point of the search space.
struct Candidate {
  int64_t dp = 1, tp = 1, pp = 1;
  /// HSDP: data-parallel groups of `dp` ranks that shard (ZeRO), replicated
  /// `replicate` times (mesh axis `rep`, outside dp); 1 without.
  int64_t replicate = 1;
  int64_t zero = 0; // ZeRO level of dp: 0 dp, 1, 2, 3 fsdp
  bool sequenceParallel = false;
  std::string schedule; // pipeline schedule ("" without pp)
  int64_t microbatches = 1;
  int64_t virtualStages = 1;
  bool recompute = false;

  /// The axes of size > 1, outer to inner (pp, rep, dp, tp).
  std::vector<std::pair<std::string, int64_t>> axes() const;
  /// "pp=2,rep=2,dp=2,tp=2": axes() as a mesh ("dp=1" for one device).
  std::string mesh() const;
  /// The presets the plan applies: dp/zero1/zero2/fsdp, tp, sp.
  std::vector<std::string> presets() const;
  /// "zero2,tp,sp + pp 1f1b x4 + recompute".
  std::string describe() const;
};

/// What the space is drawn from.
struct SearchSpace {
  int64_t devices = 1;
  /// --mesh fixed the axis sizes (rep, dp, tp, pp; absent axes are 1).
  bool fixedMesh = false;
  int64_t replicate = 1, dp = 1, tp = 1, pp = 1;
  /// The repeated layers ("h.*"; "" when the model has none): the pipeline's
  /// split and the recompute glob.
  std::string layerGlob;
  int64_t layers = 0;
  bool training = false;
  /// Largest tp considered (a node's devices: tensor parallelism needs the
  /// fast links).
  int64_t maxTensorParallel = 8;
};

/// Every candidate of `space`, in a fixed order.
std::vector<Candidate> enumerateCandidates(const SearchSpace &space);

/// `base` with the candidate's mesh, plan and recompute.
CompileOptions candidateOptions(mlir::MLIRContext *ctx,
                                const CompileOptions &base,
                                const Candidate &candidate,
                                llvm::StringRef layerGlob);

/// The compiler's predictions for one compiled candidate (rank 0 and, with
/// a pipeline, each stage's representative; microseconds and bytes).
struct Prediction {
  double computeUs = 0; // without the bubble and the recomputation
  double communicationUs = 0;
  double bubbleUs = 0;
  double recomputeUs = 0; // set by the search from the twin without it
  double stepUs = 0;
  int64_t parameterBytes = 0;      // busiest rank
  int64_t optimizerStateBytes = 0; // busiest rank
  int64_t gradientBytes = 0;       // busiest rank (live during backward)
  int64_t activationBytes = 0;     // peak live, gradients excluded
  int64_t peakBytes = 0;           // parameters + states + live peak
  /// False when the composition stopped after the memory (over the budget)
  /// or at a lower bound on the step (stepUs) above the fastest so far.
  bool timed = true;
  /// The largest of the four memory terms, in words.
  std::string dominantTerm() const;
};

/// What the search knows of one candidate.
struct Evaluation {
  Candidate candidate;
  /// Compiled: predicted by a compile of the whole step; Predicted: from
  /// its choice's layer terms (composePrediction).
  enum class Status {
    Compiled,
    Predicted,
    Rejected,
    Screened,
    Dominated
  } status;
  Prediction prediction;
  /// Rejected: the compiler's first error; Screened: the bound; Dominated:
  /// what makes it no better than one already compiled.
  std::string reason;
  bool fits = false;
  /// Compiled to confirm: what the layer terms had predicted.
  std::optional<Prediction> composed;
  /// Predicted, not compiled: the index of the compiled evaluation on the
  /// same mesh whose layer terms predicted exactly this, and whose compile
  /// stands for it (SearchResult::alike); -1 otherwise.
  int64_t alikeOf = -1;
};

/// Bytes the search bounds memory with, measured once on the unsharded step.
struct ModelStateBytes {
  int64_t parameters = 0;      // all parameters
  int64_t optimizerStates = 0; // all optimizer states
};

/// A lower bound on a candidate's per-rank model states: every byte
/// divided as far as its axes could divide it.
int64_t modelStateLowerBound(const ModelStateBytes &bytes,
                             const Candidate &candidate);

/// A collective rank 0 runs, as the report groups it: how many run (per
/// layer, or in the rest of the step).
struct CollectiveTerm {
  std::string kind;
  std::vector<std::string> axes;
  std::string phase;
  int64_t tensorBytes = 0; // what a member holds
  double count = 0;
};

/// What one compiled step costs rank 0 and what it holds: compute by phase
/// (the loss counted with forward), the collectives, the memory terms.
struct StepTerms {
  double forwardUs = 0, backwardUs = 0, optimizerUs = 0;
  double parameterBytes = 0, optimizerStateBytes = 0, gradientBytes = 0;
  double liveBytes = 0; // the liveness peak, gradients included
  std::vector<CollectiveTerm> collectives;
};

/// The step of one (tp, sp, ZeRO level, recompute) choice split into one
/// repeated layer's terms and the rest's (embedding, head, loss), from
/// compiles of the model cut to its first k layers and to its first k + 1.
struct LayerTerms {
  StepTerms layer, rest;
};

/// What the composition needs to know of the model, read once.
struct ModelShape {
  std::string layerBase; // "h" for the layers h.0, h.1, ...
  int64_t layers = 0;
  int64_t batch = 0;        // rows of dimension 0 of the inputs (0: unknown)
  double boundaryBytes = 0; // the activation one layer hands the next
  /// Shares of the rest that sit before the first layer (the first
  /// pipeline stage's; the others are the last stage's): of its forward
  /// flops and of its parameters.
  double restComputeBefore = 0, restParametersBefore = 0;
};

/// The shape of `imported`'s layers `base.*` (`layers` of them); failure
/// (nothing emitted) when the layers are not one chain that hands one
/// activation from each layer to the next.
mlir::FailureOr<ModelShape> readModelShape(mlir::ModuleOp imported,
                                           llvm::StringRef layerBase,
                                           int64_t layers);

/// A copy of `imported` with only its first `keep` layers: the rest of the
/// chain reads what the last kept layer hands on.
mlir::OwningOpRef<mlir::ModuleOp>
keepFirstLayers(mlir::ModuleOp imported, const ModelShape &shape, int64_t keep);

/// The terms of a report (rank 0; a step without a pipeline).
StepTerms stepTerms(const Report &report);

/// One layer is what the step of `kept` + 1 layers adds to that of `kept`;
/// the rest is the latter less `kept` layers.
LayerTerms layerTermsFrom(const StepTerms &kept, const StepTerms &oneMore,
                          int64_t keptLayers);

/// Predicts `candidate` from the terms of its (tp, sp, ZeRO, recompute)
/// choice compiled as `probe` (dp 1, or 2 when the candidate has dp; rep 2
/// when it has one): compute and activations scale with the rows a rank
/// runs, collectives are timed by the cost model on the candidate's mesh, a
/// pipeline's stages are simulated with its schedule. The memory comes
/// first: a pipeline over `budget`, or whose busiest stage's work alone
/// exceeds `fastestUs`, is not simulated (`timed` false).
/// `withoutRecompute`: for a recomputing zero-bubble pipeline, the same
/// choice's terms without recomputation (what its weight passes hold); else
/// null.
Prediction
composePrediction(const LayerTerms &terms, const LayerTerms *withoutRecompute,
                  const ModelShape &shape, const Candidate &candidate,
                  const Candidate &probe,
                  std::shared_ptr<const cost::MachineProfile> machine,
                  std::optional<int64_t> budget, double fastestUs);

/// A whole compile the search keeps, so that the tool does not compile its
/// winner again: the compilation, its report, and the warnings and remarks
/// it made (the search hides them; the tool emits them when it takes the
/// compile over).
struct KeptCompile {
  std::shared_ptr<Compilation> compilation;
  std::shared_ptr<Report> report;
  std::vector<std::shared_ptr<mlir::Diagnostic>> diagnostics;
};

/// Compiles `options` on a copy of `imported` (the model `model` as
/// Compilation::importModel reads it) and builds its report; diagnostics are
/// captured, not printed: on failure `error` holds the compiler's first.
/// With `keep`, the compile is kept there instead of dropped.
mlir::FailureOr<Report> compileForReport(mlir::MLIRContext &ctx,
                                         mlir::ModuleOp imported,
                                         llvm::StringRef model,
                                         const CompileOptions &options,
                                         std::string &error,
                                         KeptCompile *keep = nullptr);

/// Compiles `candidate` on a copy of `imported` and predicts (keeping the
/// compile in `keep` when given).
Evaluation evaluateCandidate(mlir::MLIRContext &ctx, mlir::ModuleOp imported,
                             llvm::StringRef model, const CompileOptions &base,
                             const Candidate &candidate,
                             llvm::StringRef layerGlob,
                             KeptCompile *keep = nullptr);

struct SearchOptions {
  int64_t devices = 0;                 // --devices (0: from --mesh)
  std::string meshSpec;                // --mesh: the shape is fixed
  std::optional<int64_t> memoryBudget; // bytes
  /// Predict every candidate: none of the pruning rules (memory bound,
  /// recompute dominance, pipelines not simulated). For the tests that check
  /// the rules never change the choice (hidden --plan-auto-exhaustive).
  bool exhaustive = false;
};

struct SearchResult;

/// A finalist's step measured by training it for a few steps on the
/// devices (--auto-trials).
struct TrialMeasurement {
  double medianMs = 0, minMs = 0;
  /// The busiest rank's weights and states plus its peak activations.
  int64_t peakBytes = 0;
  /// A digest of the rank programs the plan compiled to.
  std::string programs;
  /// False: the programs were those of a plan measured already (`seen`
  /// said so), and nothing ran.
  bool ran = true;
};

/// Compiles the step `options` give; unless `seen` knows its programs'
/// digest, trains it for a few steps on fresh state and measures it (the
/// training tool's; collective under MPI: every process returns the same).
using TrialRunner = std::function<llvm::Expected<TrialMeasurement>(
    const CompileOptions &options,
    llvm::function_ref<bool(llvm::StringRef digest)> seen)>;

/// What training one finalist gave.
struct Trial {
  int64_t evaluation = -1; // index into SearchResult::evaluations
  std::optional<TrialMeasurement> measured;
  std::string error; // its compile or its run failed
  /// Its rank programs are those of trials[sameAs], whose measurement it
  /// takes (-1: trained itself).
  int64_t sameAs = -1;
  /// Each pass's median step (ms); `measured->medianMs` is their mean.
  std::vector<double> passMs;
  /// Measured over the memory budget (the prediction fit).
  bool overBudget = false;
};

/// The evaluations predicted fastest that fit (a whole compile's or its
/// layer terms', with a step), at most `count`, fastest first; the search's
/// winner is first.
std::vector<int64_t> trialFinalists(const SearchResult &result, int64_t count);

/// The trial with the fastest measured median among those that ran within
/// the budget; -1 when none did.
int64_t fastestMeasured(llvm::ArrayRef<Trial> trials);

struct SearchResult {
  std::vector<Evaluation> evaluations;
  int64_t winner = -1; // index into evaluations
  /// compiled: whole steps compiled (the fallback, and the final
  /// confirmations); predicted: from layer terms; probes: compiles of the
  /// model cut to one or two layers.
  int64_t compiled = 0, predicted = 0, probes = 0, rejected = 0, screened = 0,
          dominated = 0, fit = 0;
  /// Final candidates not compiled: predicted exactly as a compiled one
  /// that fits, on the same mesh.
  int64_t alike = 0;
  /// Compiled whole because nothing predicted fit and their composed peaks
  /// were just over the budget.
  int64_t nearMisses = 0;
  /// Predicted pipelines not simulated: over the budget, or bounded above
  /// the fastest.
  int64_t overBudget = 0, bounded = 0;
  std::optional<int64_t> memoryBudget;
  std::string layerGlob;
  double seconds = 0;
  /// Of those: compiling the probes, and compiling whole steps.
  double probeSeconds = 0, compileSeconds = 0;
  /// --auto-trials: the finalists trained and measured, in the order they
  /// ran, and how long that took; the winner is then the fastest measured.
  std::vector<Trial> trials;
  double trialSeconds = 0;
  /// The winner as the prediction chose it (the same as `winner` without
  /// trials).
  int64_t predictedWinner = -1;
  /// The winner's compile options.
  CompileOptions options;
  /// The winner's whole compile (made without the verifier after each
  /// pass); empty when the tool must compile it (see takeWinnerCompile).
  KeptCompile winnerCompile;
};

/// Runs the search; errors (no candidate compiles, nothing fits the budget)
/// are diagnostics on `ctx`.
mlir::FailureOr<SearchResult> searchPlans(mlir::MLIRContext &ctx,
                                          llvm::StringRef model,
                                          const CompileOptions &base,
                                          const SearchOptions &options);

/// `auto plan: <plan> on mesh <mesh>: predicted step X ms, peak memory Y MiB
/// per rank (N candidates, M fit)`.
void printAutoPlanLine(const SearchResult &result, llvm::raw_ostream &os);
/// The --report section: the top five, where each loses to the winner, and
/// the candidates the compiler rejected or the bound ruled out.
void printAutoPlanReport(const SearchResult &result, llvm::raw_ostream &os);
/// The winner as a plan file with its mesh (`--plan FILE` alone reproduces
/// the compile).
void writeAutoPlanFile(const SearchResult &result, llvm::raw_ostream &os);

/// --auto-trials: trains the finalists (trialFinalists, in order) with
/// `runner`, one after another, until `count` plans with distinct rank
/// programs have run (a plan compiled to programs already measured takes
/// their measurement), then each of those again in the reverse order; a
/// plan's time is the mean of its two medians. Prints each one's measured
/// step and memory to `log`, and makes the fastest measured within the
/// budget the winner (`options` from `base`; the first of equals). Failure
/// (a diagnostic) when none ran.
mlir::LogicalResult runTrials(mlir::MLIRContext &ctx, SearchResult &result,
                              const CompileOptions &base,
                              const TrialRunner &runner, int64_t count,
                              llvm::raw_ostream &log);

/// For the tools: if `--plan auto` was given, runs the search on `model`,
/// prints the `auto plan:` line to `log`, with --auto-trials trains the
/// finalists with `trials` (a tool that cannot train passes none: then
/// --auto-trials is an error), writes --emit-plan, and replaces `options`
/// with the winner's. Returns the search (nullopt without `--plan auto`);
/// failure after a diagnostic.
mlir::FailureOr<std::optional<SearchResult>>
resolveAutoPlan(mlir::MLIRContext &ctx, llvm::StringRef model,
                CompileOptions &options, llvm::raw_ostream &log,
                const TrialRunner *trials = nullptr);

/// The search's compile of its winner and its report, for a tool that
/// would compile the winner's `options` next: its warnings and remarks are
/// emitted, its modules verified once, and later phases verify as `options`
/// says. Empty when the search kept none (the tool compiles the winner).
mlir::FailureOr<KeptCompile> takeWinnerCompile(SearchResult &result,
                                               const CompileOptions &options);

} // namespace distopt::autoplan

#endif // DISTOPT_AUTOPLAN_AUTOPLAN_H
