//===- Compilation.h - one model compiled for one mesh ----------*- C++ -*-===//
//
// The one place the compile steps are put together, for every tool: load a
// model (.onnx through the importer, .mlir as it is), declare the mesh,
// parse and apply the plans, shard the global module (propagate, insert
// reshards), cut it into pipeline stages, and partition it for any rank.
// dist-opt, dist-run and the report read a Compilation; they do their own
// input and output and nothing else.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DRIVER_COMPILATION_H
#define DISTOPT_DRIVER_COMPILATION_H

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Import/OnnxImporter.h"
#include "distopt/PipelineStages/Schedule.h"
#include "distopt/PipelineStages/StageCut.h"
#include "distopt/Plan/Plan.h"
#include "distopt/Training/TrainConfig.h"
#include "distopt/Training/TrainingStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  /// Drop every mesh, annotation and sharding the model carries: compile it
  /// for one device (the reference a distributed run is checked against).
  bool singleDevice = false;
  /// Values of ONNX graph inputs the importer may read where it needs them
  /// (a test-harness specialisation; see ImportOptions::inputValues).
  llvm::StringMap<InputValues> inputValues;
  /// Where hand-written models' synthetic weights are written (see
  /// SyntheticWeights.h); empty: the system's temporary directory.
  std::string workDir;
};

/// Parses "name=value,..." dimension bindings.
llvm::Expected<llvm::StringMap<int64_t>> parseDimSpec(llvm::StringRef spec);

class Compilation {
public:
  /// Loads the model, declares the mesh and applies the plans: the annotated
  /// module, before propagation (what dist-opt hands to passes named on its
  /// command line). Failures are diagnostics on `ctx`.
  static mlir::FailureOr<std::unique_ptr<Compilation>>
  load(mlir::MLIRContext &ctx, llvm::StringRef modelPath,
       const CompileOptions &options);

  /// `load`, then `shard`.
  static mlir::FailureOr<std::unique_ptr<Compilation>>
  compile(mlir::MLIRContext &ctx, llvm::StringRef modelPath,
          const CompileOptions &options);

  /// Propagates shardings, inserts reshards and cuts pipeline stages (whose
  /// send/receive pairing is checked here, before any program exists).
  mlir::LogicalResult shard();

  /// The global module: annotated after `load`, sharded after `shard`.
  mlir::ModuleOp module() { return *globalModule; }
  const Plan &plan() const { return options.plan; }
  const PlanFindings &planFindings() const { return findings; }
  /// What the training step trains (empty for a forward compile).
  const TrainingStepInfo &training() const { return trainingInfo; }
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
  /// Stage `stage`'s module (the global module without a pipeline).
  mlir::ModuleOp stageModule(int64_t stage);
  /// Each stage's order of microbatches (empty without a pipeline).
  std::vector<ScheduleAction> schedule(int64_t stage) const;

  /// The program `rank` runs: its stage, partitioned for it, with every
  /// shape and offset concrete.
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
  partitionForRank(int64_t rank);
  /// The SPMD program of a stage, shared by its ranks (uneven dimensions
  /// print as `?`).
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
  partitionStage(int64_t stage);

private:
  Compilation() = default;

  std::string path;
  CompileOptions options;
  mlir::OwningOpRef<mlir::ModuleOp> globalModule;
  PlanFindings findings;
  TrainingStepInfo trainingInfo;
  std::optional<StageAssignment> stages;
  int64_t pipelineAxis = -1;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> stageModules;
  std::vector<std::vector<ScheduleAction>> stageSchedules;
};

} // namespace distopt

#endif // DISTOPT_DRIVER_COMPILATION_H
