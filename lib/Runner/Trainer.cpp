//===- Trainer.cpp - run compiled training steps ----------------*- C++ -*-===//
#include "distopt/Runner/Trainer.h"
#include "distopt/Export/RankProgramExport.h"
#include "distopt/Runner/LoraMerge.h"
#include "distopt/Training/TrainingStep.h"

#include "onnx/onnx_pb.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <random>
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

Error distopt::checkLabels(const distrt::Tensor &labels, int64_t classes,
                           int64_t ignoreIndex) {
  if (labels.dtype() != distrt::DType::kI64)
    return fail("labels must be int64 class ids, got " +
                distrt::DTypeName(labels.dtype()));
  const int64_t *p = labels.data<int64_t>();
  for (int64_t i = 0, n = labels.num_elements(); i < n; ++i) {
    if ((p[i] >= 0 && p[i] < classes) || p[i] == ignoreIndex)
      continue;
    // The position as indices, e.g. [1, 5].
    std::string at;
    int64_t rem = i;
    std::vector<int64_t> idx(labels.rank());
    for (int64_t d = labels.rank() - 1; d >= 0; --d) {
      idx[d] = rem % labels.dim(d);
      rem /= labels.dim(d);
    }
    for (size_t d = 0; d < idx.size(); ++d)
      at += (d ? ", " : "") + std::to_string(idx[d]);
    return fail("label " + std::to_string(p[i]) + " at [" + at +
                "] is outside the " + std::to_string(classes) +
                " classes of the output (and is not the ignore index " +
                std::to_string(ignoreIndex) + ")");
  }
  return Error::success();
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
  std::unique_ptr<Trainer> t(new Trainer());
  t->train = *options.train;
  t->options = trainer;
  t->modelPath = modelPath.str();
  auto compilation = Compilation::compile(ctx, modelPath, options);
  if (failed(compilation))
    return fail("cannot compile the training step of " + modelPath);
  auto programs = exportPrograms(**compilation);
  if (!programs)
    return programs.takeError();
  t->compiled = std::move(*programs);
  t->classes = (*compilation)->training().classes;
  t->microbatches = (*compilation)->training().microbatches;
  t->batchSplit = (*compilation)->training().batchSplit;
  auto session =
      createSession(t->compiled, trainer.run.backend, trainer.run.threadsPerRank,
                    trainer.run.profile, trainer.run.device);
  if (!session)
    return session.takeError();
  t->runner = std::move(*session);
  return t;
}

bool Trainer::isRoot() const { return runner->isRoot(); }

/// Reads `count` uint16 tokens from `path` starting at token `first`
/// (wrapping around the file).
static Expected<std::vector<int64_t>> readTokens(StringRef path, int64_t first,
                                                 int64_t count) {
  std::ifstream in(path.str(), std::ios::binary | std::ios::ate);
  if (!in)
    return fail("cannot open token file " + path);
  int64_t tokens = static_cast<int64_t>(in.tellg()) / 2;
  if (tokens < count + 1)
    return fail("token file " + path + " holds " + std::to_string(tokens) +
                " tokens; a batch needs " + std::to_string(count + 1));
  std::vector<int64_t> out(count);
  int64_t start = first % (tokens - count);
  in.seekg(start * 2);
  std::vector<uint16_t> raw(count);
  in.read(reinterpret_cast<char *>(raw.data()), count * 2);
  if (!in)
    return fail("cannot read token file " + path);
  for (int64_t i = 0; i < count; ++i)
    out[i] = raw[i];
  return out;
}

