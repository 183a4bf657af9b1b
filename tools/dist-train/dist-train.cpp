//===- dist-train.cpp - train a model on a mesh -----------------*- C++ -*-===//
//
// Compiles a forward ONNX model and a training config into one training
// step per rank (distopt::Trainer), runs it step after step with the
// parameters and optimizer states resident on the ranks, and prints one
// line per step. --train-test checks a training case against PyTorch's
// losses and trained outputs.
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"
#include "distopt/Check/TensorComparison.h"
#include "distopt/Check/TrainedModelRun.h"
#include "distopt/Checkpoint/Checkpoint.h"
#include "distopt/Data/TensorProtoFile.h"
#include "distopt/Driver/CompileFlags.h"
#include "distopt/Driver/ToolDiagnostics.h"
#include "distopt/InitAll.h"
#include "distopt/OnnxWriter/FloatDtype.h"
#include "distopt/OnnxWriter/TrainedModelWriter.h"
#include "distopt/Session/Profile.h"
#include "distopt/Session/RunFlags.h"
#include "distopt/Trainer/Evaluator.h"
#include "distopt/Trainer/PlanTrial.h"
#include "distopt/Trainer/ProgressLog.h"
#include "distopt/Trainer/StopRequest.h"
#include "distopt/Trainer/Trainer.h"
#include "distopt/Training/TrainingStep.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
using namespace distopt;

