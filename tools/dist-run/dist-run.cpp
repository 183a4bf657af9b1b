//===- dist-run.cpp - run a model on a mesh and check it --------*- C++ -*-===//
#include "distopt/Import/OnnxImporter.h"
#include "distopt/InitAll.h"
#include "distopt/Plan/Plan.h"
#include "distopt/Runner/Runner.h"
#include "distopt/Runner/Session.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

using namespace llvm;
using namespace distopt;

static cl::OptionCategory category("dist-run options");
static cl::opt<std::string> modelPath(cl::Positional,
                                      cl::desc("<model.onnx|model.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    meshSpec("mesh",
             cl::desc("device mesh, outer to inner axes, e.g. dp=2,tp=4"),
             cl::value_desc("name=size,..."), cl::cat(category));
static cl::list<std::string> plans(
    "plan",
    cl::desc("plan file or presets (replicate, dp, fsdp, tp, sp); repeatable"),
    cl::value_desc("file|presets"), cl::cat(category));
static cl::opt<std::string>
    dimSpec("dim",
            cl::desc("bind symbolic input dimensions, e.g. batch=2,seq=128"),
            cl::value_desc("name=size,..."), cl::cat(category));
static cl::opt<std::string> backendName(
    "backend",
    cl::desc("communicator: local (every rank a thread of this process), mpi "
             "(one process per rank: mpirun -np N dist-run ...) or nccl (one "
             "process per GPU under mpirun)"),
    cl::value_desc("local|mpi|nccl"), cl::init("local"), cl::cat(category));
// `--threads` is parsed by hand: libMLIR already registers an option of that
// name with LLVM's command-line library.
static int threads = 1;

/// Removes `--threads N` / `--threads=N` from argv; false if malformed.
static bool takeThreadsOption(int &argc, char **argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    StringRef value;
    if (arg == "--threads" || arg == "-threads") {
      if (i + 1 >= argc)
        return false;
      value = argv[++i];
    } else if (arg.consume_front("--threads=") ||
               arg.consume_front("-threads=")) {
      value = arg;
    } else {
      argv[out++] = argv[i];
      continue;
    }
    if (value.getAsInteger(10, threads) || threads < 1)
      return false;
  }
  argc = out;
  return true;
}
static cl::opt<std::string>
    inputsDir("inputs",
              cl::desc("directory with input_<i>.pb (ONNX TensorProto) files; "
                       "default: random inputs"),
              cl::cat(category));
