//===- Trainer.cpp - run compiled training steps --------------------------===//
#include "distopt/Trainer/Trainer.h"
#include "distopt/Import/OnnxImporter.h"
#include "distopt/Session/ProgramInputs.h"
#include "distopt/Trainer/Labels.h"
#include "distopt/Trainer/StopRequest.h"
#include "distopt/Training/TrainingStep.h"

#include "llvm/Support/Path.h"

#include <chrono>
#include <optional>
#include <cmath>
#include <map>
#include <set>

using namespace distopt;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

static Expected<distrt::Tensor> scalarF32(double v) {
  distrt::Tensor t;
  distrt::Status st = distrt::Tensor::Allocate(distrt::DType::kF32, {}, &t);
  if (!st.ok())
    return fail(st.ToString());
  t.data<float>()[0] = static_cast<float>(v);
  return t;
}

/// --batch and --seq give the token input's rows and columns: a symbolic
/// dimension is bound to them (beside --dim's bindings), a fixed one must
/// equal them. The token input is the model's first graph input.
static Error bindTokenShape(StringRef modelPath, const TrainerOptions &trainer,
                            CompileOptions &options) {
  if (!trainer.batch && !trainer.seq)
    return Error::success();
  if (trainer.tokensFile.empty())
    return fail("--batch and --seq shape --tokens batches; without --tokens, "
                "bind a symbolic dimension with --dim");
  if (!modelPath.ends_with(".onnx"))
    return fail("--batch and --seq bind dimensions of ONNX models; " +
                modelPath + " is MLIR, whose shapes are fixed");
  auto shapes = graphInputShapes(modelPath);
  if (!shapes)
    return shapes.takeError();
  if (shapes->empty() || (*shapes)[0].sizes.size() != 2)
    return fail("--tokens feeds models whose first input is [batch, seq]; " +
                modelPath + "'s is not");
  const GraphInputShape &input = (*shapes)[0];
  std::string fixedAt;
  for (int64_t size : input.sizes)
    fixedAt += (fixedAt.empty() ? "" : "x") +
               (size < 0 ? std::string("?") : std::to_string(size));
  StringRef file = llvm::sys::path::filename(modelPath);
  const std::pair<const char *, int64_t> flags[] = {{"batch", trainer.batch},
                                                    {"seq", trainer.seq}};
  for (int d = 0; d < 2; ++d) {
    auto [flag, value] = flags[d];
    if (!value)
      continue;
    const std::string &symbol = input.symbols[d];
    if (input.sizes[d] >= 0)
      if (input.sizes[d] != value)
        return fail("--" + llvm::Twine(flag) + " " + llvm::Twine(value) +
                    " but " + file + "'s input '" + input.name +
                    "' is fixed at " + fixedAt + "; export with a dynamic " +
                    (d == 0 ? "batch" : "sequence") + " dimension or drop --" +
                    flag);
    if (input.sizes[d] >= 0 || symbol.empty())
      continue;
    auto bound = options.dims.find(symbol);
    if (bound != options.dims.end() && bound->getValue() != value)
      return fail("--" + llvm::Twine(flag) + " " + llvm::Twine(value) +
                  " but --dim " + symbol + "=" +
                  llvm::Twine(bound->getValue()) +
                  " binds the same dimension of '" + input.name + "'");
    options.dims[symbol] = value;
  }
  return Error::success();
}

/// A note when the ranks hold different row counts of `input` (a batch
/// that does not divide by the data-parallel size): the runtime splits it
/// unevenly and the loss still weighs every row alike, but the user asked
/// for an even split or did not think about it.
static std::optional<std::string> unevenRowsNote(const Programs &programs,
                                                 StringRef input) {
  std::vector<int64_t> rows;
  int64_t global = 0;
  for (const auto &p : programs)
    for (const auto &arg : p->proto().inputs())
      if (arg.name() == input && arg.slice().sizes_size() > 0 &&
          arg.slice().global_shape_size() > 0) {
        global = arg.slice().global_shape(0);
        if (!llvm::is_contained(rows, arg.slice().sizes(0)))
          rows.push_back(arg.slice().sizes(0));
      }
  if (rows.size() < 2)
    return std::nullopt;
  std::string sizes;
  for (int64_t r : rows)
    sizes += (sizes.empty() ? "" : " or ") + std::to_string(r);
  return "the batch's " + std::to_string(global) + " rows of '" +
         input.str() + "' split unevenly over the ranks (" + sizes +
         " rows each); the loss still weighs every row alike";
}

