//===- Plan.h - parallelism plans: presets and plan files -------*- C++ -*-===//
//
// A plan says how a model's tensors are laid out over the mesh, next to an
// unchanged model: tensor-parallel styles keyed by glob patterns on weight and
// node names, sequence and data parallelism, explicit placements, and a
// pipeline section. Everything a plan says becomes dist.annotate constraints
// with priorities (0 strongest); propagation does the rest. See docs/plans.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PLAN_PLAN_H
#define DISTOPT_PLAN_PLAN_H

#include "mlir/IR/BuiltinOps.h"
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

struct StyleRule {
  std::string pattern; // glob over module paths (weight or node names)
  std::string style;   // colwise, rowwise, vocab, replicate
  int line = 0;
};

struct ExplicitPlacement {
  std::string pattern; // glob over tensor / input / weight names
  std::vector<std::string> placements; // one per mesh axis, e.g. S(0), R, ?
  int64_t priority = kExplicitPriority;
  int line = 0;
};

struct PipelineSpec {
  std::string axis = "pp";
  std::string split;  // glob on layer names, e.g. blocks.*
  int64_t stages = 0; // 0: the size of the pipeline axis
  int64_t microbatches = 1;
  std::string schedule = "1f1b";
};

struct PlanSpec {
  std::string path;
  std::vector<std::string> presets;
  std::string tpAxis = "tp";
  std::vector<StyleRule> styles;
  bool sequenceParallel = false;
  std::optional<std::string> dpAxis;
  int64_t dpLevel = 0;
  std::vector<ExplicitPlacement> placements;
  std::optional<PipelineSpec> pipeline;
};

/// Parses a plan file (YAML, or JSON which is YAML too).
llvm::Expected<PlanSpec> parsePlanFile(llvm::StringRef path);

/// Applies a plan file, or a comma-separated list of presets
/// (replicate, dp, fsdp, tp, sp), to the module's main function.
mlir::LogicalResult applyPlan(mlir::ModuleOp module, llvm::StringRef plan);

/// Applies a parsed plan.
mlir::LogicalResult applyPlanSpec(mlir::ModuleOp module, const PlanSpec &spec);

/// Microbatches the plans' pipeline section asks for (1 without one); read
/// before import, since the model is compiled at the microbatch size.
int64_t plannedMicrobatches(const std::vector<std::string> &plans);

/// Names of the presets, for --help.
llvm::ArrayRef<llvm::StringRef> presetNames();

} // namespace distopt

#endif // DISTOPT_PLAN_PLAN_H
