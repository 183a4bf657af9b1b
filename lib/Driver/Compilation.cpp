//===- Compilation.cpp - one model compiled for one mesh --------*- C++ -*-===//
#include "distopt/Driver/Compilation.h"
#include "distopt/Driver/SyntheticWeights.h"
#include "distopt/PipelineStages/StageOrder.h"
#include "distopt/Training/RegatherParameters.h"

#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Import/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace distopt;

llvm::Expected<llvm::StringMap<int64_t>> distopt::parseDimSpec(StringRef spec) {
  llvm::StringMap<int64_t> dims;
  SmallVector<StringRef> parts;
  spec.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    auto [name, value] = part.trim().split('=');
    int64_t n = 0;
    if (name.trim().empty() || value.trim().getAsInteger(10, n) || n <= 0)
      return llvm::createStringError("bad dimension binding '" + part.str() +
                                     "' in --dim: expected name=positive-size, "
                                     "e.g. --dim batch=2,seq=128");
    dims[name.trim()] = n;
  }
  return dims;
}

/// Loads `.onnx` through the importer, anything else as MLIR.
static OwningOpRef<ModuleOp> loadModel(MLIRContext &ctx, StringRef path,
                                       const CompileOptions &options) {
  if (path.ends_with(".onnx")) {
    ImportOptions importOptions;
    for (auto &entry : options.dims)
      importOptions.dims[entry.getKey()] = entry.getValue();
    importOptions.inputValues = options.inputValues;
    return importOnnxModel(ctx, path, importOptions);
  }
  if (!options.dims.empty()) {
    emitError(UnknownLoc::get(&ctx))
        << "--dim binds dimensions of ONNX models; " << path
        << " is MLIR, whose shapes are fixed";
    return nullptr;
  }
  ParserConfig config(&ctx);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, config);
  if (module && !(*module)->hasAttr(nn::kModelPathAttr))
    (*module)->setAttr(nn::kModelPathAttr, StringAttr::get(&ctx, path));
  return module;
}

FailureOr<std::unique_ptr<Compilation>>
Compilation::load(MLIRContext &ctx, StringRef modelPath,
                  const CompileOptions &options) {
  std::unique_ptr<Compilation> c(new Compilation());
  c->path = modelPath.str();
  c->options = options;
  if (options.singleDevice)
    c->options.plan = Plan();
  c->globalModule = loadModel(ctx, modelPath, options);
  if (!c->globalModule)
    return failure();
  ModuleOp module = *c->globalModule;
  if (options.singleDevice)
    stripDistribution(module);
  if (options.train) {
    // Windows of fused projections become parameters of their own before
    // differentiating, as a plan would split them.
    splitFusedProjections(module);
    // A pipeline's microbatches are slices of the exported batch.
    int64_t split = 1;
    if (const PipelineSpec *pp = c->options.plan.pipeline()) {
      split = pp->microbatches;
      if (failed(
              splitBatch(module, split,
                         pp->loc ? Location(pp->loc) : UnknownLoc::get(&ctx))))
        return failure();
    }
    FailureOr<TrainingStepInfo> step =
        buildTrainingStep(module, *options.train, split);
    if (failed(step))
      return failure();
    c->trainingInfo = std::move(*step);
  }
  if (!options.singleDevice) {
    if (failed(declareMesh(module, options.meshSpec)))
      return failure();
    FailureOr<PlanFindings> findings = applyPlan(module, c->options.plan);
    if (failed(findings))
      return failure();
    c->findings = std::move(*findings);
  }
  if (!options.workDir.empty() &&
      failed(materializeSyntheticWeights(module, options.workDir)))
    return failure();
  return c;
}

FailureOr<std::unique_ptr<Compilation>>
Compilation::compile(MLIRContext &ctx, StringRef modelPath,
                     const CompileOptions &options) {
  FailureOr<std::unique_ptr<Compilation>> c = load(ctx, modelPath, options);
  if (failed(c) || failed((*c)->shard()))
    return failure();
  return c;
}

