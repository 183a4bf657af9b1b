//===- dist-run.cpp - run a model on a mesh and check it --------*- C++ -*-===//
//
// Compiles a model for a mesh (distopt::Compilation), runs every rank on a
// communicator backend, prints the outputs, and checks them against a
// single device (--check) or an ONNX backend test case (--onnx-test).
//
//===----------------------------------------------------------------------===//
#include "distopt/Driver/CompileFlags.h"
#include "distopt/Driver/ToolDiagnostics.h"
#include "distopt/InitAll.h"
#include "distopt/Check/OnnxTestCase.h"
#include "distopt/Check/ReferenceCheck.h"
#include "distopt/Data/Microbatches.h"
#include "distopt/Data/RunFolder.h"
#include "distopt/Session/Calibrate.h"
#include "distopt/Session/Generate.h"
#include "distopt/Session/Profile.h"
#include "distopt/Session/ProgramInputs.h"
#include "distopt/Session/RunFlags.h"
#include "distopt/Session/Session.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

using namespace llvm;
using namespace distopt;

static cl::OptionCategory &category = compileFlagsCategory();
static cl::opt<std::string> modelPath(cl::Positional,
                                      cl::desc("<model.onnx|model.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    inputsDir("inputs",
              cl::desc("directory with input_<i>.pb (ONNX TensorProto) files; "
                       "default: random inputs"),
              cl::cat(category));
static cl::opt<bool> check("check",
                           cl::desc("compare every output with a single-device "
                                    "run; exit 1 on mismatch"),
                           cl::cat(category));
static cl::opt<int> bench("bench",
                          cl::desc("time N runs after the first (weights "
                                   "loaded once) and print median_ms"),
                          cl::init(0), cl::cat(category));
static cl::opt<std::string>
    onnxTest("onnx-test",
             cl::desc("run an ONNX backend test case directory (model.onnx, "
                      "test_data_set_*) and compare with its outputs"),
             cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> saveOutputs(
    "save-outputs",
    cl::desc("write the run's inputs and outputs as ONNX TensorProto files "
             "(input_<i>.pb, output_<i>.pb: an ONNX test data set) into this "
             "new or empty directory"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<int> generateTokens(
    "generate",
    cl::desc("extend --prompt (or --prompt-text) by N tokens with a causal "
             "language model (one int64 [batch, seq] input, [batch, seq, "
             "vocab] logits first): greedy, or sampled with --temperature "
             "and --top-k"),
    cl::value_desc("N"), cl::init(0), cl::cat(category));
static cl::opt<std::string>
    promptIds("prompt", cl::desc("token ids for --generate, e.g. \"12 7 300\""),
              cl::value_desc("ids"), cl::cat(category));
static cl::opt<std::string> promptText(
    "prompt-text",
    cl::desc("for --generate on a byte-level model (vocabulary 256): the "
             "prompt's bytes are its tokens, and the output is printed as "
             "text too"),
    cl::value_desc("text"), cl::cat(category));
static cl::opt<double> temperature(
    "temperature",
    cl::desc("--generate samples from softmax(logits / T); 0: the most "
             "likely token (default)"),
    cl::init(0.0), cl::cat(category));
static cl::opt<int> topK("top-k",
                         cl::desc("--generate samples among the K most "
                                  "likely tokens (0: all)"),
                         cl::init(0), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("seed of the random inputs and "
                                               "of --generate's sampling"),
                              cl::init(0), cl::cat(category));
static cl::opt<double>
    relTol("rtol", cl::desc("relative tolerance of --check and --onnx-test"),
           cl::init(1e-4), cl::cat(category));
static cl::opt<bool> calibrateFlag(
    "calibrate",
    cl::desc("measure this machine for the cost model (GEMM rates per dtype "
             "on --device, memory bandwidth, collectives of --backend: local "
             "ranks as threads, or the processes under mpirun) and write a "
             "machine profile for --machine (takes seconds)"),
    cl::cat(category));
static cl::opt<std::string>
    calibrateOut("out",
                 cl::desc("where --calibrate writes the profile (default "
                          "machine.json)"),
                 cl::value_desc("file"), cl::init("machine.json"),
                 cl::cat(category));
static cl::opt<bool> calibrateQuick(
    "quick",
    cl::desc("with --calibrate: small sizes, one run each (a smoke test, "
             "not a usable profile)"),
    cl::cat(category));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("run the model in bf16 or f16: parameters read only in that "
             "dtype loaded in it (rounded once), activations in that dtype, "
             "normalisations, softmax and the outputs in f32 (training's "
             "precision policy, docs/training.md); --check still compares "
             "with the f32 model, so give --rtol/--atol for the rounding"),
    cl::value_desc("bf16|f16"), cl::cat(category));
static cl::opt<double>
    absTol("atol", cl::desc("absolute tolerance of --check and --onnx-test"),
           cl::init(1e-5), cl::cat(category));

static int threads = 1;

static int failWith(const Twine &message) {
  errs() << "dist-run: error: " << message << "\n";
  return 1;
}

static double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t)
      .count();
}

/// One set of global inputs per microbatch of the pipeline schedule (every
/// process makes the same ones): read from --inputs and split, or random.
static Expected<std::vector<std::vector<distrt::NamedTensor>>>
inputsFor(const Programs &programs) {
  int64_t microbatches = microbatchesOf(programs);
  std::vector<std::vector<distrt::NamedTensor>> inputs;
  if (!inputsDir.empty()) {
    auto all = makeInputs(programs, inputsDir, seed);
    if (!all)
      return all.takeError();
    if (microbatches == 1)
      return std::vector<std::vector<distrt::NamedTensor>>{std::move(*all)};
    return splitBatch(*all, microbatches);
  }
  for (int64_t mb = 0; mb < microbatches; ++mb) {
    auto one = makeInputs(programs, "", seed + mb);
    if (!one)
      return one.takeError();
    inputs.push_back(std::move(*one));
  }
  return inputs;
}

static void
printOutputs(const std::vector<std::vector<distrt::NamedTensor>> &outputs) {
  for (size_t mb = 0; mb < outputs.size(); ++mb)
    for (const distrt::NamedTensor &o : outputs[mb])
      outs() << "output '" << o.name << "'"
             << (outputs.size() > 1 ? " microbatch " + std::to_string(mb) : "")
             << ": " << distrt::DTypeName(o.tensor.dtype())
             << distrt::ShapeToString(o.tensor.shape()) << " "
             << o.tensor.DebugString(6) << "\n";
}

/// The GEMM kernels a run uses: oneDNN's (unless DISTRT_GEMM=openblas or
/// not built in) and OpenBLAS's kernel set.
static std::string gemmKernels() {
  std::string onednn = distrt::OneDnnGemmName();
  std::string bf16 = distrt::OneDnnBF16GemmName();
  return (onednn.empty() ? "" : onednn + " + ") + "OpenBLAS " +
         distrt::BlasCoreName() + (bf16.empty() ? "" : ", bf16 on " + bf16);
}

/// Times `bench` more steps on the session and prints the median.
static int runBench(Session &session, size_t ranks,
                    const std::vector<std::vector<distrt::NamedTensor>> &in) {
  // The profile then covers the timed runs only.
  session.clearProfiles();
  std::vector<double> times;
  for (int i = 0; i < bench; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = session.run(in);
    if (!r)
      return failWith(toString(r.takeError()));
    times.push_back(msSince(t0));
    if (session.isRoot() && bench >= 10 && (i + 1) % (bench / 5) == 0)
      errs() << "dist-run: bench " << (i + 1) << "/" << bench << "\n";
  }
  std::sort(times.begin(), times.end());
  if (session.isRoot())
    outs() << "bench: " << bench << " run(s) on " << ranks << " rank(s), "
           << threads << " thread(s) per rank, GEMM " << gemmKernels()
           << "; min " << format("%.3f", times.front()) << " ms, max "
           << format("%.3f", times.back()) << " ms\n"
           << "median_ms: " << format("%.3f", times[times.size() / 2]) << "\n";
  return 0;
}

/// --generate: the prompt from --prompt or --prompt-text, the tokens
/// generated, printed as ids (and as text for a byte-level model).
static int runGenerate(Session &session, const Programs &programs) {
  std::vector<int64_t> prompt;
  if (!promptText.empty()) {
    prompt = tokensOfBytes(promptText);
  } else {
    auto ids = parseTokenIds(promptIds);
    if (!ids)
      return failWith(toString(ids.takeError()));
    prompt = std::move(*ids);
  }
  GenerateOptions options;
  options.tokens = generateTokens;
  options.temperature = temperature;
  options.topK = topK;
  options.seed = seed;
  options.bytes = !promptText.empty();
  auto started = std::chrono::steady_clock::now();
  auto out = generate(session, programs, prompt, options);
  if (!out)
    return failWith(toString(out.takeError()));
  if (!session.isRoot())
    return 0;
  double ms = msSince(started);
  errs() << "dist-run: generated " << generateTokens << " token(s) in "
         << format("%.1f", ms) << " ms (" << format("%.1f", ms / generateTokens)
         << " ms per token; a window of " << out->window << ")\n";
  outs() << "tokens:";
  for (size_t i = 0; i < out->tokens.size(); ++i)
    outs() << (i == prompt.size() ? " |" : "") << " " << out->tokens[i];
  outs() << "\n";
  if (out->vocabulary == 256)
    outs() << "text: " << bytesOfTokens(out->tokens) << "\n";
  return 0;
}

/// --calibrate: measure, print the table, write the profile (rank 0).
static int runCalibration(const RunSettings &settings,
                          const ProcessGroup &group) {
  if (!modelPath.empty() || !onnxTest.empty())
    return failWith("--calibrate measures the machine; it takes no model");
  CalibrationOptions options;
  options.quick = calibrateQuick;
  options.backend = settings.backend;
  options.device = settings.device.device;
  options.threadsPerRank = threads;
  if (group.rank == 0)
    errs() << "dist-run: calibrating (" << backendFlag() << " backend, "
           << options.device << (options.quick ? ", quick" : "") << ")\n";
  auto result = calibrate(options, group);
  if (!result)
    return failWith(toString(result.takeError()));
  if (!result->root)
    return 0;
  printCalibration(*result, outs());
  std::error_code ec;
  raw_fd_ostream out(calibrateOut, ec);
  if (ec)
    return failWith("cannot write " + calibrateOut + ": " + ec.message());
  cost::writeMachineProfile(result->profile, out);
  outs() << "wrote " << calibrateOut << " (use it with --machine "
         << calibrateOut << ")\n";
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  auto threadsFlag = takeThreadsFlag(argc, argv);
  if (!threadsFlag)
    return failWith(toString(threadsFlag.takeError()));
  threads = *threadsFlag;
  cl::HideUnrelatedOptions(category);
  const std::string overview =
      std::string("dist-run: compile a model for a device mesh, run every "
                  "rank, and check "
                  "the result against a single-device run\n\n"
                  "  dist-run model.onnx --mesh tp=2 --plan tp --check\n"
                  "  mpirun -np 2 dist-run model.onnx --mesh tp=2 --plan tp "
                  "--backend mpi "
                  "--check\n"
                  "  dist-run --onnx-test <case dir>\n"
                  "  dist-run lm.onnx --mesh tp=2 --plan tp --generate 20 "
                  "--prompt \"12 7 300\" [--temperature 0.8 --top-k 40]\n"
                  "  dist-run --calibrate --out machine.json\n\n") +
      kRunHelpTail;
  cl::ParseCommandLineOptions(argc, argv, overview);

  auto runFlags = runSettingsFromFlags(threads);
  if (!runFlags)
    return failWith(toString(runFlags.takeError()));
  RunSettings settings = *runFlags;
  Tolerances tolerances{relTol, absTol};
  auto group = initBackend(settings.backend, argc, argv);
  if (!group)
    return failWith(toString(group.takeError()));
  bool root = group->rank == 0;
  if (calibrateQuick && !calibrateFlag)
    return failWith("--quick goes with --calibrate");
  if (calibrateFlag)
    return runCalibration(settings, *group);

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ToolDiagnostics diagnostics(ctx, "dist-run", debugDiagnosticsFlag());

  auto flags = compileOptionsFromFlags(ctx);
  if (failed(flags))
    return 1;
  CompileOptions &options = *flags;
  if (Error e = compileForDevice(options, settings))
    return failWith(toString(std::move(e)));
  if (autoPlanFlags().requested)
    return failWith("--plan auto is for dist-opt and dist-train; make the plan "
                    "there with --emit-plan FILE and run it with --plan FILE");
  if (options.train)
    return failWith("dist-run runs forward models; train with dist-train");
  if (!precision.empty()) {
    if (precision != "bf16" && precision != "f16" && precision != "f32")
      return failWith("--precision " + precision +
                      ": expected bf16, f16 or f32");
    options.inferencePrecision.compute = precision;
  }
  SmallString<128> workDir;
  if (std::error_code ec = sys::fs::createUniqueDirectory("dist-run", workDir))
    return failWith("cannot create a work directory: " + ec.message());
  scope_exit removeWorkDir([&] { sys::fs::remove_directories(workDir); });
  options.workDir = workDir.str().str();

  if (!onnxTest.empty()) {
    auto outcome = runOnnxTestCase(ctx, onnxTest, options, settings, tolerances);
    if (!outcome)
      return failWith(toString(outcome.takeError()));
    if (!root)
      return 0;
    if (!outcome->passed) {
      outs() << "FAIL " << onnxTest << ": " << outcome->failure << "\n";
      return 1;
    }
    outs() << "PASS " << onnxTest << ": " << outcome->dataSets
           << " data set(s), " << outcome->outputs
           << " output(s), max abs diff " << format("%.3g", outcome->maxAbsDiff)
           << "\n";
    return 0;
  }
  if (modelPath.empty())
    return failWith("no model given (see --help)");
  if (!saveOutputs.empty())
    if (Error e = checkRunFolderTarget(saveOutputs))
      return failWith("--save-outputs: " + toString(std::move(e)));
  if (generateTokens < 0)
    return failWith("--generate N needs N >= 0");
  if ((!promptIds.empty() || !promptText.empty() || temperature != 0 ||
       topK != 0) &&
      generateTokens == 0)
    return failWith("--prompt, --prompt-text, --temperature and --top-k go "
                    "with --generate N");
  if (generateTokens > 0) {
    if (promptIds.empty() == promptText.empty())
      return failWith("--generate needs a prompt: --prompt ids or "
                      "--prompt-text text (one of them)");
    if (temperature < 0 || topK < 0)
      return failWith("--temperature and --top-k cannot be negative");
    if (check || bench > 0 || !saveOutputs.empty() || !inputsDir.empty())
      return failWith("--generate makes its own inputs; it does not go with "
                      "--check, --bench, --save-outputs or --inputs");
  }

  // Every process compiles every rank's program (deterministically): under
  // MPI each then loads and runs only its own.
  auto started = std::chrono::steady_clock::now();
  auto programs = compilePrograms(ctx, modelPath, options);
  if (!programs)
    return failWith(toString(programs.takeError()));
  if (root)
    errs() << "dist-run: compiled " << modelPath << " for " << programs->size()
           << " rank(s) in " << format("%.1f", msSince(started)) << " ms\n";
  if (generateTokens > 0 && microbatchesOf(*programs) > 1)
    return failWith("--generate runs models without pipeline microbatches");
  std::vector<std::vector<distrt::NamedTensor>> noInputs;
  auto inputs = generateTokens > 0
                    ? Expected<std::vector<std::vector<distrt::NamedTensor>>>(
                          std::move(noInputs))
                    : inputsFor(*programs);
  if (!inputs)
    return failWith(toString(inputs.takeError()));

  started = std::chrono::steady_clock::now();
  auto session = createSession(*programs, settings.backend, threads,
                               settings.profile, settings.device);
  if (!session)
    return failWith(toString(session.takeError()));
  if (root)
    errs() << "dist-run: loaded " << programs->size() << " rank(s) on the "
           << backendFlag() << " backend ("
           << settings.device.device << ") in "
           << format("%.1f", msSince(started)) << " ms\n";
  if (generateTokens > 0)
    return runGenerate(**session, *programs);
  started = std::chrono::steady_clock::now();
  auto outputs = (*session)->run(*inputs);
  if (!outputs)
    return failWith(toString(outputs.takeError()));
  // Every process reports the ranks it runs (under MPI, its own).
  for (const auto &[rank, stats] : (*session)->rankStats())
    errs() << "dist-run: rank " << rank << ": weights "
           << format("%.1f", stats.weight_bytes / 1048576.0)
           << " MiB, peak activations "
           << format("%.1f", stats.peak_live_bytes / 1048576.0) << " MiB\n";
  if (root) {
    errs() << "dist-run: ran in " << format("%.1f", msSince(started))
           << " ms\n";
    printOutputs(*outputs);
    if (!saveOutputs.empty()) {
      if (Error e = writeRunFolder(saveOutputs, *inputs, *outputs))
        return failWith(toString(std::move(e)));
      errs() << "dist-run: wrote the inputs and outputs into " << saveOutputs
             << "\n";
    }
  }

  int status = 0;
  if (check && root) {
    auto result = checkAgainstSingleDevice(ctx, modelPath, options, *inputs,
                                           *outputs, settings, tolerances);
    if (!result)
      return failWith(toString(result.takeError()));
    for (const std::string &line : result->lines)
      outs() << line << "\n";
    outs() << (result->passed ? "check passed: " : "check FAILED: ")
           << result->checked << " output(s) on " << programs->size()
           << " rank(s) (" << backendFlag() << ") vs single device\n";
    status = result->passed ? 0 : 1;
  }
  if (bench > 0)
    if (int s = runBench(**session, programs->size(), *inputs))
      return s;
  // Every process prints the ranks it runs (under MPI, its own; processes
  // other than the root on stderr, so the tables do not mix on stdout).
  outs().flush();
  if (settings.profile)
    for (const auto &[rank, stats] : (*session)->rankStats())
      printProfile(root ? outs() : errs(), rank, stats, profileTopFlag());
  return status;
}