static cl::opt<bool> check(
    "check",
    cl::desc(
        "compare every output with a single-device run; exit 1 on mismatch"),
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
static cl::opt<uint64_t> seed("seed", cl::desc("seed of the random inputs"),
                              cl::init(0), cl::cat(category));
static cl::opt<double>
    relTol("rtol", cl::desc("relative tolerance of --check and --onnx-test"),
           cl::init(1e-4), cl::cat(category));
static cl::opt<double>
    absTol("atol", cl::desc("absolute tolerance of --check and --onnx-test"),
           cl::init(1e-5), cl::cat(category));

static int failWith(const Twine &message) {
  errs() << "dist-run: error: " << message << "\n";
  return 1;
}

static std::string describe(const distrt::HostTensor &t) {
  return distrt::DTypeName(t.dtype()) + distrt::ShapeToString(t.shape());
}

/// The backend chosen with --backend, and this process's place in it: only
/// the root process (rank 0 under MPI) gets outputs, prints and checks.
static Backend backend = Backend::Local;
static ProcessGroup processes;
static bool isRootProcess() { return processes.rank == 0; }

/// Runs one set of global inputs per microbatch (a single set without a
/// pipeline) once on a new session; each microbatch's outputs on the root
/// process, none elsewhere.
static Expected<std::vector<std::vector<distrt::NamedTensor>>>
runOnce(const Programs &programs,
        const std::vector<std::vector<distrt::NamedTensor>> &inputs) {
  auto session = createSession(programs, backend, threads);
  if (!session)
    return session.takeError();
  return (*session)->run(inputs);
}

/// Binds the model's symbolic input dimensions from the shapes of a data
/// set's inputs, `inputs[i]` being graph input i (dimensions given with --dim
/// win). With m microbatches the batch dimension (input 0, dimension 0) is
/// bound to batch / m.
static Expected<CompileOptions>
bindDims(StringRef model, const std::vector<distrt::NamedTensor> &inputs,
         const CompileOptions &base, int64_t microbatches) {
  CompileOptions options = base;
  auto symbols = inputDimensionSymbols(model);
  if (!symbols)
    return symbols.takeError();
  for (size_t i = 0; i < symbols->size(); ++i) {
    if (i >= inputs.size())
      return createStringError(
          "the data set has " + std::to_string(inputs.size()) +
          " inputs but the model takes " + std::to_string(symbols->size()));
    const distrt::Shape &shape = inputs[i].tensor.shape();
    const std::vector<std::string> &dims = (*symbols)[i];
    for (size_t d = 0; d < dims.size() && d < shape.size(); ++d) {
      if (dims[d].empty() || options.dims.count(dims[d]))
        continue;
      int64_t extent = shape[d];
      if (i == 0 && d == 0 && microbatches > 1) {
        if (extent % microbatches != 0)
          return createStringError(
              "a batch of " + std::to_string(extent) + " does not split into " +
              std::to_string(microbatches) + " microbatches");
        extent /= microbatches;
      }
      options.dims[dims[d]] = extent;
    }
  }
  if (microbatches > 1 &&
      (symbols->empty() || (*symbols)[0].empty() || (*symbols)[0][0].empty()))
    return createStringError("microbatching needs a model exported with a "
                             "dynamic batch axis (input 0, dimension 0)");
  return options;
}

/// Largest ONNX test input whose values the importer may read.
constexpr int64_t kMaxImportReadableElements = 1 << 16;

/// Whether the importer may need a test input's values: backend tests feed
/// as inputs operands the importer needs as values (Reshape shapes, Slice
/// bounds, axes, pads, repeats, a Pad value, Range bounds...).
static bool importerMayRead(const distrt::HostTensor &t) {
  switch (t.dtype()) {
  case distrt::DType::kI64:
  case distrt::DType::kI32:
  case distrt::DType::kI16:
  case distrt::DType::kI8:
  case distrt::DType::kU8:
  case distrt::DType::kBool:
  case distrt::DType::kF32:
  case distrt::DType::kF64:
    return t.num_elements() <= kMaxImportReadableElements;
  default:
    return false;
  }
}

static InputValues inputValuesOf(const distrt::HostTensor &t) {
  InputValues v;
  v.shape = std::vector<int64_t>(t.shape().begin(), t.shape().end());
  v.isFloat =
      t.dtype() == distrt::DType::kF32 || t.dtype() == distrt::DType::kF64;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (t.dtype()) {
    case distrt::DType::kF32:
      v.floats.push_back(t.data<float>()[i]);
      break;
    case distrt::DType::kF64:
      v.floats.push_back(t.data<double>()[i]);
      break;
    case distrt::DType::kI64:
      v.ints.push_back(t.data<int64_t>()[i]);
      break;
    case distrt::DType::kI32:
      v.ints.push_back(t.data<int32_t>()[i]);
      break;
    case distrt::DType::kI16:
      v.ints.push_back(t.data<int16_t>()[i]);
      break;
    case distrt::DType::kI8:
      v.ints.push_back(t.data<int8_t>()[i]);
      break;
    default:
      v.ints.push_back(t.data<uint8_t>()[i]);
      break;
    }
  }
  return v;
}

/// Reads a data set's inputs, named after the graph inputs (input_<i>.pb is
/// graph input i unless the file names its tensor).
static Expected<std::vector<distrt::NamedTensor>>
readTestInputs(StringRef model, StringRef set) {
  auto names = graphInputNames(model);
  if (!names)
    return names.takeError();
  std::vector<distrt::NamedTensor> fed;
  for (size_t k = 0;; ++k) {
    SmallString<256> path(set);
    sys::path::append(path, "input_" + std::to_string(k) + ".pb");
    if (!sys::fs::exists(path))
      break;
    std::string fileName;
    auto t = readTensorProto(path, &fileName);
    if (!t)
      return t.takeError();
    std::string name = !fileName.empty()   ? fileName
                       : k < names->size() ? (*names)[k]
                                           : std::string();
    if (name.empty())
      return createStringError(path +
                               " names no tensor and the model has "
                               "only " +
                               std::to_string(names->size()) + " inputs");
    fed.push_back({name, std::move(*t)});
  }
  return fed;
}

