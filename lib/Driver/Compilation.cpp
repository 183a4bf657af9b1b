//===- Compilation.cpp - one model compiled for one mesh --------*- C++ -*-===//
#include "distopt/Driver/Compilation.h"
#include "distopt/Driver/SyntheticWeights.h"

#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Import/OnnxImporter.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
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
    importOptions.describeParameters = options.train.has_value();
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

OwningOpRef<ModuleOp> Compilation::importModel(MLIRContext &ctx,
                                               StringRef modelPath,
                                               const CompileOptions &options) {
  return loadModel(ctx, modelPath, options);
}

FailureOr<std::unique_ptr<Compilation>>
Compilation::load(MLIRContext &ctx, StringRef modelPath,
                  const CompileOptions &options) {
  std::unique_ptr<Compilation> c(new Compilation());
  c->path = modelPath.str();
  c->options = options;
  c->globalModule = loadModel(ctx, modelPath, options);
  return annotate(std::move(c));
}

FailureOr<std::unique_ptr<Compilation>>
Compilation::load(MLIRContext &ctx, ModuleOp model, StringRef modelPath,
                  const CompileOptions &options) {
  std::unique_ptr<Compilation> c(new Compilation());
  c->path = modelPath.str();
  c->options = options;
  c->globalModule = cast<ModuleOp>(model->clone());
  return annotate(std::move(c));
}

FailureOr<std::unique_ptr<Compilation>>
Compilation::annotate(std::unique_ptr<Compilation> c) {
  if (c->options.singleDevice)
    c->options.plan = Plan();
  if (!c->globalModule)
    return failure();
  ModuleOp module = *c->globalModule;
  if (failed(
          c->runPhases(module, CompilePhase::Annotate, CompilePhase::Annotate)))
    return failure();
  if (!c->options.workDir.empty() &&
      failed(materializeSyntheticWeights(module, c->options.workDir)))
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

FailureOr<std::unique_ptr<Compilation>>
Compilation::compile(MLIRContext &ctx, ModuleOp model, StringRef modelPath,
                     const CompileOptions &options) {
  FailureOr<std::unique_ptr<Compilation>> c =
      load(ctx, model, modelPath, options);
  if (failed(c) || failed((*c)->shard()))
    return failure();
  return c;
}

LogicalResult Compilation::runPhases(ModuleOp module, CompilePhase first,
                                     CompilePhase last, int64_t rank) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  pm.enableVerifier(options.verifyEachPass);
  CompilePipelineOptions phases;
  phases.first = first;
  phases.last = last;
  phases.rank = rank;
  phases.distributed = isDistributed();
  phases.results = &results;
  buildCompilePipeline(pm, options, phases);
  return pm.run(module);
}

LogicalResult Compilation::shard() {
  if (sharded)
    return success();
  sharded = true;
  ModuleOp module = *globalModule;
  dist::MeshOp m = mesh();
  if (failed(runPhases(module, CompilePhase::Shard, CompilePhase::Shard)))
    return failure();
  if (!m)
    return success();
  const PipelineSpec *pp = pipeline();
  if (!pp)
    return success();
  // Pipelining: a copy of the sharded model is cut into stages; each rank
  // runs the stage of its coordinate on the pipeline axis. The global module
  // stays as it is for the report.
  stagedModule = cast<ModuleOp>(module->clone());
  if (failed(
          runPhases(*stagedModule, CompilePhase::Stages, CompilePhase::Stages)))
    return failure();
  pipelineAxis = m.getAxisIndex(pp->axis);
  int64_t numStages = m.getAxisSizes()[pipelineAxis];
  // The same assignment dist-cut-pipeline-stages made, on the global module.
  FailureOr<StageAssignment> assigned = assignStages(module, *pp, numStages);
  if (failed(assigned))
    return failure();
  stages = std::move(*assigned);
  // Training compiled the schedule into each stage's program order;
  // inference runs the stage program once per forward action.
  stageSchedules = buildSchedule(pp->schedule, numStages, pp->microbatches,
                                 isTraining(), stages->chunks);
  return success();
}

LogicalResult Compilation::verifyTrial(bool verifyEachPass) {
  options.verifyEachPass = verifyEachPass;
  if (failed(mlir::verify(*globalModule)))
    return failure();
  return success(!stagedModule || succeeded(mlir::verify(*stagedModule)));
}

std::shared_ptr<const cost::MachineProfile> Compilation::machine() const {
  if (options.machine)
    return options.machine;
  static const auto fallback = std::make_shared<const cost::MachineProfile>(
      cost::defaultMachineProfile());
  return fallback;
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
  return stages ? stageModulesOf(*stagedModule)[stage] : module();
}

std::vector<ScheduleAction> Compilation::schedule(int64_t stage) const {
  return stages ? stageSchedules[stage] : std::vector<ScheduleAction>();
}

FailureOr<OwningOpRef<ModuleOp>>
Compilation::partition(OwningOpRef<ModuleOp> copy, int64_t rank,
                       CompilePhase last) {
  if (failed(runPhases(*copy, CompilePhase::Partition, last, rank)))
    return failure();
  return copy;
}

FailureOr<OwningOpRef<ModuleOp>>
Compilation::partitionForRank(int64_t rank, CompilePhase last) {
  if (!isDistributed())
    return partition(OwningOpRef<ModuleOp>(cast<ModuleOp>(module()->clone())),
                     rank, last);
  if (rank < 0 || rank >= numRanks())
    return emitError(module().getLoc())
           << "rank " << rank << " is not on the mesh, which has " << numRanks()
           << " devices";
  if (!stages)
    return partition(OwningOpRef<ModuleOp>(cast<ModuleOp>(module()->clone())),
                     rank, last);
  // Only the rank's stage is copied; dist-select-stage keeps it.
  OwningOpRef<ModuleOp> copy(ModuleOp::create(stagedModule->getLoc()));
  (*copy)->setAttrs((*stagedModule)->getAttrDictionary());
  copy->push_back(stageModule(stageOfRank(rank))->clone());
  return partition(std::move(copy), rank, last);
}

LogicalResult Compilation::fuse(ModuleOp partitioned, int64_t rank) {
  return runPhases(partitioned, CompilePhase::Fuse, CompilePhase::Fuse, rank);
}

FailureOr<OwningOpRef<ModuleOp>> Compilation::partitionSpmd() {
  ModuleOp input = stages ? *stagedModule : module();
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(input->clone()));
  return partition(std::move(copy), -1);
}