Expected<std::unique_ptr<Trainer>>
Trainer::create(mlir::MLIRContext &ctx, StringRef modelPath,
                const CompileOptions &options, const TrainerOptions &trainer) {
  if (!options.train)
    return fail("Trainer::create needs a training config");
  if (!trainer.tokensFile.empty() &&
      options.train->loss.kind != LossSpec::Kind::CrossEntropy)
    return fail("--tokens makes next-token labels for a cross_entropy loss; " +
                options.train->path + " asks for another loss");
  std::unique_ptr<Trainer> t(new Trainer(*options.train));
  t->modelPath = modelPath.str();
  CompileOptions bound = options;
  if (Error e = bindTokenShape(modelPath, trainer, bound))
    return std::move(e);
  t->options = bound;
  auto compilation = Compilation::compile(ctx, modelPath, bound);
  if (failed(compilation))
    return fail("cannot compile the training step of " + modelPath);
  auto programs = exportPrograms(**compilation);
  if (!programs)
    return programs.takeError();
  t->compiled = std::move(*programs);
  const TrainingStepInfo &info = (*compilation)->training();
  t->classes = info.classes;
  t->microbatches = info.microbatches;
  t->batchSplit = info.batchSplit;

  // What the source gives: every input but the hyper-parameters, each
  // model input numbered (input_<I>.pb) in the order of the first
  // microbatch's inputs.
  t->inputs = programInputs(t->compiled);
  std::set<std::string> hyperNames;
  for (auto &[name, v] : hyperParameters(t->train, 0))
    hyperNames.insert(name);
  if (t->scaler.enabled())
    hyperNames.insert(kLossScaleInput.str());
  std::map<std::string, int> inputIndex;
  for (const InputSpec &input : t->inputs) {
    if (hyperNames.count(input.name))
      continue;
    auto [base, j] = splitMicrobatchInputName(input.name, t->microbatches);
    InputRequest r;
    r.input = input;
    r.base = base;
    r.labels = base == kLabelsInput &&
               t->train.loss.kind != LossSpec::Kind::ModelOutput;
    if (r.labels)
      r.input.valueBound = t->classes;
    else if (j == 0)
      inputIndex.emplace(base, static_cast<int>(inputIndex.size()));
    r.microbatch = j;
    r.microbatches = t->microbatches;
    r.batchSplit = info.batchSplit;
    t->requests.push_back(std::move(r));
  }
  for (InputRequest &r : t->requests)
    if (!r.labels)
      r.index = inputIndex[r.base];
  t->source = !trainer.dataDir.empty() ? trainingCaseFolder(trainer.dataDir)
              : !trainer.tokensFile.empty()
                  ? tokenFile(trainer.tokensFile, trainer.shuffleSeed)
                  : syntheticInputs(t->inputs, trainer.seed);
  if (llvm::Error e = t->source->check(t->requests))
    return std::move(e);
  for (std::string &note : t->source->notes(t->requests))
    t->remarks.push_back(std::move(note));
  for (const InputRequest &r : t->requests)
    if (!r.labels) {
      if (auto note = unevenRowsNote(t->compiled, r.input.name))
        t->remarks.push_back(*note);
      break;
    }

  auto session = createSession(t->compiled, trainer.run);
  if (!session)
    return session.takeError();
  t->runner = std::move(*session);
  return t;
}

bool Trainer::isRoot() const { return runner->isRoot(); }

Expected<std::vector<distrt::NamedTensor>> Trainer::batch(int64_t step) {
  auto data = source->read(step, requests);
  if (!data)
    return data.takeError();
  std::map<std::string, double> hyper;
  for (auto &[name, v] : hyperParameters(train, scheduleStep(step)))
    hyper[name] = v;
  if (scaler.enabled())
    hyper[kLossScaleInput.str()] = scaler.state().scale;
  // The programs' inputs in order: a hyper-parameter's value, or the
  // source's tensor (labels checked first).
  std::vector<distrt::NamedTensor> out;
  size_t next = 0;
  for (const InputSpec &input : inputs) {
    if (auto it = hyper.find(input.name); it != hyper.end()) {
      auto t = scalarF32(it->second);
      if (!t)
        return t.takeError();
      out.push_back({input.name, std::move(*t)});
      continue;
    }
    const InputRequest &r = requests[next];
    distrt::Tensor &t = (*data)[next++];
    if (r.labels && classes > 0)
      if (Error e = checkLabels(t, classes, train.loss.ignoreIndex))
        return fail("step " + std::to_string(step + 1) +
                    (microbatches > 1
                         ? ", microbatch " + std::to_string(r.microbatch)
                         : std::string()) +
                    ": " + llvm::toString(std::move(e)));
    out.push_back({input.name, std::move(t)});
  }
  return out;
}