Expected<std::vector<distrt::NamedTensor>> Trainer::batch(int64_t step) {
  // Every input any rank takes, with its global type.
  if (randomInputs.empty()) {
    auto made = makeInputs(compiled, "", options.seed);
    if (!made)
      return made.takeError();
    randomInputs = std::move(*made);
    std::set<std::string> hyperNames;
    for (auto &[name, v] : hyperParameters(train, 0))
      hyperNames.insert(name);
    for (const distrt::NamedTensor &proto : randomInputs) {
      auto [base, j] = splitMicrobatchInputName(proto.name, microbatches);
      if (j == 0 && !hyperNames.count(base) &&
          !(base == kLabelsInput &&
            train.loss.kind != LossSpec::Kind::ModelOutput))
        inputIndex.emplace(base, static_cast<int>(inputIndex.size()));
    }
  }
  const int64_t micro = microbatches;
  std::vector<distrt::NamedTensor> inputs;
  std::map<std::string, double> hyper;
  for (auto &[name, v] : hyperParameters(train, step))
    hyper[name] = v;
  std::mt19937_64 rng(options.seed * 1000003 + step);
  std::map<std::string, distrt::Tensor> stepFiles;
  for (const distrt::NamedTensor &proto : randomInputs) {
    distrt::NamedTensor in{proto.name, {}};
    if (auto it = hyper.find(proto.name); it != hyper.end()) {
      auto t = scalarF32(it->second);
      if (!t)
        return t.takeError();
      in.tensor = std::move(*t);
      inputs.push_back(std::move(in));
      continue;
    }
    // A model that computes its own loss takes its labels as a graph
    // input like any other.
    auto [base, micro_j] = splitMicrobatchInputName(proto.name, micro);
    bool isLabels =
        base == kLabelsInput && train.loss.kind != LossSpec::Kind::ModelOutput;
    if (!options.dataDir.empty()) {
      // Accumulating steps read step_K/micro_J/ for each microbatch; a
      // pipeline's microbatches are row slices of step_K/'s batch.
      llvm::SmallString<256> path(options.dataDir);
      llvm::sys::path::append(path, "step_" + std::to_string(step));
      if (micro > 1 && batchSplit == 1)
        llvm::sys::path::append(path, "micro_" + std::to_string(micro_j));
      llvm::sys::path::append(
          path, isLabels ? std::string("labels.pb")
                         : "input_" + std::to_string(inputIndex[base]) + ".pb");
      // A pipeline's microbatches share one file: read it once per step.
      auto cached = stepFiles.find(path.str().str());
      if (cached == stepFiles.end()) {
        auto read = readTensorProto(path);
        if (!read)
          return read.takeError();
        cached = stepFiles.emplace(path.str().str(), std::move(*read)).first;
      }
      const distrt::Tensor *t = &cached->second;
      distrt::Shape expected = proto.tensor.shape();
      if (batchSplit > 1 && !expected.empty())
        expected[0] *= batchSplit;
      if (t->shape() != expected || t->dtype() != proto.tensor.dtype())
        return fail(path + " holds " + distrt::DTypeName(t->dtype()) +
                    distrt::ShapeToString(t->shape()) + " but '" + base +
                    "' is " + distrt::DTypeName(proto.tensor.dtype()) +
                    distrt::ShapeToString(expected));
      if (batchSplit > 1) {
        distrt::Tensor slice;
        distrt::Status st = distrt::Tensor::Allocate(
            proto.tensor.dtype(), proto.tensor.shape(), &slice);
        if (!st.ok())
          return fail(st.ToString());
        const char *from = static_cast<const char *>(t->raw());
        std::memcpy(slice.raw(), from + micro_j * slice.byte_size(),
                    slice.byte_size());
        in.tensor = std::move(slice);
      } else {
        in.tensor = *t;
      }
    } else if (!options.tokensFile.empty()) {
      // Next-token batches: row b of microbatch j of step k starts at token
      // ((k*M + j)*B + b)*T for M microbatches per step.
      const distrt::Shape &shape = proto.tensor.shape();
      if (shape.size() != 2 || proto.tensor.dtype() != distrt::DType::kI64)
        return fail("--tokens feeds models whose inputs and labels are int64 "
                    "[batch, seq]; '" +
                    proto.name + "' is " +
                    distrt::DTypeName(proto.tensor.dtype()) +
                    distrt::ShapeToString(shape));
      distrt::Tensor t;
      distrt::Status st =
          distrt::Tensor::Allocate(distrt::DType::kI64, shape, &t);
      if (!st.ok())
        return fail(st.ToString());
      for (int64_t b = 0; b < shape[0]; ++b) {
        auto row =
            readTokens(options.tokensFile,
                       ((step * micro + micro_j) * shape[0] + b) * shape[1] +
                           (isLabels ? 1 : 0),
                       shape[1]);
        if (!row)
          return row.takeError();
        std::copy(row->begin(), row->end(), t.data<int64_t>() + b * shape[1]);
      }
      in.tensor = std::move(t);
    } else if (isLabels) {
      distrt::Tensor t;
      distrt::Status st = distrt::Tensor::Allocate(
          proto.tensor.dtype(), proto.tensor.shape(), &t);
      if (!st.ok())
        return fail(st.ToString());
      if (t.dtype() == distrt::DType::kI64) {
        std::uniform_int_distribution<int64_t> pick(0, classes - 1);
        for (int64_t i = 0; i < t.num_elements(); ++i)
          t.data<int64_t>()[i] = pick(rng);
      } else {
        std::uniform_real_distribution<float> pick(-1.f, 1.f);
        for (int64_t i = 0; i < t.num_elements(); ++i)
          t.data<float>()[i] = pick(rng);
      }
      in.tensor = std::move(t);
    } else {
      auto fresh = makeInputs(compiled, "", options.seed + step);
      if (!fresh)
        return fresh.takeError();
      for (distrt::NamedTensor &f : *fresh)
        if (f.name == proto.name)
          in.tensor = std::move(f.tensor);
    }
    if (isLabels && classes > 0)
      if (Error e = checkLabels(in.tensor, classes, train.loss.ignoreIndex))
        return fail("step " + std::to_string(step) +
                    (micro > 1 ? ", microbatch " + std::to_string(micro_j)
                               : std::string()) +
                    ": " + llvm::toString(std::move(e)));
    inputs.push_back(std::move(in));
  }
  return inputs;
}

