//===- Evaluator.cpp - validation loss during training --------------------===//
#include "distopt/Trainer/Evaluator.h"
#include "distopt/Import/OnnxImporter.h"
#include "distopt/OnnxWriter/TrainedModelWriter.h"
#include "distopt/Session/ProgramInputs.h"
#include "distopt/Session/RankPrograms.h"
#include "distopt/Training/TrainingStep.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cmath>

using namespace distopt;
using llvm::Expected;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

/// Adds each labelled position's cross-entropy (in double) to `sum` and
/// counts it; positions labelled `ignore` are skipped.
static llvm::Error addCrossEntropy(const distrt::Tensor &logits,
                                   const distrt::Tensor &labels, int64_t ignore,
                                   double &sum, int64_t &counted) {
  const int64_t positions = labels.num_elements();
  const int64_t classes = logits.num_elements() / positions;
  const float *z = logits.data<float>();
  const int64_t *label = labels.data<int64_t>();
  for (int64_t i = 0; i < positions; ++i) {
    if (label[i] == ignore)
      continue;
    if (label[i] < 0 || label[i] >= classes)
      return fail("token " + llvm::Twine(label[i]) + " is outside the " +
                  llvm::Twine(classes) + " classes");
    const float *row = z + i * classes;
    double top = row[0];
    for (int64_t c = 1; c < classes; ++c)
      top = std::max(top, static_cast<double>(row[c]));
    double norm = 0;
    for (int64_t c = 0; c < classes; ++c)
      norm += std::exp(row[c] - top);
    sum += top + std::log(norm) - row[label[i]];
    ++counted;
  }
  return llvm::Error::success();
}

/// The symbol of `model`'s batch dimension, bound in `options`: what a
/// pipeline plan's evaluation rebinds to rows / microbatches.
static Expected<std::string> batchSymbol(llvm::StringRef model,
                                         const CompileOptions &options) {
  auto shapes = graphInputShapes(model);
  if (!shapes)
    return shapes.takeError();
  std::string symbol = shapes->empty() || (*shapes)[0].symbols.empty()
                           ? ""
                           : (*shapes)[0].symbols.front();
  if (symbol.empty() || !options.dims.count(symbol))
    return fail("evaluating a pipeline plan needs a model whose batch "
                "dimension is symbolic (bound by --batch or --dim): its "
                "microbatches are batches of rows / microbatches");
  return symbol;
}

Expected<std::unique_ptr<Evaluator>>
Evaluator::create(const Trainer &trainer, llvm::StringRef tokensFile,
                  int64_t batches, const RunSettings &run,
                  llvm::StringRef workDir) {
  if (trainer.config().loss.kind != LossSpec::Kind::CrossEntropy)
    return fail("--eval-tokens evaluates a cross_entropy loss on next "
                "tokens; " +
                trainer.config().path + " asks for another loss");
  if (batches < 1)
    return fail("--eval-batches must be at least 1");
  // The file must hold one batch of the training step's token input, checked
  // before training.
  for (const InputSpec &input : programInputs(trainer.programs()))
    if (input.name != kLabelsInput && input.dtype == distrt::DType::kI64 &&
        input.shape.size() == 2) {
      InputRequest r = wholeBatchRequests({input})[0];
      if (llvm::Error e = tokenFile(tokensFile.str())->check({r}))
        return std::move(e);
      break;
    }
  // The forward model's compile options, fixed for the run. A pipeline
  // plan's forward takes each microbatch as a whole input, so its batch
  // dimension is bound to rows / microbatches: microbatch m then reads the
  // windows of the batch's rows m * rows/M .., and every plan evaluates the
  // same tokens.
  CompileOptions forward = trainer.compileOptions();
  forward.train.reset();
  forward.workDir = workDir.str();
  if (int64_t m = trainer.pipelineMicrobatches(); m > 1) {
    auto symbol = batchSymbol(trainer.model(), forward);
    if (!symbol)
      return symbol.takeError();
    int64_t &rows = forward.dims[*symbol];
    if (rows % m)
      return fail("evaluating a pipeline plan: the batch's " +
                  llvm::Twine(rows) + " rows do not divide into " +
                  llvm::Twine(m) + " microbatches");
    rows /= m;
  }
  std::unique_ptr<Evaluator> e(new Evaluator());
  e->tokensFile = tokensFile.str();
  e->batches = batches;
  e->run = run;
  e->workDir = workDir.str();
  e->forward = std::move(forward);
  return e;
}

