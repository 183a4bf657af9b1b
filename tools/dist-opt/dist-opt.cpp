//===- dist-opt.cpp - distopt's compiler driver -----------------*- C++ -*-===//
//
// Like mlir-opt on .mlir files with pass flags. Given a model (.onnx) or
// --mesh/--plan and no pass flags, it runs the whole default flow: import,
// plan, propagate, reshard, partition, and prints the partitioned IR.
//
//===----------------------------------------------------------------------===//
#include "distopt/InitAll.h"
#include "distopt/Pipeline/Compiler.h"
#include "distopt/Pipeline/Stages.h"
#include "distopt/Report/Report.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;
using namespace distopt;

static cl::OptionCategory category("distopt model options");
static cl::opt<std::string>
    meshSpec("mesh",
             cl::desc("device mesh, outer to inner axes, e.g. dp=2,tp=4"),
             cl::value_desc("name=size,..."), cl::cat(category));
static cl::list<std::string> plans(
    "plan",
    cl::desc("plan file (YAML/JSON) or presets: replicate, dp, fsdp, tp, sp "
             "(comma-separated, composable); repeatable"),
    cl::value_desc("file|presets"), cl::cat(category));
static cl::opt<std::string>
    dimSpec("dim",
            cl::desc("bind symbolic input dimensions, e.g. batch=2,seq=128"),
            cl::value_desc("name=size,..."), cl::cat(category));
static cl::opt<int64_t> emitRank(
    "dist-emit-rank",
    cl::desc("print the program rank N runs (shapes and offsets concrete) "
             "instead of the SPMD program"),
    cl::init(-1), cl::value_desc("N"), cl::cat(category));

enum class ReportFormat { None, Text, Json };
static cl::opt<ReportFormat> reportFormat(
    "report",
    cl::desc("print what the partitioned model communicates and "
             "costs instead of its IR (the IR still goes to -o)"),
    cl::ValueOptional, cl::init(ReportFormat::None),
    cl::values(clEnumValN(ReportFormat::Text, "", "text (default)"),
               clEnumValN(ReportFormat::Text, "text", "text"),
               clEnumValN(ReportFormat::Json, "json", "JSON")),
    cl::cat(category));
static cl::opt<std::string> costModelPath(
    "cost-model",
    cl::desc("link and device parameters for --report (YAML); default: "
             "NVLink-class links inside a node of 8, InfiniBand-class across"),
    cl::value_desc("file"), cl::cat(category));

static cl::opt<std::string> pipelineSvg(
    "pipeline-svg",
    cl::desc("write the pipeline schedule's predicted timeline as an SVG"),
    cl::value_desc("file"), cl::cat(category));

/// True if the command line names a pass or pass pipeline to run.
static bool hasPassFlags(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    if (!arg.starts_with("-"))
      continue;
    StringRef name = arg.ltrim('-').split('=').first;
    if (name == "pass-pipeline" || mlir::PassInfo::lookup(name) ||
        mlir::PassPipelineInfo::lookup(name))
      return true;
  }
  return false;
}

