//===- Compilation.h - one model compiled for one mesh ----------*- C++ -*-===//
//
// One model compiled for one mesh, for every tool: load a model (.onnx
// through the importer, .mlir as it is), then run the compile pipeline
// (CompilePipeline.h) a phase at a time: annotate (training step, mesh,
// plans), shard, cut pipeline stages, and partition for any rank. It keeps
// the sharded global module (the report reads it) and partitions a copy per
// rank. dist-opt, dist-run, dist-train and the report read a Compilation;
// they do their own input and output and nothing else.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DRIVER_COMPILATION_H
#define DISTOPT_DRIVER_COMPILATION_H

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Driver/CompilePipeline.h"
#include "distopt/PipelineStages/Schedule.h"
#include "distopt/PipelineStages/StageCut.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace distopt {

/// Parses "name=value,..." dimension bindings.
llvm::Expected<llvm::StringMap<int64_t>> parseDimSpec(llvm::StringRef spec);

class Compilation {
public:
  /// Loads the model and runs the annotate phase (training step, mesh,
  /// plans): the annotated module, before propagation (what dist-opt hands
  /// to passes named on its command line). Failures are diagnostics on
  /// `ctx`.
  static mlir::FailureOr<std::unique_ptr<Compilation>>
  load(mlir::MLIRContext &ctx, llvm::StringRef modelPath,
       const CompileOptions &options);

  /// `load` for a model already imported (.onnx) or parsed (.mlir) from
  /// `modelPath`: a copy of `model` is compiled (a search compiles one model
  /// many times and imports it once; see `importModel`).
  static mlir::FailureOr<std::unique_ptr<Compilation>>
  load(mlir::MLIRContext &ctx, mlir::ModuleOp model, llvm::StringRef modelPath,
       const CompileOptions &options);

  /// The model as `load` reads it, before any compile step.
  static mlir::OwningOpRef<mlir::ModuleOp>
  importModel(mlir::MLIRContext &ctx, llvm::StringRef modelPath,
              const CompileOptions &options);

  /// `load`, then `shard`.
  static mlir::FailureOr<std::unique_ptr<Compilation>>
  compile(mlir::MLIRContext &ctx, llvm::StringRef modelPath,
          const CompileOptions &options);
  static mlir::FailureOr<std::unique_ptr<Compilation>>
  compile(mlir::MLIRContext &ctx, mlir::ModuleOp model,
          llvm::StringRef modelPath, const CompileOptions &options);

  /// Runs the shard phase (propagate shardings, insert reshards) and, with a
  /// pipeline, the stages phase on a copy (cut and order the stages, whose
  /// send/receive pairing is checked before any program exists). A module
  /// without a mesh is compiled for one device: nothing runs.
  mlir::LogicalResult shard();

  /// For a compile made without the verifier after each pass (a search's
  /// trial, taken over as its winner): verifies the modules once, and the
  /// phases still to run (partitioning) verify as `verifyEachPass` says.
  mlir::LogicalResult verifyTrial(bool verifyEachPass);

  /// The global module: annotated after `load`, sharded after `shard`.
  mlir::ModuleOp module() { return *globalModule; }
  const Plan &plan() const { return options.plan; }
  /// The machine profile the costs are for (the default when none was
  /// given).
  std::shared_ptr<const cost::MachineProfile> machine() const;
  const PlanFindings &planFindings() const { return results.planFindings; }
  /// What the training step trains (empty for a forward compile).
  const TrainingStepInfo &training() const { return results.training; }
  bool isTraining() const { return options.train.has_value(); }
  llvm::StringRef modelPath() const { return path; }
  /// Directory relative weight paths resolve against (the model's).
  std::string weightDirectory();

  /// Whether the module has a mesh (a single-device compile has none).
  bool isDistributed() { return static_cast<bool>(mesh()); }
  dist::MeshOp mesh();
  int64_t numRanks();

  /// Pipeline stages (1 without a pipeline section).
  int64_t numStages() const { return stages ? stages->numStages : 1; }
  const PipelineSpec *pipeline() const { return options.plan.pipeline(); }
  const StageAssignment *stageAssignment() const {
    return stages ? &*stages : nullptr;
  }
  int64_t stageOfRank(int64_t rank);
  /// The ranks of one stage that stand for it (coordinate 0 elsewhere).
  int64_t representativeRank(int64_t stage);
  /// Stage `stage`'s module, nested in the staged module as `module
  /// @stage<s>` (the global module without a pipeline).
  mlir::ModuleOp stageModule(int64_t stage);
  /// Each stage's order of microbatches (empty without a pipeline).
  std::vector<ScheduleAction> schedule(int64_t stage) const;

  /// The program `rank` runs: its stage, partitioned for it, with every
  /// shape and offset concrete, in the target's fused forms (with `last` =
  /// CompilePhase::Partition: before fusion, as the report costs it).
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
  partitionForRank(int64_t rank, CompilePhase last = CompilePhase::Fuse);
  /// Rewrites `partitioned` (partitionForRank's program up to
  /// CompilePhase::Partition) into the target's fused forms, as `rank` runs
  /// it.
  mlir::LogicalResult fuse(mlir::ModuleOp partitioned, int64_t rank);
  /// The SPMD program shared by all ranks (uneven dimensions print as `?`);
  /// with a pipeline, every stage's, each in its `module @stage<s>`.
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> partitionSpmd();

private:
  Compilation() = default;
  /// Runs the annotate phase on the model the compilation owns.
  static mlir::FailureOr<std::unique_ptr<Compilation>>
  annotate(std::unique_ptr<Compilation> c);
  /// Runs the phases `first` to `last` of the compile pipeline on `module`.
  mlir::LogicalResult runPhases(mlir::ModuleOp module, CompilePhase first,
                                CompilePhase last, int64_t rank = -1);
  /// The partition phase (and, up to `last`, fusion) for `rank` on `module`
  /// (a copy the caller gives up).
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
  partition(mlir::OwningOpRef<mlir::ModuleOp> module, int64_t rank,
            CompilePhase last = CompilePhase::Fuse);

  std::string path;
  CompileOptions options;
  mlir::OwningOpRef<mlir::ModuleOp> globalModule;
  CompileResults results;
  /// With a pipeline: the stage assignment of the global module (for the
  /// report; dist-cut-pipeline-stages makes the same on its copy), and the
  /// copy holding one nested module per stage.
  std::optional<StageAssignment> stages;
  int64_t pipelineAxis = -1;
  mlir::OwningOpRef<mlir::ModuleOp> stagedModule;
  std::vector<std::vector<ScheduleAction>> stageSchedules;
  /// `shard` has run (it runs once).
  bool sharded = false;
};

} // namespace distopt

#endif // DISTOPT_DRIVER_COMPILATION_H
