//===- OnnxTestCase.cpp - run one ONNX backend test case --------*- C++ -*-===//
#include "distopt/Check/OnnxTestCase.h"
#include "distopt/Data/Microbatches.h"
#include "distopt/Data/TensorProtoFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace llvm;
using namespace distopt;

static llvm::Error fail(const Twine &message) {
  return llvm::createStringError(message.str());
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
      return llvm::createStringError(
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
          return llvm::createStringError(
              "a batch of " + std::to_string(extent) + " does not split into " +
              std::to_string(microbatches) + " microbatches");
        extent /= microbatches;
      }
      options.dims[dims[d]] = extent;
    }
  }
  if (microbatches > 1 &&
      (symbols->empty() || (*symbols)[0].empty() || (*symbols)[0][0].empty()))
    return llvm::createStringError(
        "microbatching needs a model exported with a "
        "dynamic batch axis (input 0, dimension 0)");
  return options;
}

/// Largest ONNX test input whose values the importer may read.
constexpr int64_t kMaxImportReadableElements = 1 << 16;

/// Whether the importer may need a test input's values: backend tests feed
/// as inputs operands the importer needs as values (Reshape shapes, Slice
/// bounds, axes, pads, repeats, a Pad value, Range bounds...).
static bool importerMayRead(const distrt::Tensor &t) {
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

static InputValues inputValuesOf(const distrt::Tensor &t) {
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

/// ONNX's backend tests store bfloat16 data as UINT16 tensors of the same
/// bits: `t` as bf16 where it is such a stand-in for a bf16 value.
static distrt::Tensor bf16FromStandIn(distrt::Tensor t, bool wantBF16) {
  if (!wantBF16 || t.dtype() != distrt::DType::kU16)
    return t;
  distrt::Tensor out;
  if (!distrt::Tensor::Allocate(distrt::DType::kBF16, t.shape(), &out).ok())
    return t;
  if (t.byte_size() > 0)
    std::memcpy(out.raw(), t.raw(), t.byte_size());
  return out;
}

/// Reads a data set's inputs, named after the graph inputs (input_<i>.pb is
/// graph input i unless the file names its tensor).
static Expected<std::vector<distrt::NamedTensor>>
readTestInputs(StringRef model, StringRef set) {
  auto shapes = graphInputShapes(model);
  if (!shapes)
    return shapes.takeError();
  std::vector<std::string> storage;
  for (const GraphInputShape &s : *shapes)
    storage.push_back(s.name);
  const std::vector<std::string> *names = &storage;
  constexpr int kOnnxBFloat16 = 16;
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
      return llvm::createStringError(path +
                                     " names no tensor and the model has "
                                     "only " +
                                     std::to_string(names->size()) + " inputs");
    bool bf16 = false;
    for (const GraphInputShape &s : *shapes)
      bf16 |= s.name == name && s.elementType == kOnnxBFloat16;
    fed.push_back({name, bf16FromStandIn(std::move(*t), bf16)});
  }
  return fed;
}

Expected<OnnxTestOutcome> distopt::runOnnxTestCase(
    mlir::MLIRContext &ctx, StringRef caseDir, const CompileOptions &base,
    const RunSettings &settings, const Tolerances &tolerances) {
  SmallString<256> model(caseDir);
  sys::path::append(model, "model.onnx");
  // Each data set's inputs compile the model with their own dimensions and
  // (unless split into microbatches, which see other values) the values the
  // importer may read where an op needs one.
  int64_t microbatches = base.plan.microbatches();
  OnnxTestOutcome outcome;
  for (int k = 0;; ++k) {
    SmallString<256> set(caseDir);
    sys::path::append(set, "test_data_set_" + std::to_string(k));
    if (!sys::fs::is_directory(set))
      break;
    auto inputs = readTestInputs(model, set);
    if (!inputs)
      return inputs.takeError();
    auto options = bindDims(model, *inputs, base, microbatches);
    if (!options)
      return options.takeError();
    if (microbatches == 1)
      for (const distrt::NamedTensor &t : *inputs)
        if (importerMayRead(t.tensor))
          options->inputValues[t.name] = inputValuesOf(t.tensor);
    auto programs = compilePrograms(ctx, model, *options);
    if (!programs)
      return programs.takeError();
    std::vector<std::vector<distrt::NamedTensor>> perMicrobatch{*inputs};
    if (microbatches > 1) {
      auto split = splitBatch(*inputs, microbatches);
      if (!split)
        return split.takeError();
      perMicrobatch = std::move(*split);
    }
    auto session = createSession(*programs, settings);
    if (!session)
      return session.takeError();
    auto ran = (*session)->run(perMicrobatch);
    if (!ran)
      return fail(set + ": " + toString(ran.takeError()));
    ++outcome.dataSets;
    if (!(*session)->isRoot())
      continue;
    auto got = concatBatch(*ran);
    if (!got)
      return got.takeError();
    for (size_t i = 0;; ++i) {
      SmallString<256> path(set);
      sys::path::append(path, "output_" + std::to_string(i) + ".pb");
      if (!sys::fs::exists(path)) {
        if (i != got->size())
          return fail(set + " has " + Twine(i) +
                      " expected outputs but the model produced " +
                      Twine(got->size()));
        break;
      }
      if (i >= got->size())
        return fail(set + " expects more outputs than the model produced");
      auto expected = readTensorProto(path);
      if (!expected)
        return expected.takeError();
      *expected = bf16FromStandIn(
          std::move(*expected),
          (*got)[i].tensor.dtype() == distrt::DType::kBF16);
      Comparison c = compareTensors((*got)[i].tensor, *expected,
                                    tolerances.rtol, tolerances.atol);
      outcome.maxAbsDiff = std::max(outcome.maxAbsDiff, c.maxAbs);
      if (!c.ok) {
        outcome.passed = false;
        outcome.failure = "output " + std::to_string(i) + " ('" +
                          (*got)[i].name + "') of test_data_set_" +
                          std::to_string(k) + ": " + c.message;
        return outcome;
      }
      ++outcome.outputs;
    }
  }
  if (outcome.dataSets == 0)
    return fail(caseDir + " has no test_data_set_0");
  return outcome;
}