static int runModelFlow(int argc, char **argv, StringRef input,
                        StringRef output, mlir::DialectRegistry &registry) {
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &ctx);

  CompileOptions options;
  options.meshSpec = meshSpec;
  options.plans.assign(plans.begin(), plans.end());
  if (!dimSpec.empty()) {
    auto dims = parseDimSpec(dimSpec);
    if (!dims) {
      errs() << "dist-opt: error: " << toString(dims.takeError()) << "\n";
      return 1;
    }
    options.dims = std::move(*dims);
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModel(ctx, input, options);
  if (!module || failed(setMesh(*module, options.meshSpec)) ||
      failed(applyPlans(*module, options.plans)))
    return 1;

  std::string error;
  auto out = mlir::openOutputFile(output, &error);
  if (!out) {
    errs() << "dist-opt: error: " << error << "\n";
    return 1;
  }

  if (hasPassFlags(argc, argv)) {
    // The user's passes run on the imported, annotated module.
    std::string text;
    raw_string_ostream os(text);
    module->print(os);
    auto buffer = MemoryBuffer::getMemBufferCopy(text, input);
    if (failed(
            mlir::MlirOptMain(out->os(), std::move(buffer), registry,
                              mlir::MlirOptMainConfig::createFromCLOptions())))
      return 1;
    out->keep();
    return 0;
  }

  std::optional<PipelineReport> pipelineReport;
  CostModel costModel;
  if (!costModelPath.empty()) {
    auto parsed = parseCostModel(costModelPath);
    if (!parsed) {
      errs() << "dist-opt: error: " << toString(parsed.takeError()) << "\n";
      return 1;
    }
    costModel = std::move(*parsed);
  }

  auto cloneOf = [](mlir::ModuleOp m) {
    return mlir::OwningOpRef<mlir::ModuleOp>(cast<mlir::ModuleOp>(m->clone()));
  };
  // One module per pipeline stage (just the model without a pipeline).
  std::optional<PipelineConfig> pipeline = getPipelineConfig(*module);
  std::optional<StageAssignment> stages;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> stageModules;
  int64_t ppAxis = -1;
  mlir::OwningOpRef<mlir::ModuleOp> result, rank0;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> stagePrograms;
  if (!module->getOps<distopt::dist::MeshOp>().empty()) {
    auto mesh = *module->getOps<distopt::dist::MeshOp>().begin();
    if (emitRank >= numDevices(*module)) {
      errs() << "dist-opt: error: --dist-emit-rank=" << emitRank
             << " but the mesh has " << numDevices(*module) << " devices\n";
      return 1;
    }
    if (failed(shardModule(*module)))
      return 1;
    auto stageModuleFor = [&](int64_t rank) -> mlir::ModuleOp {
      if (!pipeline)
        return *module;
      int64_t s = rank >= 0 ? mesh.getCoords(rank)[ppAxis] : 0;
      if (!stageModules[s])
        stageModules[s] = extractStage(*module, *stages, *pipeline, s);
      return *stageModules[s];
    };
    if (pipeline) {
      ppAxis = mesh.getAxisIndex(pipeline->axis);
      auto assigned =
          assignStages(*module, *pipeline, mesh.getAxisSizes()[ppAxis]);
      if (failed(assigned))
        return 1;
      stages = std::move(*assigned);
      stageModules.resize(stages->numStages);
    }
    if (pipeline && emitRank < 0) {
      // The SPMD program of every stage, one after another.
      for (int64_t s = 0; s < stages->numStages; ++s) {
        if (!stageModules[s])
          stageModules[s] = extractStage(*module, *stages, *pipeline, s);
        auto program = partitionForRank(*stageModules[s], -1);
        if (!program)
          return 1;
        stagePrograms.push_back(std::move(program));
      }
    } else {
      result = partitionForRank(stageModuleFor(emitRank), emitRank);
      if (!result)
        return 1;
    }
    if (reportFormat != ReportFormat::None || !pipelineSvg.empty()) {
      rank0 = emitRank == 0 && result ? cloneOf(*result)
                                      : partitionForRank(stageModuleFor(0), 0);
      if (!rank0)
        return 1;
    }
    if (pipeline &&
        (reportFormat != ReportFormat::None || !pipelineSvg.empty())) {
      // Per stage: one representative rank's estimate for one microbatch.
      PipelineReport pr;
      pr.stages = stages->numStages;
      pr.microbatches = pipeline->microbatches;
      pr.schedule = pipeline->schedule;
      pr.stageParameterBytes = stages->stageParameterBytes;
      for (int64_t s = 0; s < pr.stages; ++s) {
        SmallVector<int64_t> coords(mesh.getAxisSizes().size(), 0);
        coords[ppAxis] = s;
        int64_t rank = mesh.getRank(coords);
        auto program = partitionForRank(stageModuleFor(rank), rank);
        if (!program)
          return 1;
        Report one = buildReport(*module, {*program}, costModel);
        pr.stageUs.push_back(one.computeUs + one.communicationUs);
        std::string first, last;
        for (size_t l = 0; l < stages->layers.size(); ++l)
          if (stages->stageOfLayer[l] == s) {
            if (first.empty())
              first = stages->layers[l];
            last = stages->layers[l];
          }
        pr.layersPerStage.push_back(first == last ? first
                                                  : first + " .. " + last);
      }
      auto schedule = buildSchedule(pipeline->schedule, pr.stages,
                                    pr.microbatches, /*withBackward=*/false);
      std::vector<double> none(pr.stages, 0.0);
      ScheduleTimeline tl = simulateSchedule(schedule, pr.stageUs, none, 0.0);
      pr.makespanUs = tl.makespan;
      pr.bubbleFraction = tl.bubbleFraction;
      pipelineReport = pr;
      if (!pipelineSvg.empty()) {
        std::string err;
        auto svg = mlir::openOutputFile(pipelineSvg, &err);
        if (!svg) {
          errs() << "dist-opt: error: " << err << "\n";
          return 1;
        }
        writeTimelineSvg(tl, pr.stages, pr.microbatches,
                         (pipeline->schedule + " schedule, " +
                          std::to_string(pr.stages) + " stages, " +
                          std::to_string(pr.microbatches) + " microbatches")
                             .c_str(),
                         svg->os());
        svg->keep();
      }
    }
  } else {
    if (!pipelineSvg.empty()) {
      errs() << "dist-opt: error: --pipeline-svg needs a plan with a pipeline "
                "section and a mesh\n";
      return 1;
    }
    result = cloneOf(*module);
    rank0 = cloneOf(*module);
  }

  if (reportFormat != ReportFormat::None) {
    std::function<bool(mlir::Operation *, int64_t)> stores;
    if (stages) {
      auto mesh = *module->getOps<distopt::dist::MeshOp>().begin();
      stores = [&, mesh](mlir::Operation *w, int64_t rank) mutable {
        int64_t s = mesh.getCoords(rank)[ppAxis];
        for (mlir::Operation *user : w->getUsers())
          if (stages->stageOf.lookup(user) == s)
            return true;
        return false;
      };
    }
    Report report = buildReport(*module, {*rank0}, costModel, stores);
    report.pipeline = pipelineReport;
    if (reportFormat == ReportFormat::Json)
      printReportJson(report, outs());
    else
      printReportText(report, outs());
    if (output == "-")
      return 0; // the report takes stdout; -o still receives the IR
  }
  if (result) {
    result->print(out->os());
    out->os() << "\n";
  }
  for (auto [s, program] : llvm::enumerate(stagePrograms)) {
    out->os() << "// ----- pipeline stage " << s << "\n";
    program->print(out->os());
    out->os() << "\n";
  }
  out->keep();
  return 0;
}