Expected<StepResult> Trainer::step(int64_t k) {
  auto inputs = batch(k);
  if (!inputs)
    return inputs.takeError();
  StepResult r;
  r.step = k;
  r.lr = hyperParameters(train, scheduleStep(k)).front().second;
  r.lossScaled = scaler.enabled();
  r.lossScale = scaler.state().scale;
  for (const distrt::NamedTensor &t : *inputs)
    if (splitMicrobatchInputName(t.name, microbatches).first == kLabelsInput &&
        t.tensor.dtype() == distrt::DType::kI64 &&
        train.loss.kind == LossSpec::Kind::CrossEntropy)
      for (int64_t i = 0; i < t.tensor.num_elements(); ++i)
        r.tokens += t.tensor.data<int64_t>()[i] != train.loss.ignoreIndex;
  if (train.loss.kind != LossSpec::Kind::CrossEntropy && !inputs->empty() &&
      !inputs->front().tensor.shape().empty())
    r.tokens = inputs->front().tensor.shape()[0] * microbatches;
  auto t0 = std::chrono::steady_clock::now();
  auto outputs = runner->run({*inputs});
  if (!outputs)
    return fail("step " + std::to_string(k + 1) + ": " +
                llvm::toString(outputs.takeError()));
  r.ms = std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
             .count();
  // The root holds the loss and hears the stop signals; every process
  // must agree on both.
  static constexpr const char *kStopName = "stop signal";
  std::vector<distrt::NamedTensor> shared;
  if (runner->isRoot()) {
    for (const distrt::NamedTensor &o : outputs->front())
      if (o.name == kLossOutput || o.name == kGradNormOutput ||
          o.name == kGradsFiniteOutput || o.name == kDroppedTokensOutput)
        shared.push_back(o);
    auto stop = scalarF32(stopSignal());
    if (!stop)
      return stop.takeError();
    shared.push_back({kStopName, std::move(*stop)});
  }
  if (Error e = runner->shareFromRoot(shared))
    return std::move(e);
  bool finite = true;
  for (const distrt::NamedTensor &o : shared) {
    double v = o.tensor.dtype() == distrt::DType::kF64
                   ? o.tensor.data<double>()[0]
                   : o.tensor.data<float>()[0];
    if (o.name == kStopName)
      r.stopSignal = static_cast<int>(v);
    else if (o.name == kGradsFiniteOutput)
      finite = v != 0;
    else if (o.name == kDroppedTokensOutput)
      r.droppedTokens = v;
    else
      (o.name == kLossOutput ? r.loss : r.gradNorm) = v;
  }
  if (scaler.enabled()) {
    r.skipped = !finite;
    scaler.update(finite);
    r.nextLossScale = scaler.state().scale;
  }
  if (!std::isfinite(r.loss))
    return fail("step " + std::to_string(k + 1) + ": the loss is " +
                (std::isnan(r.loss) ? "NaN" : "infinite") +
                "; training stopped (the parameters hold this step's update)");
  return r;
}

Error Trainer::saveCheckpoint(StringRef dir, int64_t stepsDone,
                              const CheckpointMeta &run, CheckpointIO *io,
                              CheckpointFiles *files) {
  CheckpointMeta meta = run;
  meta.step = stepsDone;
  meta.modelFile = modelPath;
  // Batches are a function of the step: the source says how far it read.
  meta.dataSource = source->kind().str();
  meta.dataPosition = source->positionAfter(stepsDone, requests);
  if (scaler.enabled()) {
    const LossScalerState &s = scaler.state();
    meta.scaler = checkpoint::ScalerRecord{s.scale, s.cleanSteps,
                                           s.hysteresisLeft, s.appliedSteps};
  }
  return distopt::saveCheckpoint(*runner, compiled, dir, meta, io, files);
}

Expected<CheckpointMeta> Trainer::resume(StringRef dir, CheckpointIO *io) {
  auto meta = loadCheckpoint(*runner, compiled, dir, io);
  if (!meta || !scaler.enabled())
    return meta;
  // A checkpoint of a run without a loss scale: every step it ran applied
  // its update, and the scaler starts afresh.
  LossScalerState s = scaler.state();
  s.appliedSteps = meta->step;
  if (meta->scaler)
    s = LossScalerState{meta->scaler->scale, meta->scaler->cleanSteps,
                        meta->scaler->hysteresisLeft,
                        meta->scaler->appliedSteps};
  scaler.restore(s);
  return meta;
}

int64_t Trainer::scheduleStep(int64_t step) const {
  // Skipped steps do not advance Adam's step count or the learning-rate
  // schedule (Megatron, DeepSpeed).
  return scaler.enabled() ? scaler.state().appliedSteps : step;
}

Expected<std::vector<distrt::NamedTensor>> Trainer::trainedState() {
  return runner->persistentState();
}
