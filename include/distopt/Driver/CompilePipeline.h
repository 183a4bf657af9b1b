//===- CompilePipeline.h - the compile as one pass pipeline -----*- C++ -*-===//
//
// Every step of a compile between import and export is a registered pass;
// buildCompilePipeline is the one place that puts them in order, for every
// tool (through Compilation), the mlir-opt plugin and `--pass-pipeline`
// (through the `dist-pipeline` pass):
//
//   annotate   dist-strip-distribution (one device), dist-apply-precision
//              (--train with a precision policy), dist-ring-attention (a
//              plan's context_parallel attention: ring, or none named: the
//              variant by cost), dist-build-training-
//              step (--train), dist-apply-plan (--mesh, --plan; not for one
//              device)
//   shard      dist-propagate-sharding, dist-tie-updates-to-state,
//              dist-insert-reshards, cse, dist-regather-parameters
//   stages     dist-cut-pipeline-stages, dist-order-pipeline-stages (a plan
//              with a pipeline section)
//   partition  [dist-select-stage] dist-partition, dist-reshard-to-collectives,
//              canonicalize, cse (in every stage module for the SPMD
//              programs; for one rank in its stage); one device: a
//              canonicalize that only turns matrix-product einsums into
//              nn.matmul
//   fuse       dist-fuse-for-target (the target's fused forms; nested in
//              every stage module for the SPMD programs)
//
// Import (ONNX) and export (rank programs) are not IR to IR: they stay
// outside, in the Import and Export libraries. See docs/overview.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DRIVER_COMPILEPIPELINE_H
#define DISTOPT_DRIVER_COMPILEPIPELINE_H

#include "distopt/CostModel/MachineProfile.h"
#include "distopt/Import/OnnxImporter.h"
#include "distopt/Plan/Plan.h"
#include "distopt/Training/TrainConfig.h"
#include "distopt/Training/TrainingStep.h"

#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace distopt {

struct CompileOptions {
  /// "dp=2,tp=4"; empty means a single device (or the model's own mesh).
  std::string meshSpec;
  /// The `--plan` arguments, parsed once (see parsePlans).
  Plan plan;
  /// Bindings of symbolic input dimensions ("batch" -> 2).
  llvm::StringMap<int64_t> dims;
  /// Compile a training step for this config instead of the forward model
  /// (see distopt/Training/TrainingStep.h).
  std::optional<TrainConfig> train;
  /// A forward model's precision (dist-run --precision): its parameters
  /// read through casts, activations in `compute`, normalisations, softmax
  /// and outputs in f32, as training's policy does (dist-apply-precision).
  /// A training step takes its config's policy instead.
  PrecisionPolicy inferencePrecision;
  /// A bf16 or f16 model's forward computed in f32 from f32 parameters (a
  /// trained model's masters: --train-test's probe), not in its dtype.
  bool forwardInF32 = false;
  /// Drop every mesh, annotation and sharding the model carries: compile it
  /// for one device (the reference a distributed run is checked against).
  bool singleDevice = false;
  /// Values of ONNX graph inputs the importer may read where it needs them
  /// (a test-harness specialisation; see ImportOptions::inputValues).
  llvm::StringMap<InputValues> inputValues;
  /// --memory-budget without --plan auto: bytes per rank that the working
  /// set of an attention must fit where context parallelism chooses its
  /// variant by cost.
  std::optional<int64_t> memoryBudget;
  /// The machine the costs are for (propagation's conflicts, the reshard
  /// planner, the report); null: the default profile (docs/cost-model.md).
  std::shared_ptr<const cost::MachineProfile> machine;
  /// The target description (distopt/Fusion/TargetDescription.h) whose
  /// fused forms the programs take: the kernels of the device they run on
  /// (targetForDevice of the tools' --device).
  std::string target = "cpu";
  /// Where hand-written models' synthetic weights are written (see
  /// SyntheticWeights.h); empty: the system's temporary directory.
  std::string workDir;
  /// Verify the IR after every pass. A search's trial compiles turn it off
  /// (about a quarter of their time): they are only read for their
  /// predictions, and the one it chooses is verified once when the tool
  /// takes it over (Compilation::verifyTrial).
  bool verifyEachPass = true;
};

/// The phases of a compile, in order (see the file comment).
enum class CompilePhase { Annotate, Shard, Stages, Partition, Fuse };

/// What the passes find besides the IR, for the tools that read it.
struct CompileResults {
  /// What the training step trains (dist-build-training-step).
  TrainingStepInfo training;
  /// What applying the plan noticed (dist-apply-plan), for the report.
  PlanFindings planFindings;
};

/// Which part of the compile buildCompilePipeline adds.
struct CompilePipelineOptions {
  CompilePhase first = CompilePhase::Annotate;
  CompilePhase last = CompilePhase::Fuse;
  /// Partition for this rank (its stage's program, shapes and offsets
  /// concrete); -1: the SPMD program of every stage.
  int64_t rank = -1;
  /// Whether the module runs on a mesh. A single device's program is not
  /// partitioned; its partition phase only turns matrix-product einsums
  /// (a linear layer's weight gradient) into nn.matmul, as partitioning's
  /// canonicalization does on every rank.
  bool distributed = true;
  /// Where the passes leave what they find; may be null.
  CompileResults *results = nullptr;
};

/// Appends the compile's passes from `phases.first` to `phases.last` for
/// `options` to `pm` (anchored on builtin.module).
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const CompileOptions &options,
                          const CompilePipelineOptions &phases = {});

/// Registers `dist-pipeline`, the whole compile as one pass whose options are
/// the tools' compile flags.
void registerCompilePipelinePass();

} // namespace distopt

#endif // DISTOPT_DRIVER_COMPILEPIPELINE_H