LogicalResult Compilation::shard() {
  ModuleOp module = *globalModule;
  dist::MeshOp m = mesh();
  if (!m)
    return success();
  PassManager propagate(module.getContext());
  propagate.addPass(dist::createDistPropagateSharding());
  if (failed(propagate.run(module)))
    return failure();
  // A training step's updates come out as their parameters and states are
  // laid out, so the runtime writes them back in place.
  if (isTraining())
    tieUpdatesToState(module);
  PassManager pm(module.getContext());
  pm.addPass(dist::createDistInsertReshards());
  pm.addPass(createCSEPass());
  if (failed(pm.run(module)))
    return failure();
  // Split parameters are gathered again for backward (after CSE, which
  // would merge the two gathers back into one).
  if (isTraining())
    regatherParametersForBackward(module);

  const PipelineSpec *pp = pipeline();
  if (!pp)
    return success();
  // Pipelining: cut the sharded model into stages; each rank runs the stage
  // of its coordinate on the pipeline axis.
  pipelineAxis = m.getAxisIndex(pp->axis);
  int64_t numStages = m.getAxisSizes()[pipelineAxis];
  Location ppLoc = pp->loc ? Location(pp->loc) : module.getLoc();
  if (pp->virtualStages > 1 && !isTraining())
    return emitError(ppLoc)
           << "pipeline.virtual_stages: interleaved schedules order forward "
              "and backward passes; they apply to training (--train)";
  if (pp->schedule == "interleaved-1f1b" && isTraining() &&
      pp->microbatches % numStages != 0)
    return emitError(ppLoc)
           << "pipeline: interleaved-1f1b runs microbatches in groups of "
              "the "
           << numStages << " stages; " << pp->microbatches
           << " microbatches do not divide into them";
  FailureOr<StageAssignment> assigned = assignStages(module, *pp, numStages);
  if (failed(assigned))
    return failure();
  stages = std::move(*assigned);
  // Training compiles the schedule into each stage's program order;
  // inference runs the stage program once per forward action.
  stageSchedules = buildSchedule(pp->schedule, numStages, pp->microbatches,
                                 isTraining(), stages->chunks);
  SmallVector<ModuleOp> modules;
  for (int64_t s = 0; s < numStages; ++s) {
    stageModules.push_back(
        extractStage(module, *stages, *pp, s,
                     isTraining() ? ArrayRef<ScheduleAction>(stageSchedules[s])
                                  : ArrayRef<ScheduleAction>()));
    modules.push_back(*stageModules.back());
  }
  // Every stage receives from a peer in the order the peer sends.
  alignReceives(modules);
  if (isTraining() && failed(verifyStageProgress(modules)))
    return failure();
  return verifyStagePairing(modules);
}

std::string Compilation::weightDirectory() {
  StringRef p = path;
  if (auto attr = module()->getAttrOfType<StringAttr>(nn::kModelPathAttr))
    p = attr.getValue();
  SmallString<256> dir(llvm::sys::path::parent_path(p));
  if (dir.empty())
    dir = ".";
  llvm::sys::fs::make_absolute(dir);
  return dir.str().str();
}

dist::MeshOp Compilation::mesh() {
  auto meshes = module().getOps<dist::MeshOp>();
  return meshes.empty() ? dist::MeshOp() : *meshes.begin();
}

int64_t Compilation::numRanks() {
  dist::MeshOp m = mesh();
  return m ? m.getNumDevices() : 1;
}

int64_t Compilation::stageOfRank(int64_t rank) {
  if (!stages)
    return 0;
  return mesh().getCoords(rank)[pipelineAxis];
}

int64_t Compilation::representativeRank(int64_t stage) {
  if (!stages)
    return 0;
  SmallVector<int64_t> coords(mesh().getAxisSizes().size(), 0);
  coords[pipelineAxis] = stage;
  return mesh().getRank(coords);
}

ModuleOp Compilation::stageModule(int64_t stage) {
  return stages ? *stageModules[stage] : module();
}

std::vector<ScheduleAction> Compilation::schedule(int64_t stage) const {
  return stages ? stageSchedules[stage] : std::vector<ScheduleAction>();
}

/// A copy of a sharded module, partitioned for `rank` (-1: the SPMD
/// program), with collectives.
static FailureOr<OwningOpRef<ModuleOp>> partitionCopy(ModuleOp sharded,
                                                      int64_t rank) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(sharded->clone()));
  PassManager pm(sharded.getContext());
  dist::DistPartitionOptions partition;
  partition.rank = rank;
  pm.addPass(dist::createDistPartition(partition));
  dist::DistReshardToCollectivesOptions lower;
  lower.rank = rank;
  pm.addPass(dist::createDistReshardToCollectives(lower));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(*copy)))
    return failure();
  return copy;
}

FailureOr<OwningOpRef<ModuleOp>> Compilation::partitionForRank(int64_t rank) {
  if (!isDistributed()) {
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module()->clone()));
    return copy;
  }
  if (rank < 0 || rank >= numRanks())
    return emitError(module().getLoc())
           << "rank " << rank << " is not on the mesh, which has " << numRanks()
           << " devices";
  return partitionCopy(stageModule(stageOfRank(rank)), rank);
}

FailureOr<OwningOpRef<ModuleOp>> Compilation::partitionStage(int64_t stage) {
  if (!isDistributed()) {
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module()->clone()));
    return copy;
  }
  return partitionCopy(stageModule(stage), -1);
}