Expected<StepResult> Trainer::step(int64_t k) {
  auto inputs = batch(k);
  if (!inputs)
    return inputs.takeError();
  StepResult r;
  r.step = k;
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
    return fail("step " + std::to_string(k) + ": " +
                llvm::toString(outputs.takeError()));
  r.ms = std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
             .count();
  // The root holds the loss; every process must agree on stopping.
  std::vector<distrt::NamedTensor> shared;
  if (runner->isRoot())
    for (const distrt::NamedTensor &o : outputs->front())
      if (o.name == kLossOutput || o.name == kGradNormOutput)
        shared.push_back(o);
  if (Error e = runner->shareFromRoot(shared))
    return std::move(e);
  for (const distrt::NamedTensor &o : shared) {
    double v = o.tensor.dtype() == distrt::DType::kF64
                   ? o.tensor.data<double>()[0]
                   : o.tensor.data<float>()[0];
    (o.name == kLossOutput ? r.loss : r.gradNorm) = v;
  }
  if (!std::isfinite(r.loss))
    return fail("step " + std::to_string(k) + ": the loss is " +
                (std::isnan(r.loss) ? "NaN" : "infinite") +
                "; training stopped (the parameters hold this step's update)");
  return r;
}

Error Trainer::saveCheckpoint(StringRef dir, int64_t stepsDone,
                              const CheckpointMeta &run, CheckpointIO *io) {
  CheckpointMeta meta = run;
  meta.step = stepsDone;
  meta.modelFile = modelPath;
  // Batches are a function of the step (see batch()): the data position
  // follows it; for a token file, as the count of tokens read.
  meta.dataSource = !options.dataDir.empty()      ? "data"
                    : !options.tokensFile.empty() ? "tokens"
                                                  : "random";
  meta.dataPosition = stepsDone;
  if (meta.dataSource == "tokens") {
    // Tokens per microbatch: the model input's rows times columns.
    auto protos = makeInputs(compiled, "", options.seed);
    if (!protos)
      return protos.takeError();
    int64_t perMicrobatch = 0;
    for (const distrt::NamedTensor &p : *protos)
      if (perMicrobatch == 0 && p.tensor.shape().size() == 2 &&
          p.tensor.dtype() == distrt::DType::kI64)
        perMicrobatch = p.tensor.num_elements();
    meta.dataPosition = stepsDone * microbatches * perMicrobatch;
  }
  return distopt::saveCheckpoint(*runner, compiled, dir, meta, io);
}

Expected<CheckpointMeta> Trainer::resume(StringRef dir, CheckpointIO *io) {
  return loadCheckpoint(*runner, compiled, dir, io);
}

Expected<std::vector<distrt::NamedTensor>> Trainer::trainedState() {
  return runner->persistentState();
}

Expected<std::vector<distrt::NamedTensor>>
distopt::runTrainedModel(mlir::MLIRContext &ctx, StringRef modelPath,
                         const std::vector<distrt::NamedTensor> &trained,
                         StringRef inputDir, StringRef workDir, int threads) {
  CompileOptions single;
  single.singleDevice = true;
  single.workDir = workDir.str();
  auto programs = compilePrograms(ctx, modelPath, single);
  if (!programs)
    return programs.takeError();
  // The trained tensors, one after another in one file the program's
  // weights point at.
  llvm::SmallString<256> file(workDir);
  llvm::sys::path::append(file, "trained-weights.bin");
  std::map<std::string, uint64_t> offsets;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    if (ec)
      return fail("cannot write " + file + ": " + ec.message());
    uint64_t at = 0;
    for (const distrt::NamedTensor &t : trained) {
      offsets[t.name] = at;
      os.write(static_cast<const char *>(t.tensor.raw()), t.tensor.byte_size());
      at += t.tensor.byte_size();
    }
  }
  Programs patched;
  for (const auto &p : *programs) {
    distrt::proto::RankProgram proto = p->proto();
    for (distrt::proto::Weight &w : *proto.mutable_weights()) {
      auto it = offsets.find(w.name());
      if (it == offsets.end())
        continue;
      w.set_file(file.str().str());
      w.set_offset(it->second);
    }
    std::shared_ptr<const distrt::Program> program;
    distrt::Status st = distrt::Program::Create(
        std::move(proto), "trained " + modelPath.str(), "", &program);
    if (!st.ok())
      return fail(st.ToString());
    patched.push_back(std::move(program));
  }
  auto inputs = makeInputs(patched, inputDir, 0);
  if (!inputs)
    return inputs.takeError();
  return runLocal(patched, *inputs, threads);
}