Expected<EvalResult> Evaluator::evaluate(mlir::MLIRContext &ctx,
                                         Trainer &trainer) {
  auto t0 = std::chrono::steady_clock::now();
  // The parameters as trained so far, as an ONNX model the forward
  // compile reads (the root writes it; every process compiles it).
  auto state = trainer.trainedState();
  if (!state)
    return state.takeError();
  Session &session = trainer.session();
  llvm::SmallString<256> path(workDir);
  llvm::sys::path::append(path, "evaluated.onnx");
  llvm::Error wrote = llvm::Error::success();
  if (session.isRoot())
    wrote = saveTrainedModel(trainer.model(), *state, path);
  std::string problem = wrote ? llvm::toString(std::move(wrote)) : "";
  auto paths = session.allGather(session.isRoot() ? "ok " + path.str().str()
                                                  : std::string());
  if (!paths)
    return paths.takeError();
  if (!problem.empty())
    return fail("evaluation: " + problem);
  std::string model = llvm::StringRef((*paths)[0]).drop_front(3).str();

  auto programs = compilePrograms(ctx, model, forward);
  if (!programs)
    return programs.takeError();
  const int64_t microbatches = microbatchesOf(*programs);
  std::vector<InputSpec> inputs = programInputs(*programs);
  if (inputs.size() != 1 || inputs[0].shape.size() != 2)
    return fail("--eval-tokens feeds models whose only input is int64 "
                "[batch, seq] token ids");
  auto evalSession = createSession(*programs, run);
  if (!evalSession)
    return evalSession.takeError();

  std::vector<InputRequest> requests = wholeBatchRequests(inputs);
  InputRequest labels = requests[0];
  labels.labels = true;
  labels.base = labels.input.name = kLabelsInput.str();
  requests.push_back(labels);
  for (InputRequest &r : requests)
    r.microbatches = microbatches;
  auto source = tokenFile(tokensFile);
  if (llvm::Error e = source->check(requests))
    return std::move(e);
  const std::string &outputName = trainer.config().output;
  const int64_t ignore = trainer.config().loss.ignoreIndex;
  double sum = 0;
  int64_t counted = 0;
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<std::vector<distrt::NamedTensor>> feeds;
    std::vector<distrt::Tensor> labels;
    for (int64_t m = 0; m < microbatches; ++m) {
      for (InputRequest &r : requests)
        r.microbatch = m;
      auto data = source->read(b, requests);
      if (!data)
        return data.takeError();
      feeds.push_back({{inputs[0].name, std::move((*data)[0])}});
      labels.push_back(std::move((*data)[1]));
    }
    auto outputs = (*evalSession)->run(feeds);
    if (!outputs)
      return fail("evaluation batch " + llvm::Twine(b) + ": " +
                  llvm::toString(outputs.takeError()));
    if (!(*evalSession)->isRoot())
      continue;
    for (int64_t m = 0; m < microbatches; ++m) {
      const distrt::NamedTensor *logits = nullptr;
      for (const distrt::NamedTensor &o : (*outputs)[m])
        if (o.name == outputName)
          logits = &o;
      if (!logits || logits->tensor.dtype() != distrt::DType::kF32)
        return fail("evaluation: the forward model has no f32 output '" +
                    outputName + "'");
      if (llvm::Error e =
              addCrossEntropy(logits->tensor, labels[m], ignore, sum, counted))
        return fail("evaluation batch " + llvm::Twine(b) + ": " +
                    llvm::toString(std::move(e)) + " of '" + outputName + "'");
    }
  }
  EvalResult r;
  r.tokens = counted;
  r.loss = counted ? sum / counted : 0;
  r.ms = std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
             .count();
  // Every process returns the root's numbers.
  std::vector<distrt::NamedTensor> shared;
  if (session.isRoot()) {
    distrt::Tensor t;
    distrt::Status st = distrt::Tensor::Allocate(distrt::DType::kF64, {2}, &t);
    if (!st.ok())
      return fail(st.ToString());
    t.data<double>()[0] = r.loss;
    t.data<double>()[1] = static_cast<double>(r.tokens);
    shared.push_back({"eval", std::move(t)});
  }
  if (llvm::Error e = session.shareFromRoot(shared))
    return std::move(e);
  r.loss = shared.front().tensor.data<double>()[0];
  r.tokens = static_cast<int64_t>(shared.front().tensor.data<double>()[1]);
  return r;
}
