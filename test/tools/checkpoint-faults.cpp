//===- checkpoint-faults.cpp - checkpoint saves that fail on request ------===//
//
// A test tool (not installed): trains a training case like dist-train and
// saves checkpoints through a CheckpointFiles that makes writing one rank's
// file fail (--fail-writing-rank R) or kills the process with SIGKILL in its
// Nth save, after it wrote its first data file (--kill-in-save N). The tests
// of an interrupted or failed save (test/lit/train/checkpoint-kill.test,
// checkpoint-mpi.test) run it; shipped code injects no faults.
//
//===----------------------------------------------------------------------===//
#include "distopt/Driver/CompileFlags.h"
#include "distopt/Driver/ToolDiagnostics.h"
#include "distopt/InitAll.h"
#include "distopt/Session/RunFlags.h"
#include "distopt/Trainer/Trainer.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cstdio>

using namespace llvm;
using namespace distopt;

static cl::OptionCategory &category = compileFlagsCategory();
static cl::opt<std::string> caseDir(cl::Positional, cl::desc("<case dir>"),
                                    cl::cat(category));
static cl::opt<int64_t> steps("steps", cl::desc("steps to train"), cl::init(-1),
                              cl::cat(category));
static cl::opt<std::string> checkpointDir("save-checkpoint",
                                          cl::desc("checkpoint directory"),
                                          cl::cat(category));
static cl::opt<int64_t>
    checkpointEvery("checkpoint-every",
                    cl::desc("save every N steps (else at the end)"),
                    cl::init(0), cl::cat(category));
static cl::opt<int> killInSave(
    "kill-in-save",
    cl::desc("SIGKILL this process in its Nth save, after its first file"),
    cl::init(0), cl::cat(category));
static cl::opt<int>
    failWritingRank("fail-writing-rank",
                    cl::desc("make writing rank R's checkpoint file fail"),
                    cl::init(-1), cl::cat(category));

namespace {
/// The POSIX file operations, with the faults the flags ask for.
class FaultyFiles : public CheckpointFiles {
public:
  int save = 0; // the save in progress, from 1

  Error writeFile(const std::string &path, ArrayRef<StringRef> parts) override {
    StringRef name = sys::path::filename(path);
    char failing[64];
    std::snprintf(failing, sizeof failing, "rank-%05d.safetensors",
                  failWritingRank.getValue());
    if (failWritingRank >= 0 && name == failing)
      return createStringError(
          "cannot write " + path +
          ": failure injected by checkpoint-faults --fail-writing-rank");
    if (Error e = CheckpointFiles::writeFile(path, parts))
      return e;
    if (save == killInSave && name.starts_with("rank-"))
      std::raise(SIGKILL);
    return Error::success();
  }
};
} // namespace

static int failWith(const Twine &message) {
  errs() << ("checkpoint-faults: error: " + message + "\n").str();
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "checkpoint saves that fail\n");
  if (caseDir.empty() || checkpointDir.empty())
    return failWith("give a case directory and --save-checkpoint <dir>");
  auto settings = runSettingsFromFlags(1);
  if (!settings)
    return failWith(toString(settings.takeError()));
  auto group = initBackend(settings->backend, argc, argv);
  if (!group)
    return failWith(toString(group.takeError()));
  bool root = group->rank == 0;

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ToolDiagnostics diagnostics(ctx, "checkpoint-faults", false);
  auto options = compileOptionsFromFlags(ctx);
  if (failed(options))
    return 1;
  SmallString<256> model(caseDir), config(caseDir);
  sys::path::append(model, "model.onnx");
  sys::path::append(config, "train.json");
  auto train = parseTrainConfig(&ctx, config);
  if (failed(train))
    return 1;
  options->train = std::move(*train);
  SmallString<128> workDir;
  if (std::error_code ec =
          sys::fs::createUniqueDirectory("checkpoint-faults", workDir))
    return failWith("cannot create a work directory: " + ec.message());
  scope_exit removeWorkDir([&] { sys::fs::remove_directories(workDir); });
  options->workDir = workDir.str().str();

  TrainerOptions trainerOptions;
  trainerOptions.run = *settings;
  trainerOptions.dataDir = caseDir;
  auto trainer = Trainer::create(ctx, model, *options, trainerOptions);
  if (!trainer)
    return failWith(toString(trainer.takeError()));
  FaultyFiles files;
  CheckpointMeta run;
  run.mesh = meshFlagText();
  run.plan = planFlagText();
  run.configFile = config.str().str();
  auto save = [&](int64_t done) -> int {
    ++files.save;
    if (Error e = (*trainer)->saveCheckpoint(checkpointDir, done, run, nullptr,
                                             &files))
      return failWith(toString(std::move(e)));
    if (root)
      outs() << "saved " << checkpointDir << " at step " << done << "\n";
    outs().flush();
    return 0;
  };
  int64_t total = steps >= 0 ? steps.getValue() : (*trainer)->config().steps;
  for (int64_t k = 0; k < total; ++k) {
    auto r = (*trainer)->step(k);
    if (!r)
      return failWith(toString(r.takeError()));
    if (root)
      outs() << "step " << k << ": loss " << format("%.7g", r->loss) << "\n";
    outs().flush();
    if (checkpointEvery > 0 && (k + 1) % checkpointEvery == 0)
      if (int status = save(k + 1))
        return status;
  }
  if (checkpointEvery == 0 || total % checkpointEvery != 0)
    return save(total);
  return 0;
}
