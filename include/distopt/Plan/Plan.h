//===- Plan.h - parallelism plans: presets and plan files -------*- C++ -*-===//
//
// A plan says how a model's tensors are laid out over the mesh, next to an
// unchanged model: tensor-parallel styles keyed by glob patterns on weight and
// node names, sequence and data parallelism, explicit placements, and a
// pipeline section. The `--plan` arguments are parsed once into a `Plan`;
// applying it turns everything it says into dist.annotate constraints with
// priorities (0 strongest); propagation does the rest. See docs/plans.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PLAN_PLAN_H
#define DISTOPT_PLAN_PLAN_H

#include "distopt/CostModel/MachineProfile.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace distopt {

/// Priorities of the constraints plans create (0 is the strongest).
enum PlanPriority : int64_t {
  kExplicitPriority = 0,     // placements written in the plan
  kStylePriority = 1,        // tensor-parallel styles, data-parallel inputs
  kPresetPriority = 2,       // automatic tensor parallelism
  kSequencePriority = 3,     // sequence parallelism: yields to tensor splits
  kShardedStatePriority = 4, // sharded parameters (FSDP), gathered where used
};

/// A glob over names and where the plan wrote it.
struct StyleRule {
  std::string pattern; // glob over module paths (weight or node names)
  std::string style;   // colwise, rowwise, vocab, replicate
  mlir::LocationAttr loc;
};

struct ExplicitPlacement {
  std::string pattern; // glob over tensor / input / weight names
  std::vector<std::string> placements; // one per mesh axis, e.g. S(0), R, ?
  int64_t priority = kExplicitPriority;
  mlir::LocationAttr loc;
};

/// The pipeline a plan asks for.
struct PipelineSpec {
  std::string axis = "pp";
  std::string split;  // glob on layer names, e.g. blocks.*
  int64_t stages = 0; // 0: the size of the pipeline axis
  int64_t microbatches = 1;
  std::string schedule = "1f1b";
  /// Model chunks per stage (interleaved-1f1b): stage s holds chunks s,
  /// s + stages, ...
  int64_t virtualStages = 1;
  mlir::LocationAttr loc;
};

/// Context parallelism: every activation split along the sequence over
/// `axis`; `attention` says how attention sees the whole sequence.
struct ContextParallelSpec {
  std::string axis = "cp";
  /// allgather: each rank keeps its query rows, keys and values are
  /// gathered; ulysses: all-to-all from the sequence split to a head split
  /// around attention; ring: K/V blocks passed around the ring
  /// (dist-ring-attention); empty: the cost model chooses per attention
  /// (Plan/ContextParallelCost.h).
  std::string attention;
  /// `ring` only (named in the plan): each rank holds two mirrored chunks
  /// of the sequence cut into 2 x size chunks (r and 2 x size - 1 - r), so
  /// that a causal mask leaves every rank the same work (docs/plans.md).
  bool loadBalance = false;
  mlir::LocationAttr loc;
};

/// One `--plan` argument: a plan file, or presets named on the command line.
struct PlanSpec {
  std::string source; // the plan file's path, or "--plan"
  mlir::LocationAttr loc;
  std::vector<std::string> presets;
  std::string tpAxis = "tp";
  std::vector<StyleRule> styles;
  bool sequenceParallel = false;
  std::optional<std::string> dpAxis;
  int64_t dpLevel = 0;
  /// `data_parallel.replicate`: a second data axis (HSDP's replicate group):
  /// the batch splits over it too, and what the level shards over `dpAxis`
  /// is replicated over it (gradients all-reduced over it).
  std::optional<std::string> dpReplicateAxis;
  mlir::LocationAttr dpReplicateLoc; // the plan file's line
  /// `expert_parallel: {axis: ep}`: experts split over this axis.
  std::optional<std::string> epAxis;
  std::vector<ExplicitPlacement> placements;
  std::optional<PipelineSpec> pipeline;
  std::optional<ContextParallelSpec> contextParallel;
  bool strict = false; // `strict: true`: unmatched patterns are errors
  /// `mesh: dp=2,tp=4`: the mesh the plan was made for (--mesh may be left
  /// out; given, it must be the same).
  std::string mesh;
  mlir::LocationAttr meshLoc;
  /// `recompute: [globs]`: layers whose activations a training step
  /// recomputes, added to the training config's `recompute`.
  std::vector<std::pair<std::string, mlir::LocationAttr>> recompute;
};

/// Everything the `--plan` arguments say, in order.
struct Plan {
  std::vector<PlanSpec> specs;
  /// Patterns that match nothing are errors, not warnings.
  bool strict = false;

  /// The pipeline section, if a plan has one (at most one may).
  const PipelineSpec *pipeline() const;
  /// Microbatches of the pipeline section (1 without one).
  int64_t microbatches() const;
  /// The mesh a plan file names ("" if none does).
  const PlanSpec *meshSource() const;
  /// The context_parallel section or the `cp` preset's (axis cp, no
  /// variant named), if a plan has one (the last wins).
  const ContextParallelSpec *contextParallel() const;
  /// Every plan file's `recompute` globs, in order.
  std::vector<std::pair<std::string, mlir::LocationAttr>> recompute() const;
  bool empty() const { return specs.empty(); }
};