/// libLLVM registers its code generators' options too; --help should show
/// mlir-opt's general options, the passes and distopt's own.
static void hideBackendOptions() {
  static const StringRef keep[] = {"allow-unregistered-dialect",
                                   "dump-pass-pipeline",
                                   "emit-bytecode",
                                   "emit-bytecode-version",
                                   "elide-resource-data-from-bytecode",
                                   "irdl-file",
                                   "list-passes",
                                   "load-dialect-plugin",
                                   "load-pass-plugin",
                                   "log-actions-to",
                                   "no-implicit-module",
                                   "o",
                                   "output-split-marker",
                                   "pass-pipeline",
                                   "profile-actions-to",
                                   "run-reproducer",
                                   "show-dialects",
                                   "split-input-file",
                                   "verify-diagnostics",
                                   "verify-each",
                                   "verify-roundtrip",
                                   "help",
                                   "help-list",
                                   "version",
                                   "color"};
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *opt = entry.second;
    StringRef name = entry.first;
    bool general = llvm::all_of(opt->Categories, [](cl::OptionCategory *c) {
      return c == &cl::getGeneralCategory();
    });
    if (!general || name.starts_with("mlir-") || llvm::is_contained(keep, name))
      continue;
    opt->setHiddenFlag(cl::ReallyHidden);
  }
}

int main(int argc, char **argv) {
  hideBackendOptions();
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  registerAllPasses();
  mlir::registerTransformsPasses();
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv,
      "dist-opt: turn single-device model graphs into per-device programs\n\n"
      "  dist-opt model.onnx --mesh dp=2,tp=4 --plan dp,tp\n"
      "      import, plan, propagate, reshard and partition; print the SPMD "
      "IR\n"
      "  dist-opt model.onnx --mesh tp=2 --plan tp --dist-emit-rank=1\n"
      "      print the program rank 1 runs\n"
      "  dist-opt annotated.mlir --dist-propagate-sharding\n"
      "      run single passes, as mlir-opt does\n",
      registry);
  bool modelFlow = StringRef(input).ends_with(".onnx") || !meshSpec.empty() ||
                   !plans.empty() || emitRank >= 0;
  if (!modelFlow)
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, input, output, registry));
  return runModelFlow(argc, argv, input, output, registry);
}
