//===- dist-opt.cpp - distopt's compiler driver -----------------*- C++ -*-===//
//
// Like mlir-opt on .mlir files with pass flags. Given a model (.onnx) or
// --mesh/--plan/--train, it compiles through distopt::Compilation (the
// passes of buildCompilePipeline) and prints the partitioned IR (or one
// rank's program, or the report); pass flags then run on the imported,
// annotated module instead.
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"
#include "distopt/Driver/Compilation.h"
#include "distopt/Driver/CompileFlags.h"
#include "distopt/Driver/ToolDiagnostics.h"
#include "distopt/InitAll.h"
#include "distopt/PipelineStages/TimelineSvg.h"
#include "distopt/Report/Report.h"
#include "distopt/Session/RankPrograms.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;
using namespace distopt;

static cl::OptionCategory &category = compileFlagsCategory();
static cl::opt<int64_t> emitRank(
    "dist-emit-rank",
    cl::desc("print the program rank N runs (shapes and offsets concrete) "
             "instead of the SPMD program"),
    cl::init(-1), cl::value_desc("N"), cl::cat(category));

enum class ReportFormat { None, Text, Summary, Json };
static cl::opt<ReportFormat> reportFormat(
    "report",
    cl::desc("print what the partitioned model communicates and "
             "costs instead of its IR (the IR still goes to -o)"),
    cl::ValueOptional, cl::init(ReportFormat::None),
    cl::values(clEnumValN(ReportFormat::Text, "", "text (default)"),
               clEnumValN(ReportFormat::Text, "text", "text"),
               clEnumValN(ReportFormat::Summary, "summary",
                          "text, one screen: collectives grouped by phase, "
                          "kind and axes; memory; the estimate"),
               clEnumValN(ReportFormat::Json, "json", "JSON")),
    cl::cat(category));
static cl::opt<std::string> pipelineSvg(
    "pipeline-svg",
    cl::desc("write the pipeline schedule's predicted timeline as an SVG"),
    cl::value_desc("file"), cl::cat(category));

static cl::opt<std::string> exportDir(
    "export-programs",
    cl::desc("also write every rank's program in distrt's format into this "
             "directory (rank-<N>.pb and package.pb; see "
             "docs/rank-program.md)"),
    cl::value_desc("dir"), cl::cat(category));

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

static int fail(const Twine &message) {
  errs() << "dist-opt: error: " << message << "\n";
  return 1;
}

static int writeOutputs(Compilation &c, raw_ostream &out) {
  auto program =
      emitRank >= 0 ? c.partitionForRank(emitRank) : c.partitionSpmd();
  if (failed(program))
    return 1;
  (*program)->print(out);
  out << "\n";
  return 0;
}

static int runModelFlow(int argc, char **argv, StringRef input,
                        StringRef output, mlir::DialectRegistry &registry) {
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ToolDiagnostics diagnostics(ctx, "dist-opt", debugDiagnosticsFlag());

  auto options = compileOptionsFromFlags(ctx);
  if (failed(options))
    return 1;
  // --plan auto: the search replaces the mesh and the plan with its choice
  // and hands over its compile of it (not to passes named on the command
  // line: they run on the annotated module, before sharding).
  auto chosen = autoplan::resolveAutoPlan(ctx, input, *options, errs());
  if (failed(chosen))
    return 1;
  autoplan::KeptCompile searched;
  if (*chosen && !hasPassFlags(argc, argv)) {
    auto taken = autoplan::takeWinnerCompile(**chosen, *options);
    if (failed(taken))
      return 1;
    searched = std::move(*taken);
  }
  std::shared_ptr<Compilation> compilation = searched.compilation;
  if (!compilation) {
    auto loaded = Compilation::load(ctx, input, *options);
    if (failed(loaded))
      return 1;
    compilation = std::move(*loaded);
  }
  Compilation &c = *compilation;
  std::string error;
  auto out = mlir::openOutputFile(output, &error);
  if (!out)
    return fail(error);

  if (hasPassFlags(argc, argv)) {
    // The passes named on the command line run on the annotated module.
    mlir::PassManager pm(&ctx);
    if (failed(mlir::MlirOptMainConfig::createFromCLOptions().setupPassPipeline(
            pm)) ||
        failed(pm.run(c.module())))
      return 1;
    c.module()->print(out->os());
    out->os() << "\n";
    out->keep();
    return 0;
  }

  if (emitRank >= c.numRanks())
    return fail("--dist-emit-rank=" + Twine(emitRank) + " but the mesh has " +
                Twine(c.numRanks()) + " devices");
  if (!pipelineSvg.empty() && !c.pipeline())
    return fail("--pipeline-svg needs a plan with a pipeline section and a "
                "mesh");
  if (failed(c.shard()))
    return 1;

  if (!exportDir.empty()) {
    auto programs = exportPrograms(c);
    if (!programs)
      return fail(toString(programs.takeError()));
    if (Error e = savePackage(*programs, exportDir))
      return fail(toString(std::move(e)));
  }
  if (reportFormat != ReportFormat::None || !pipelineSvg.empty()) {
    FailureOr<Report> report =
        searched.report ? FailureOr<Report>(*searched.report) : buildReport(c);
    if (failed(report))
      return 1;
    if (!pipelineSvg.empty()) {
      auto svg = mlir::openOutputFile(pipelineSvg, &error);
      if (!svg)
        return fail(error);
      const PipelineReport &p = *report->pipeline;
      writeTimelineSvg(p.timeline, p.stages, p.microbatches,
                       p.schedule + " schedule, " + std::to_string(p.stages) +
                           " stages, " + std::to_string(p.microbatches) +
                           " microbatches",
                       svg->os());
      svg->keep();
    }
    if (reportFormat == ReportFormat::Json)
      printReportJson(*report, outs());
    else if (reportFormat == ReportFormat::Text) {
      if (*chosen)
        autoplan::printAutoPlanReport(**chosen, outs());
      printReportText(*report, outs());
    } else if (reportFormat == ReportFormat::Summary) {
      if (*chosen)
        autoplan::printAutoPlanReport(**chosen, outs());
      printReportSummary(*report, outs());
    }
    // The report takes stdout; -o still receives the IR.
    if (reportFormat != ReportFormat::None && output == "-")
      return 0;
  }
  if (int status = writeOutputs(c, out->os()))
    return status;
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
      "  dist-opt model.onnx --mesh tp=2 --plan tp --report[=summary|json]\n"
      "      what the partitioned model communicates and costs, and why\n"
      "  dist-opt model.onnx --mesh dp=4,tp=8 --plan dp,tp --machine h100 "
      "--report\n"
      "      the same, costed for a cluster of H100s (or a calibrated "
      "profile)\n"
      "  dist-opt model.onnx --train train.json --plan auto --devices 8 "
      "--memory-budget 80GiB --machine h100 --emit-plan plan.yaml --report\n"
      "      the fastest predicted plan that fits; the candidates it beat\n"
      "  dist-opt annotated.mlir --dist-propagate-sharding\n"
      "      run single passes, as mlir-opt does\n",
      registry);
  bool modelFlow =
      StringRef(input).ends_with(".onnx") || meshOrPlanGiven() || emitRank >= 0;
  if (!modelFlow)
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, input, output, registry));
  return runModelFlow(argc, argv, input, output, registry);
}