struct MeshAxis {
  std::string name;
  int64_t size;
};

/// Parses a mesh spec "name=size,..."; returns an error message on failure.
/// `flag` names where the spec came from in the messages.
llvm::Expected<std::vector<MeshAxis>>
parseMeshSpec(llvm::StringRef spec, llvm::StringRef flag = "--mesh");

/// Declares `dist.mesh @mesh` from a mesh spec, or checks that the module's
/// own mesh has exactly those axes; nothing for an empty spec. Errors are
/// diagnostics (`flag` as for parseMeshSpec).
mlir::LogicalResult declareMesh(mlir::ModuleOp module, llvm::StringRef spec,
                                llvm::StringRef flag = "--mesh");

/// Removes meshes, annotations and sharding attributes: the single-device
/// program of the same model.
void stripDistribution(mlir::ModuleOp module);

/// Parses the `--plan` arguments: each is a plan file (YAML or JSON) or a
/// comma-separated list of presets. Errors are diagnostics at the plan
/// file's line.
mlir::FailureOr<Plan> parsePlans(mlir::MLIRContext *ctx,
                                 llvm::ArrayRef<std::string> args);

/// The mesh a compile uses: `flagMesh` (--mesh) or, when it is empty, the
/// mesh a plan file names; a diagnostic when both are given and differ.
mlir::FailureOr<std::string> resolvePlanMesh(mlir::MLIRContext *ctx,
                                             llvm::StringRef flagMesh,
                                             const Plan &plan);

/// Parses one plan file.
mlir::FailureOr<PlanSpec> parsePlanFile(mlir::MLIRContext *ctx,
                                        llvm::StringRef path);

/// One attention whose context-parallel variant the cost model chose (the
/// plan named none): each candidate's cost or why it was none.
struct AttentionDecision {
  std::string layer;   // module path, "layers.0.self_attn"
  std::string variant; // what it runs
  std::string axis;    // the context axis and its size
  int64_t ranks = 1;
  std::string machine;                 // the cost model's profile
  std::optional<int64_t> memoryBudget; // bytes per rank, when given
  struct Candidate {
    std::string variant;
    /// Empty when it was a candidate; else why not (cannot split this
    /// attention, over the budget).
    std::string rejected;
    bool overBudget = false; // costed, then rejected for what it holds
    double us = 0;           // its collectives' time (cost model)
    double sentBytes = 0;    // bytes one rank sends
    double heldBytes = 0;    // what a rank holds of the attention
    int64_t collectives = 0;
  };
  std::vector<Candidate> candidates; // in the order ties go
};

/// What applying a plan noticed that does not stop it, for the report: each
/// entry is also emitted as a warning.
struct PlanFindings {
  /// "plan.yaml:4: 'fc3'" for each pattern that matched nothing.
  std::vector<std::string> unmatchedPatterns;
  /// Places where the plan could not be followed as written (heads that do
  /// not divide, batches smaller than the data axis).
  std::vector<std::string> notes;
  /// Context parallelism's attention variants the cost model chose, each
  /// also a remark (dist-ring-attention and dist-apply-plan fill it).
  std::vector<AttentionDecision> attention;
};

/// Applies the plan to the module's main function as dist.annotate
/// constraints. Needs the module's mesh when the plan splits anything. The
/// pass dist-apply-plan declares the mesh and runs it. `machine` weighs the
/// links where the plan propagates shardings to see what is split (null:
/// the default profile). `chosen` are the attention variants
/// dist-ring-attention chose before; they come first in the findings, as
/// the plan revised them (ulysses where other axes leave heads that do not
/// divide: checkUlyssesHeads).
mlir::FailureOr<PlanFindings>
applyPlan(mlir::ModuleOp module, const Plan &plan,
          std::shared_ptr<const cost::MachineProfile> machine = nullptr,
          std::vector<AttentionDecision> chosen = {});

/// Rewrites each projection whose result is only ever sliced along its last
/// dimension (a fused QKV) into one projection per slice, each reading a
/// window of the stored weight. Plans run it first; training runs it before
/// differentiating, so each window is its own parameter.
void splitFusedProjections(mlir::ModuleOp module);

/// Rewrites a model exported with a fixed batch to take one of
/// `microbatches` equal slices of it (dimension 0 of every input); an error
/// at `loc` if the batch does not divide or an op mixes rows of the batch
/// (followed by `mixingHint`, when given: what the caller knows about why).
mlir::LogicalResult splitBatch(mlir::ModuleOp module, int64_t microbatches,
                               mlir::Location loc,
                               llvm::StringRef mixingHint = {});

/// The pipeline schedules a plan may name: gpipe, 1f1b, interleaved-1f1b,
/// zb-h1 (see PipelineStages/Schedule.h).
llvm::ArrayRef<llvm::StringRef> pipelineScheduleNames();

/// The attention variants context parallelism knows: allgather, ulysses,
/// ring.
llvm::ArrayRef<llvm::StringRef> contextParallelAttentions();

/// Names of the presets, for --help and messages.
llvm::ArrayRef<llvm::StringRef> presetNames();

} // namespace distopt

#endif // DISTOPT_PLAN_PLAN_H