static int onnxType(distrt::DType t) {
  switch (t) {
  case distrt::DType::kF32:
    return onnx::TensorProto::FLOAT;
  case distrt::DType::kF64:
    return onnx::TensorProto::DOUBLE;
  case distrt::DType::kF16:
    return onnx::TensorProto::FLOAT16;
  case distrt::DType::kBF16:
    return onnx::TensorProto::BFLOAT16;
  default:
    return onnx::TensorProto::UNDEFINED;
  }
}

Error distopt::saveTrainedModel(StringRef modelPath,
                                const std::vector<distrt::NamedTensor> &trained,
                                StringRef out, bool mergeLora,
                                int *mergedLayers) {
  auto buffer = llvm::MemoryBuffer::getFile(modelPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("cannot read " + modelPath + ": " +
                buffer.getError().message());
  onnx::ModelProto model;
  if (!model.ParseFromArray((*buffer)->getBufferStart(),
                            static_cast<int>((*buffer)->getBufferSize())))
    return fail(modelPath + " is not an ONNX model");
  std::map<std::string, const distrt::Tensor *> byName;
  for (const distrt::NamedTensor &t : trained)
    byName[t.name] = &t.tensor;
  std::deque<distrt::Tensor> mergedWeights;
  if (mergeLora) {
    auto merged = mergeLoraAdapters(model, byName, mergedWeights);
    if (!merged)
      return merged.takeError();
    if (mergedLayers)
      *mergedLayers = *merged;
  }
  size_t total = 0;
  for (const auto &[name, t] : byName)
    total += t->byte_size();
  bool external = total > (size_t(1) << 30);
  llvm::SmallString<256> dataName(llvm::sys::path::filename(out));
  dataName += ".data";
  llvm::SmallString<256> dataPath(llvm::sys::path::parent_path(out));
  llvm::sys::path::append(dataPath, dataName);
  std::unique_ptr<llvm::raw_fd_ostream> data;
  if (external) {
    std::error_code ec;
    data = std::make_unique<llvm::raw_fd_ostream>(dataPath, ec);
    if (ec)
      return fail("cannot write " + dataPath + ": " + ec.message());
  }
  uint64_t at = 0;
  for (onnx::TensorProto &init :
       *model.mutable_graph()->mutable_initializer()) {
    auto it = byName.find(init.name());
    if (it == byName.end())
      continue;
    const distrt::Tensor &t = *it->second;
    if (onnxType(t.dtype()) != init.data_type())
      return fail("trained '" + init.name() + "' is " +
                  distrt::DTypeName(t.dtype()) +
                  ", not the initializer's element type");
    init.clear_float_data();
    init.clear_double_data();
    init.clear_int32_data();
    init.clear_raw_data();
    init.clear_external_data();
    init.set_data_location(onnx::TensorProto::DEFAULT);
    if (!external) {
      init.set_raw_data(t.raw(), t.byte_size());
      continue;
    }
    data->write(static_cast<const char *>(t.raw()), t.byte_size());
    init.set_data_location(onnx::TensorProto::EXTERNAL);
    auto entry = [&](const std::string &k, const std::string &v) {
      auto *e = init.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    entry("location", dataName.str().str());
    entry("offset", std::to_string(at));
    entry("length", std::to_string(t.byte_size()));
    at += t.byte_size();
  }
  // Initializers with external data that were not trained (frozen) keep
  // pointing at the original file: make the path absolute.
  llvm::SmallString<256> modelDir(llvm::sys::path::parent_path(modelPath));
  llvm::sys::fs::make_absolute(modelDir);
  for (onnx::TensorProto &init : *model.mutable_graph()->mutable_initializer())
    if (init.data_location() == onnx::TensorProto::EXTERNAL &&
        !byName.count(init.name()))
      for (auto &e : *init.mutable_external_data())
        if (e.key() == "location" && !llvm::sys::path::is_absolute(e.value())) {
          llvm::SmallString<256> p(modelDir);
          llvm::sys::path::append(p, e.value());
          e.set_value(p.str().str());
        }
  // Written to a temporary name, then renamed into place.
  llvm::SmallString<256> tmp(out);
  tmp += ".tmp";
  {
    std::ofstream os(tmp.str().str(), std::ios::binary);
    if (!os || !model.SerializeToOstream(&os))
      return fail("cannot write " + tmp);
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, out))
    return fail("cannot write " + out + ": " + ec.message());
  return Error::success();
}
