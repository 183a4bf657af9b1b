//===- dist-opt.cpp - distopt's compiler driver -----------------*- C++ -*-===//
//
// Like mlir-opt on .mlir files with pass flags. Given a model (.onnx) or
// --mesh/--plan and no pass flags, it runs the whole default flow: import,
// plan, propagate, reshard, partition, and prints the partitioned IR.
//
//===----------------------------------------------------------------------===//
#include "distopt/InitAll.h"
#include "distopt/Pipeline/Compiler.h"

#include "dist/IR/DistOps.h"

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
static cl::opt<std::string> meshSpec(
    "mesh", cl::desc("device mesh, outer to inner axes, e.g. dp=2,tp=4"),
    cl::value_desc("name=size,..."), cl::cat(category));
static cl::list<std::string> plans(
    "plan",
    cl::desc("plan file (YAML/JSON) or presets: replicate, dp, fsdp, tp, sp "
             "(comma-separated, composable); repeatable"),
    cl::value_desc("file|presets"), cl::cat(category));
static cl::opt<std::string> dimSpec(
    "dim", cl::desc("bind symbolic input dimensions, e.g. batch=2,seq=128"),
    cl::value_desc("name=size,..."), cl::cat(category));
static cl::opt<int64_t> emitRank(
    "dist-emit-rank",
    cl::desc("print the program rank N runs (shapes and offsets concrete) "
             "instead of the SPMD program"),
    cl::init(-1), cl::value_desc("N"), cl::cat(category));

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
    if (failed(mlir::MlirOptMain(out->os(), std::move(buffer), registry,
                                 mlir::MlirOptMainConfig::createFromCLOptions())))
      return 1;
    out->keep();
    return 0;
  }

  mlir::OwningOpRef<mlir::ModuleOp> result;
  if (!module->getOps<distopt::dist::MeshOp>().empty()) {
    if (emitRank >= numDevices(*module)) {
      errs() << "dist-opt: error: --dist-emit-rank=" << emitRank
             << " but the mesh has " << numDevices(*module) << " devices\n";
      return 1;
    }
    if (failed(shardModule(*module)))
      return 1;
    result = partitionForRank(*module, emitRank);
    if (!result)
      return 1;
  } else {
    result = std::move(module);
  }
  result->print(out->os());
  out->os() << "\n";
  out->keep();
  return 0;
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  registerAllPasses();
  mlir::registerTransformsPasses();
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv,
      "dist-opt: turn single-device model graphs into per-device programs\n\n"
      "  dist-opt model.onnx --mesh dp=2,tp=4 --plan dp,tp\n"
      "      import, plan, propagate, reshard and partition; print the SPMD IR\n"
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
