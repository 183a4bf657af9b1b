//===- Report.h - what a partitioned model communicates and costs -*- C++
//-*-===//
//
// For a compiled model: every collective (kind, mesh axes, bytes, how many
// times, why it exists), parameter bytes per rank, an activation-memory
// estimate, and an estimated step time from the cost model under a machine
// profile (communication: alpha + bytes / beta per mesh axis; compute: a
// roofline). See docs/report.md and docs/cost-model.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_REPORT_REPORT_H
#define DISTOPT_REPORT_REPORT_H

#include "distopt/CostModel/MachineProfile.h"
#include "distopt/PipelineStages/Schedule.h"
#include "distopt/Plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace distopt {

/// The phases of a training step, in the order a step runs them
/// (CollectiveEntry::phase).
inline constexpr const char *kTrainingPhases[] = {"forward", "loss",
                                                  "backward", "optimizer"};

struct CollectiveEntry {
  std::string kind;
  std::vector<std::string> axes;
  int64_t bytes = 0;       // bytes one rank sends (ring algorithms)
  int64_t tensorBytes = 0; // size of the local tensor it works on
  std::string dtype;       // of the tensor it moves: f32, bf16, ...
  int64_t count = 0;
  std::string reason;
  double timeUs = 0; // per occurrence, from the cost model
  /// In a training step, the phase of the op that needs the collective:
  /// forward, loss, backward or optimizer; empty otherwise.
  std::string phase;
};

struct PipelineReport {
  int64_t stages = 1;
  int64_t microbatches = 1;
  std::string schedule;
  std::vector<std::string> layersPerStage; // "blocks.0 .. blocks.1"
  std::vector<double> stageUs;             // one microbatch, forward
  /// Training: one microbatch's backward per stage, and the peak of the
  /// activations the stage's schedule keeps live (its representative rank).
  std::vector<double> stageBackwardUs;
  std::vector<int64_t> stageActivationPeakBytes;
  int64_t virtualStages = 1;
  std::vector<int64_t> stageParameterBytes;
  double makespanUs = 0;
  double bubbleFraction = 0;
  ScheduleTimeline timeline;
};

/// A model output as the ranks hold it.
struct OutputEntry {
  std::string name;
  std::vector<int64_t> shape; // global; -1 where dynamic
  std::string sharding;       // "[S(0), R]", "[R]" when replicated
};

/// The link a mesh axis's collectives take under the machine profile.
struct AxisLinkEntry {
  std::string axis;
  std::string link;    // the profile's link kind
  std::string backend; // "" when the profile does not say
  double alphaUs = 0;  // at the axis's group size
  double betaGBps = 0;
};

/// The machine profile the estimates assume.
struct MachineEntry {
  std::string profile; // built-in name or file
  bool builtin = false;
  std::string device;
  std::vector<AxisLinkEntry> axes;
};

/// One mixture-of-experts layer: the einsum the dispatched tokens enter
/// the experts at (GShard's `gecd,edf->gecf`, Plan/Experts.h).
struct ExpertLayerEntry {
  std::string layer; // the einsum's module path ("h.0.moe")
  int64_t experts = 0;
  /// Token slots per expert per microbatch: the extents of the dispatched
  /// tensor other than the expert and the features (groups x capacity).
  int64_t capacity = 0;
  std::vector<int64_t> dispatched; // the dispatched tensor's global shape
};

struct Report {
  int64_t ranks = 1;
  MachineEntry machine;
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshSizes;
  std::vector<CollectiveEntry> collectives;
  std::vector<int64_t> parameterBytesPerRank;
  int64_t parameterBytesTotal = 0; // all parameters, unsharded
  /// Training steps: whether this is one, and per rank the bytes of the
  /// gradients backward makes and of the optimizer states kept between
  /// steps (with the parameters: the model states ZeRO divides).
  bool training = false;
  std::vector<int64_t> gradientBytesPerRank;
  std::vector<int64_t> optimizerStateBytesPerRank;
  /// Mixed precision: per rank the bytes of the parameters' copies in the
  /// compute dtype (dist-apply-precision's casts) as the rank stores them
  /// (split under ZeRO-3; gathered copies count as activations), and that
  /// dtype ("" when there are none).
  std::vector<int64_t> computeCopyBytesPerRank;
  std::string computeDtype;
  /// Mixtures of experts: their layers, and per rank the bytes of the
  /// experts' weights (with their gradients and optimizer states in a
  /// training step) the rank keeps.
  std::vector<ExpertLayerEntry> expertLayers;
  std::vector<int64_t> expertBytesPerRank;
  int64_t activationBytesPeak = 0;  // rank 0, values live at once
  int64_t activationBytesTotal = 0; // rank 0, every intermediate value
  double flopsPerRank = 0;
  double communicationUs = 0;
  double computeUs = 0;
  /// Training steps: compute and communication time by phase (forward,
  /// loss, backward, optimizer).
  llvm::StringMap<double> usByPhase;
  std::optional<PipelineReport> pipeline;
  std::vector<OutputEntry> outputs;
  /// What the plan could not follow as written (see PlanFindings).
  std::vector<std::string> unmatchedPatterns;
  std::vector<std::string> planNotes;
  /// Context parallelism's attention variants the cost model chose.
  std::vector<AttentionDecision> attentionChoices;
};

class Compilation;

/// The report of a sharded compilation: rank 0's program (for a pipeline,
/// one rank of each stage for the stage estimates), the outputs, and what
/// the plan could not follow; its estimates on the compilation's machine
/// profile (CompileOptions::machine).
mlir::FailureOr<Report> buildReport(Compilation &compilation);

/// Builds the report from the global sharded module (after
/// dist-insert-reshards) and one partitioned module per rank (index = rank).
/// `stores(weight, rank)`, when given, says whether a rank keeps a weight
/// (pipeline stages keep only their own); by default every rank does.
/// `storedGradients`, when given, is the element type the target's program
/// stores gradients in, by parameter (storedGradientTypes), where it is
/// not the sharded module's.
Report
buildReport(mlir::ModuleOp sharded, llvm::ArrayRef<mlir::ModuleOp> partitioned,
            std::shared_ptr<const cost::MachineProfile> machine,
            std::function<bool(mlir::Operation *, int64_t)> stores = nullptr,
            const llvm::StringMap<mlir::Type> *storedGradients = nullptr);

/// The element type of each gradient (by the parameter it is of) in a
/// rank's program after the target's fusions: a cpu step whose optimizer
/// reads a bf16 gradient directly stores no f32 copy of it.
llvm::StringMap<mlir::Type> storedGradientTypes(mlir::ModuleOp fused);

/// The most bytes a rank's program holds live at once besides what it
/// stores (weights, constants, optimizer states): a liveness walk, a
/// pipeline stage's microbatch loop in the order of its schedule with the
/// loop's sums held throughout.
int64_t activationPeak(mlir::ModuleOp program);

void printReportText(const Report &report, llvm::raw_ostream &os);
void printReportJson(const Report &report, llvm::raw_ostream &os);
/// One screen: collectives grouped by phase, kind and axes; the busiest
/// rank's memory; the step estimate (no per-collective reasons).
void printReportSummary(const Report &report, llvm::raw_ostream &os);

} // namespace distopt

#endif // DISTOPT_REPORT_REPORT_H