/// Runs the ONNX backend test case in `onnxTest` and compares with its
/// outputs; each data set compiles with its own dimension bindings, and the
/// importer gets the values of its small numeric inputs (read only where an
/// op needs a value at import) unless microbatches see other values.
static int runOnnxTest(mlir::MLIRContext &ctx, const CompileOptions &base,
                       StringRef workDir) {
  SmallString<256> model(onnxTest);
  sys::path::append(model, "model.onnx");
  int64_t microbatches = plannedMicrobatches(base.plans);
  int sets = 0, outputs = 0;
  double maxAbs = 0;
  for (int k = 0;; ++k) {
    SmallString<256> set(onnxTest);
    sys::path::append(set, "test_data_set_" + std::to_string(k));
    if (!sys::fs::is_directory(set))
      break;
    auto inputs = readTestInputs(model, set);
    if (!inputs)
      return failWith(toString(inputs.takeError()));
    auto options = bindDims(model, *inputs, base, microbatches);
    if (!options)
      return failWith(toString(options.takeError()));
    if (microbatches == 1)
      for (const distrt::NamedTensor &t : *inputs)
        if (importerMayRead(t.tensor))
          options->inputValues[t.name] = inputValuesOf(t.tensor);
    auto programs = compilePrograms(ctx, model, *options, workDir);
    if (!programs)
      return failWith(toString(programs.takeError()));
    std::vector<std::vector<distrt::NamedTensor>> perMicrobatch{*inputs};
    if (microbatches > 1) {
      auto split = splitBatch(*inputs, microbatches);
      if (!split)
        return failWith(toString(split.takeError()));
      perMicrobatch = std::move(*split);
    }
    auto ran = runOnce(*programs, perMicrobatch);
    if (!ran)
      return failWith(set + ": " + toString(ran.takeError()));
    if (!isRootProcess()) {
      ++sets;
      continue;
    }
    auto got = concatBatch(*ran);
    if (!got)
      return failWith(toString(got.takeError()));
    for (size_t i = 0;; ++i) {
      SmallString<256> path(set);
      sys::path::append(path, "output_" + std::to_string(i) + ".pb");
      if (!sys::fs::exists(path)) {
        if (i != got->size())
          return failWith(set + " has " + Twine(i) +
                          " expected outputs but the "
                          "model produced " +
                          Twine(got->size()));
        break;
      }
      if (i >= got->size())
        return failWith(set + " expects more outputs than the model produced");
      auto expected = readTensorProto(path);
      if (!expected)
        return failWith(toString(expected.takeError()));
      Comparison c =
          compareTensors((*got)[i].tensor, *expected, relTol, absTol);
      maxAbs = std::max(maxAbs, c.maxAbs);
      if (!c.ok) {
        outs() << "FAIL " << onnxTest << ": output " << i << " ('"
               << (*got)[i].name << "') of test_data_set_" << k << ": "
               << c.message << "\n";
        return 1;
      }
      ++outputs;
    }
    ++sets;
  }
  if (sets == 0)
    return failWith(onnxTest + " has no test_data_set_0");
  if (!isRootProcess())
    return 0;
  outs() << "PASS " << onnxTest << ": " << sets << " data set(s), " << outputs
         << " output(s), max abs diff " << format("%.3g", maxAbs) << "\n";
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  if (!takeThreadsOption(argc, argv))
    return failWith(
        "--threads needs a positive number of compute threads per rank");
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "dist-run: compile a model for a device mesh, run every rank, and check "
      "the result against a single-device run\n\n"
      "  dist-run model.onnx --mesh tp=2 --plan tp --check\n"
      "  mpirun -np 2 dist-run model.onnx --mesh tp=2 --plan tp --backend mpi "
      "--check\n"
      "  dist-run --onnx-test <case dir>\n\n"
      "  --threads=<N>  compute threads per rank (default 1)\n");

  auto chosen = parseBackend(backendName);
  if (!chosen)
    return failWith(toString(chosen.takeError()));
  backend = *chosen;
  auto group = initBackend(backend, argc, argv);
  if (!group)
    return failWith(toString(group.takeError()));
  processes = *group;

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &ctx);

  CompileOptions options;
  options.meshSpec = meshSpec;
  options.plans.assign(plans.begin(), plans.end());
  if (!dimSpec.empty()) {
    auto dims = parseDimSpec(dimSpec);
    if (!dims)
      return failWith(toString(dims.takeError()));
    options.dims = std::move(*dims);
  }

  SmallString<128> workDir;
  if (std::error_code ec = sys::fs::createUniqueDirectory("dist-run", workDir))
    return failWith("cannot create a work directory: " + ec.message());
  scope_exit removeWorkDir([&] { sys::fs::remove_directories(workDir); });

  if (!onnxTest.empty())
    return runOnnxTest(ctx, options, workDir);
  if (modelPath.empty())
    return failWith("no model given (see --help)");

  // Every process compiles every rank's program (deterministically): under
  // MPI each then loads and runs only its own.
  auto started = std::chrono::steady_clock::now();
  auto programs = compilePrograms(ctx, modelPath, options, workDir);
  if (!programs)
    return failWith(toString(programs.takeError()));
  auto msSince = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - t)
        .count();
  };
  bool root = isRootProcess();
  if (root)
    errs() << "dist-run: compiled " << modelPath << " for " << programs->size()
           << " rank(s) in " << format("%.1f", msSince(started)) << " ms\n";

  // One set of inputs per microbatch of the pipeline schedule (every process
  // makes the same ones).
  int64_t microbatches = microbatchesOf(*programs);
  std::vector<std::vector<distrt::NamedTensor>> inputs;
  if (!inputsDir.empty()) {
    auto all = makeInputs(*programs, inputsDir, seed);
    if (!all)
      return failWith(toString(all.takeError()));
    inputs.push_back(std::move(*all));
    if (microbatches > 1) {
      auto split = splitBatch(inputs[0], microbatches);
      if (!split)
        return failWith(toString(split.takeError()));
      inputs = std::move(*split);
    }
  } else {
    for (int64_t mb = 0; mb < microbatches; ++mb) {
      auto one = makeInputs(*programs, "", seed + mb);
      if (!one)
        return failWith(toString(one.takeError()));
      inputs.push_back(std::move(*one));
    }
  }

  started = std::chrono::steady_clock::now();
  auto session = createSession(*programs, backend, threads);
  if (!session)
    return failWith(toString(session.takeError()));
  if (root)
    errs() << "dist-run: loaded " << programs->size() << " rank(s) on the "
           << backendName << " backend in " << format("%.1f", msSince(started))
           << " ms\n";
  started = std::chrono::steady_clock::now();
  auto outputs = (*session)->run(inputs);
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
    for (size_t mb = 0; mb < outputs->size(); ++mb)
      for (const distrt::NamedTensor &o : (*outputs)[mb])
        outs() << "output '" << o.name << "'"
               << (microbatches > 1 ? " microbatch " + std::to_string(mb) : "")
               << ": " << describe(o.tensor) << " " << o.tensor.DebugString(6)
               << "\n";
  }

  int status = 0;
  if (check && root) {
    CompileOptions single;
    single.dims = options.dims;
    single.singleDevice = true;
    auto reference = compilePrograms(ctx, modelPath, single, workDir);
    if (!reference)
      return failWith("single-device reference: " +
                      toString(reference.takeError()));
    bool allOk = true;
    size_t checked = 0;
    for (size_t mb = 0; mb < inputs.size(); ++mb) {
      auto expected = runLocal(*reference, inputs[mb], threads);
      if (!expected)
        return failWith("single-device reference: " +
                        toString(expected.takeError()));
      const auto &got = (*outputs)[mb];
      allOk &= expected->size() == got.size();
      for (size_t i = 0; i < got.size() && i < expected->size(); ++i) {
        Comparison c = compareTensors(got[i].tensor, (*expected)[i].tensor,
                                      relTol, absTol);
        outs() << "check '" << got[i].name << "'"
               << (microbatches > 1 ? " microbatch " + std::to_string(mb) : "")
               << ": max abs diff " << format("%.3g", c.maxAbs)
               << (c.ok ? " ok" : " MISMATCH ") << c.message << "\n";
        allOk &= c.ok;
        ++checked;
      }
    }
    outs() << (allOk ? "check passed: " : "check FAILED: ") << checked
           << " output(s) on " << programs->size() << " rank(s) ("
           << backendName << ") vs single device\n";
    status = allOk ? 0 : 1;
  }

  if (bench > 0) {
    // The session keeps its executors and weights: each timed run is one
    // step, as a serving or training loop would see it.
    std::vector<double> times;
    for (int i = 0; i < bench; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = (*session)->run(inputs);
      if (!r)
        return failWith(toString(r.takeError()));
      times.push_back(msSince(t0));
      if (root && bench >= 10 && (i + 1) % (bench / 5) == 0)
        errs() << "dist-run: bench " << (i + 1) << "/" << bench << "\n";
    }
    std::sort(times.begin(), times.end());
    if (root)
      outs() << "bench: " << bench << " run(s) on " << programs->size()
             << " rank(s), " << threads << " thread(s) per rank, BLAS "
             << distrt::BlasCoreName() << ": min "
             << format("%.3f", times.front()) << " ms, max "
             << format("%.3f", times.back()) << " ms\n"
             << "median_ms: " << format("%.3f", times[times.size() / 2])
             << "\n";
  }
  return status;
}