static cl::OptionCategory &category = compileFlagsCategory();
static cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::cat(category));
static cl::opt<std::string> trainTest(
    "train-test",
    cl::desc("run a training case (model.onnx, train.json, step_K/, probe/) "
             "and compare each step's loss and the trained model's outputs "
             "with PyTorch's; prints PASS or FAIL"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<int64_t>
    steps("steps",
          cl::desc("train until this many steps are done (default: the "
                   "config's); with --resume, counted from step 0 too"),
          cl::init(-1), cl::cat(category));
static cl::opt<std::string>
    dataDir("data", cl::desc("batches: <dir>/step_K/input_I.pb and labels.pb"),
            cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string>
    tokens("tokens",
           cl::desc("flat uint16 token file (nanoGPT .bin): next-token "
                    "batches of --batch rows of --seq tokens"),
           cl::value_desc("file"), cl::cat(category));
static cl::opt<int64_t>
    batch("batch",
          cl::desc("rows per batch (--tokens): binds the model's symbolic "
                   "batch dimension; a fixed one must equal it"),
          cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    seqLength("seq",
              cl::desc("tokens per row (--tokens): binds the model's symbolic "
                       "sequence dimension; a fixed one must equal it"),
              cl::init(0), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("seed of random batches"),
                              cl::init(0), cl::cat(category));
static cl::opt<std::string> shuffleSeed(
    "shuffle",
    cl::desc("with --tokens: draw each row's window at random from this "
             "seed (reproducible, the same on every mesh and after a "
             "resume) instead of reading the file in order"),
    cl::value_desc("seed"), cl::cat(category));
static cl::opt<bool> mergeLora(
    "merge-lora",
    cl::desc("with --save: fold LoRA adapters (PEFT's base_layer / lora_A / "
             "lora_B) into their base weights, W + scale * B @ A"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string>
    saveModel("save",
              cl::desc("write the trained model as ONNX (parameters gathered "
                       "from every rank)"),
              cl::value_desc("out.onnx"), cl::cat(category));
static cl::opt<std::string> saveDtypeName(
    "save-dtype",
    cl::desc("with --save: write the model in this dtype (f32, bf16 or f16: "
             "parameters rounded to nearest even, the graph's float tensors "
             "converted); default: each parameter in its initializer's "
             "dtype"),
    cl::value_desc("dtype"), cl::cat(category));
static cl::opt<std::string> checkpointDir(
    "save-checkpoint",
    cl::desc("save the sharded training state (parameters, optimizer "
             "states, step) into this directory at the end (each rank writes "
             "its own pieces; see docs/checkpoints.md)"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<int64_t> checkpointEvery(
    "checkpoint-every",
    cl::desc("also save into the --save-checkpoint directory every N steps, "
             "replacing the previous checkpoint atomically"),
    cl::init(0), cl::value_desc("N"), cl::cat(category));
static cl::opt<std::string>
    resume("resume",
           cl::desc("load a checkpoint (saved on any mesh and plan) and "
                    "continue from its step"),
           cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> logFile(
    "log-file",
    cl::desc("also write each step's numbers (step, loss, lr, grad_norm, ms, "
             "throughput, elapsed) as one JSON object per line; a resumed "
             "run appends"),
    cl::value_desc("run.jsonl"), cl::cat(category));
static cl::opt<std::string> evalTokens(
    "eval-tokens",
    cl::desc("a held-out token file: the loss of the model trained so far on "
             "its first --eval-batches batches, with the forward model only, "
             "on the same mesh and plan"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<int64_t>
    evalEvery("eval-every",
              cl::desc("with --eval-tokens: evaluate before the first step "
                       "and after every N steps (default: at the end only)"),
              cl::init(0), cl::value_desc("N"), cl::cat(category));
static cl::opt<int64_t>
    evalBatches("eval-batches",
                cl::desc("with --eval-tokens: batches per evaluation "
                         "(default 8)"),
                cl::init(8), cl::value_desc("K"), cl::cat(category));
static cl::opt<int> bench("bench",
                          cl::desc("time N steps after one warm-up and print "
                                   "median_ms and min_ms"),
                          cl::init(0), cl::cat(category));

static int failWith(const Twine &message) {
  // One write, so the lines of several mpirun processes do not interleave.
  errs() << ("dist-train: error: " + message + "\n").str();
  return 1;
}

/// Compares the case's reference losses with ours (relative 1e-4) and the
/// trained model's probe outputs with torch's (atol 1e-3 + rtol 1e-3), or
/// as close as the case's `tolerance` says; an f16 case's loss scales and
/// skipped steps exactly.
static int checkCase(Trainer &trainer, mlir::MLIRContext &ctx, int64_t first,
                     ArrayRef<StepResult> steps,
                     const std::vector<distrt::NamedTensor> &state,
                     StringRef workDir, int threads) {
  // steps[i] is step first + i's (a resumed run starts late).
  const TrainConfig &config = trainer.config();
  const std::vector<double> &want = config.losses;
  const CaseTolerance &tol = config.tolerance;
  std::vector<double> losses;
  for (const StepResult &r : steps)
    losses.push_back(r.loss);
  for (size_t i = 0; i < losses.size() && first + i < want.size(); ++i) {
    size_t k = first + i;
    double rel =
        std::fabs(losses[i] - want[k]) / std::max(std::fabs(want[k]), 1e-12);
    if (!(rel <= tol.lossRtol)) {
      outs() << "FAIL " << trainTest << ": step " << k << " loss "
             << format("%.7g", losses[i]) << ", torch "
             << format("%.7g", want[k]) << " (relative difference "
             << format("%.2g", rel) << ")\n";
      return 1;
    }
    // An f16 case: the same scale and the same skipped steps, exactly.
    if (k < config.lossScales.size() &&
        steps[i].lossScale != config.lossScales[k]) {
      outs() << "FAIL " << trainTest << ": step " << k << " ran with loss "
             << "scale " << format("%g", steps[i].lossScale) << ", torch's "
             << format("%g", config.lossScales[k]) << "\n";
      return 1;
    }
    // A mixture of experts' dropped fraction counts tokens: a token routed
    // or kept differently from torch changes it by a whole token's share.
    if (k < config.droppedTokens.size() &&
        !(steps[i].droppedTokens &&
          std::fabs(*steps[i].droppedTokens - config.droppedTokens[k]) <=
              1e-6)) {
      outs() << "FAIL " << trainTest << ": step " << k << " dropped tokens ";
      if (steps[i].droppedTokens)
        outs() << format("%.7g", *steps[i].droppedTokens);
      else
        outs() << "not reported (the model has no output '"
               << kDroppedTokensOutput << "')";
      outs() << ", torch " << format("%.7g", config.droppedTokens[k]) << "\n";
      return 1;
    }
    if (k < config.skipped.size() &&
        steps[i].skipped != (config.skipped[k] != 0)) {
      outs() << "FAIL " << trainTest << ": step " << k << " was "
             << (steps[i].skipped ? "skipped" : "not skipped")
             << ", torch's was "
             << (steps[i].skipped ? "not" : "skipped") << "\n";
      return 1;
    }
  }
  SmallString<256> probe(trainTest);
  sys::path::append(probe, "probe");
  std::string which = losses.empty() ? std::string("0 steps (none ran)")
                      : first == 0
                          ? std::to_string(losses.size()) + " step(s)"
                          : "steps " + std::to_string(first) + ".." +
                                std::to_string(first + losses.size() - 1);
  std::string matched = config.droppedTokens.empty()
                            ? "losses"
                            : "losses and dropped-token fractions";
  if (first + losses.size() < want.size() || !sys::fs::is_directory(probe)) {
    outs() << "PASS " << trainTest << ": " << which << " match torch's "
           << matched << "\n";
    return 0;
  }
  SmallString<256> model(trainTest);
  sys::path::append(model, "model.onnx");
  auto got = runTrainedModel(ctx, model, state, probe, workDir, threads);
  if (!got)
    return failWith("the trained model: " + toString(got.takeError()));
  double maxAbs = 0;
  for (size_t i = 0; i < got->size(); ++i) {
    SmallString<256> path(probe);
    sys::path::append(path, "output_" + std::to_string(i) + ".pb");
    if (!sys::fs::exists(path))
      continue;
    auto expected = readTensorProto(path);
    if (!expected)
      return failWith(toString(expected.takeError()));
    Comparison c = compareTensors((*got)[i].tensor, *expected, tol.probeRtol,
                                  tol.probeAtol);
    maxAbs = std::max(maxAbs, c.maxAbs);
    if (!c.ok) {
      outs() << "FAIL " << trainTest << ": trained output " << i << " ('"
             << (*got)[i].name << "') on probe/: " << c.message << "\n";
      return 1;
    }
  }
  outs() << "PASS " << trainTest << ": " << which << " match torch's "
         << matched << "; trained outputs on probe/ match, "
            "max abs diff "
         << format("%.3g", maxAbs) << "\n";
  return 0;
}

/// One line per rank this process ran: bytes and the save's or load's time.
/// Written at once, so mpirun processes' lines do not interleave.
static void printCheckpointIO(raw_ostream &os, StringRef verb,
                              const CheckpointIO &io) {
  std::string text;
  raw_string_ostream s(text);
  for (const std::string &stale : io.removedStale)
    s << "dist-train: checkpoint: removed " << stale
      << ", left by a run that died while saving\n";
  for (const auto &[rank, bytes] : io.bytesPerRank)
    s << "dist-train: checkpoint: rank " << rank << " " << verb << " " << bytes
      << " bytes\n";
  s << "dist-train: checkpoint: ";
  if (io.indexBytes)
    s << verb << " index.json (" << io.indexBytes << " bytes); ";
  s << format("%.3f", io.seconds) << " s\n";
  os << s.str();
  os.flush();
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  auto threads = takeThreadsFlag(argc, argv);
  if (!threads)
    return failWith(toString(threads.takeError()));
  cl::HideUnrelatedOptions(category);
  const std::string overview =
      std::string(
          "dist-train: compile a model's training step for a device mesh and "
          "train it\n\n"
          "  dist-train model.onnx --train train.json --mesh dp=2,tp=2 --plan "
          "zero1,tp --steps 100 --tokens data.bin --batch 8 --seq 128\n"
          "  dist-train --train-test <case dir> --mesh dp=2 --plan fsdp\n"
          "  dist-train model.onnx --train train.json --plan auto --devices 2 "
          "--memory-budget 1GiB   (the fastest predicted plan that fits)\n"
          "  mpirun -np 4 dist-train ... --backend mpi\n"
          "  dist-train model.onnx --train train.json --mesh pp=2,dp=2 --plan "
          "pp.yaml ...   "
          "(pipeline: a plan with pipeline: {split: \"h.*\", microbatches: 8, "
          "schedule: 1f1b})\n"
          "  dist-train model.onnx --train train.json --mesh tp=2 --plan tp "
          "--steps 100 --save-checkpoint ck --checkpoint-every 10\n"
          "  dist-train model.onnx --train train.json --mesh dp=4 --plan fsdp "
          "--resume ck --steps 200\n"
          "  dist-train model.onnx --train train.json --resume ck --steps 0 "
          "--save trained.onnx   (export a checkpoint as ONNX)\n\n") +
      kRunHelpTail;
  cl::ParseCommandLineOptions(argc, argv, overview);

  TrainerOptions trainer;
  auto flags = runSettingsFromFlags(*threads);
  if (!flags)
    return failWith(toString(flags.takeError()));
  trainer.run = *flags;
  auto group = initBackend(trainer.run.backend, argc, argv);
  if (!group)
    return failWith(toString(group.takeError()));
  bool root = group->rank == 0;

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ToolDiagnostics diagnostics(ctx, "dist-train", debugDiagnosticsFlag());

  std::string model = modelPath, configPath = trainConfigFlag().str();
  trainer.dataDir = dataDir;
  if (!trainTest.empty()) {
    SmallString<256> m(trainTest), c(trainTest);
    sys::path::append(m, "model.onnx");
    sys::path::append(c, "train.json");
    model = m.str().str();
    if (configPath.empty())
      configPath = c.str().str();
    if (trainer.dataDir.empty())
      trainer.dataDir = trainTest;
  }
  if (model.empty())
    return failWith("no model given (see --help)");
  if (configPath.empty())
    return failWith("no training config: pass --train <file>");
  if (!tokens.empty() && !trainer.dataDir.empty())
    return failWith("--tokens and --data both give batches; pass one");
  trainer.tokensFile = tokens;
  if (evalTokens.empty() && (evalEvery.getNumOccurrences() ||
                             evalBatches.getNumOccurrences()))
    return failWith("--eval-every and --eval-batches go with --eval-tokens "
                    "<file>");
  if (evalEvery < 0)
    return failWith("--eval-every N needs N >= 0");
  if (!shuffleSeed.empty()) {
    uint64_t value = 0;
    if (StringRef(shuffleSeed).getAsInteger(10, value))
      return failWith("--shuffle takes a seed, a non-negative integer; got '" +
                      shuffleSeed + "'");
    if (tokens.empty())
      return failWith("--shuffle draws windows of a --tokens file; there is "
                      "no --tokens");
    trainer.shuffleSeed = value;
  }
  trainer.batch = batch;
  trainer.seq = seqLength;
  trainer.seed = seed;

  // Refusals the end of a run would meet come before it compiles and trains.
  if (!checkpointDir.empty())
    if (Error e = checkCheckpointTarget(checkpointDir))
      return failWith(toString(std::move(e)));
  if (!saveModel.empty())
    if (Error e = checkTrainedModelTarget(saveModel))
      return failWith(toString(std::move(e)));
  std::optional<distrt::DType> saveDtype;
  if (!saveDtypeName.empty()) {
    saveDtype = parseSaveDtype(saveDtypeName);
    if (!saveDtype)
      return failWith("--save-dtype " + saveDtypeName +
                      ": expected f32, bf16 or f16");
    if (saveModel.empty())
      return failWith("--save-dtype applies to --save OUT.onnx, which was "
                      "not given");
  }
  auto options = compileOptionsFromFlags(ctx);
  if (failed(options))
    return 1;
  if (Error e = compileForDevice(*options, trainer.run))
    return failWith(toString(std::move(e)));
  if (!options->train) {
    auto config = parseTrainConfig(&ctx, configPath);
    if (failed(config))
      return 1;
    options->train = std::move(*config);
  }
  SmallString<128> workDir;
  if (std::error_code ec =
          sys::fs::createUniqueDirectory("dist-train", workDir))
    return failWith("cannot create a work directory: " + ec.message());
  scope_exit removeWorkDir([&] { sys::fs::remove_directories(workDir); });
  options->workDir = workDir.str().str();
  // --plan auto: the search replaces the mesh and the plan with its choice;
  // with --auto-trials, the fastest of its finalists trained here.
  int64_t trialSteps = autoPlanFlags().trialSteps;
  autoplan::TrialRunner trial = [&](const CompileOptions &candidate,
                                    function_ref<bool(StringRef)> seen) {
    return measureTrainingStep(ctx, model, candidate, trainer, trialSteps,
                               seen);
  };
  if (failed(autoplan::resolveAutoPlan(ctx, model, *options,
                                       root ? errs() : nulls(), &trial)))
    return 1;
  const TrainConfig *config = &*options->train;

  auto created = Trainer::create(ctx, model, *options, trainer);
  if (!created)
    return failWith(toString(created.takeError()));
  Trainer &t = **created;
  int64_t total = steps >= 0 ? steps.getValue() : config->steps;
  if (root)
    errs() << "dist-train: compiled the training step of " << model << " for "
           << t.programs().size() << " rank(s)\n";
  if (root)
    for (const std::string &note : t.notes())
      errs() << "dist-train: note: " << note << "\n";
  if (checkpointEvery < 0 || (checkpointEvery > 0 && checkpointDir.empty()))
    return failWith("--checkpoint-every N needs N > 0 and --save-checkpoint "
                    "<dir>");
  int64_t start = 0;
  if (!resume.empty()) {
    CheckpointIO io;
    auto meta = t.resume(resume, &io);
    if (!meta)
      return failWith(toString(meta.takeError()));
    start = meta->step;
    if (root)
      errs() << ("dist-train: resumed " + resume + " at step " +
                 std::to_string(start) + " (saved with --mesh '" + meta->mesh +
                 "' --plan '" + meta->plan + "')\n");
    printCheckpointIO(errs(), "read", io);
    // Batches are a function of the step and the source: another source
    // (or another shuffle seed) gives other batches from here on.
    if (root && meta->step < total && !meta->dataSource.empty() &&
        meta->dataSource != t.dataSourceKind())
      errs() << "dist-train: warning: " << resume << " was trained on "
             << meta->dataSource << "; this run reads " << t.dataSourceKind()
             << ", so its batches do not continue that stream\n";
  }
  // What a checkpoint records of this run beside the tensors and the step.
  CheckpointMeta run;
  run.mesh = meshFlagText();
  run.plan = planFlagText();
  run.configFile = configPath;
  if (auto text = MemoryBuffer::getFile(configPath))
    run.configText = (*text)->getBuffer().str();
  int64_t saved = -1;
  auto save = [&](int64_t done) -> int {
    CheckpointIO io;
    if (Error e = t.saveCheckpoint(checkpointDir, done, run, &io))
      return failWith(toString(std::move(e)));
    saved = done;
    if (root)
      errs() << "dist-train: saved " << checkpointDir << " at step " << done
             << "\n";
    printCheckpointIO(errs(), "wrote", io);
    return 0;
  };
  std::vector<StepResult> results;
  auto progress = ProgressLog::create(
      total,
      options->train->loss.kind == LossSpec::Kind::CrossEntropy ? "tokens"
                                                                : "samples",
      root ? StringRef(logFile) : StringRef(), /*append=*/!resume.empty());
  if (!progress)
    return failWith(toString(progress.takeError()));
  std::unique_ptr<Evaluator> evaluator;
  if (!evalTokens.empty()) {
    auto made = Evaluator::create(t, evalTokens, evalBatches, trainer.run,
                                  workDir);
    if (!made)
      return failWith(toString(made.takeError()));
    evaluator = std::move(*made);
  }
  auto evaluate = [&](int64_t done) -> int {
    auto r = evaluator->evaluate(ctx, t);
    if (!r)
      return failWith(toString(r.takeError()));
    if (root)
      outs() << (*progress)->evaluation(done, r->loss, r->tokens, r->ms)
             << "\n";
    outs().flush();
    return 0;
  };
  if (evaluator && evalEvery > 0 && start == 0 && total > 0)
    if (int status = evaluate(0))
      return status;
  // From here on a Ctrl-C or SIGTERM ends the run after the current step,
  // with its checkpoint saved.
  catchStopSignals();
  for (int64_t k = start; k < total; ++k) {
    auto r = t.step(k);
    if (!r)
      return failWith(toString(r.takeError()));
    results.push_back(*r);
    if (root)
      outs() << (*progress)->step(*r) << "\n";
    // A step's line appears when the step ends, also through a pipe or tee.
    outs().flush();
    bool stopping = r->stopSignal != 0;
    if (evaluator && !stopping &&
        ((evalEvery > 0 && (k + 1) % evalEvery == 0) || k + 1 == total))
      if (int status = evaluate(k + 1))
        return status;
    if ((checkpointEvery > 0 && (k + 1) % checkpointEvery == 0) ||
        (stopping && !checkpointDir.empty()))
      if (int status = save(k + 1))
        return status;
    if (stopping) {
      if (root)
        errs() << "dist-train: stopped by " << stopSignalName(r->stopSignal)
               << " after step " << k + 1 << "/" << total << "; "
               << (checkpointDir.empty()
                       ? "no --save-checkpoint was given, nothing was saved"
                       : "resume with --resume " + checkpointDir)
               << "\n";
      return 128 + r->stopSignal;
    }
  }
  // On a GPU: which, and what ran on the host for want of a device kernel.
  for (const auto &[rank, stats] : t.session().rankStats())
    if (!stats.device.empty())
      (root ? outs() : errs()) << "device: rank " << rank << " on "
                               << stats.device << ": " << stats.placement
                               << "\n";
  int64_t done = std::max(start, total);
  if (!checkpointDir.empty() && saved != done)
    if (int status = save(done))
      return status;
  if (bench > 0) {
    // The profile then covers the timed steps only.
    t.session().clearProfiles();
    std::vector<double> times;
    for (int i = 0; i < bench; ++i) {
      auto r = t.step(total + i);
      if (!r)
        return failWith(toString(r.takeError()));
      times.push_back(r->ms);
    }
    std::sort(times.begin(), times.end());
    if (root)
      outs() << "bench: " << bench << " step(s) on " << t.programs().size()
             << " rank(s), " << *threads << " thread(s) per rank\n"
             << "median_ms: " << format("%.3f", times[times.size() / 2])
             << "\nmin_ms: " << format("%.3f", times.front()) << "\n";
    // Measured memory of each rank this process runs, in one write (the
    // unbuffered stderr of several MPI processes interleaves otherwise).
    std::string lines;
    raw_string_ostream os(lines);
    for (const auto &[rank, stats] : t.session().rankStats())
      os << "rank " << rank << ": weights and states "
         << format("%.1f", stats.weight_bytes / 1048576.0)
         << " MiB, peak activations "
         << format("%.1f", stats.peak_live_bytes / 1048576.0) << " MiB\n";
    (root ? outs() : errs()) << lines;
  }
  // Every process prints the ranks it runs (under MPI, its own; processes
  // other than the root on stderr, so the tables do not mix on stdout).
  outs().flush();
  if (trainer.run.profile)
    for (const auto &[rank, stats] : t.session().rankStats())
      printProfile(root ? outs() : errs(), rank, stats, profileTopFlag());
  // Reading the trained state back is collective under MPI: every process
  // takes part, the root gets the tensors.
  std::vector<distrt::NamedTensor> state;
  if (!trainTest.empty() || !saveModel.empty()) {
    auto read = t.trainedState();
    if (!read)
      return failWith(toString(read.takeError()));
    state = std::move(*read);
  }
  int status = 0;
  if (!trainTest.empty() && root)
    status = checkCase(t, ctx, start, results, state, workDir, *threads);
  if (!saveModel.empty()) {
    if (root) {
      int merged = 0;
      if (Error e =
              saveTrainedModel(model, state, saveModel, mergeLora, &merged,
                               saveDtype))
        return failWith(toString(std::move(e)));
      errs() << "dist-train: wrote " << saveModel;
      if (saveDtype)
        errs() << " in " << saveDtypeName;
      if (mergeLora)
        errs() << " (LoRA adapters of " << merged
               << " layer(s) merged into their base weights)";
      errs() << "\n";
    }
  }
  return status;
}
