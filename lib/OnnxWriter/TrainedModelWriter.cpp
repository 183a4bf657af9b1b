//===- TrainedModelWriter.cpp - write a trained model as ONNX -------------===//
#include "distopt/OnnxWriter/TrainedModelWriter.h"
#include "distopt/Support/WritableTarget.h"
#include "distopt/OnnxWriter/FloatDtype.h"
#include "distopt/OnnxWriter/LoraMerge.h"

#include "onnx/onnx_pb.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>
#include <fstream>
#include <map>

using namespace distopt;
using llvm::Error;
using llvm::StringRef;

static Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

/// The importer trains each parameter the exporter merged into one
/// initializer (read through an Identity named after the parameter) on its
/// own: each trained one becomes its own initializer again, in place of its
/// Identity node. So does a frozen one whose initializer trains (a DPO
/// reference that started as the policy), keeping the initial value that
/// the Identity would otherwise no longer give it.
static void splitMergedInitializers(
    onnx::GraphProto &graph,
    const std::map<std::string, const distrt::Tensor *> &trained) {
  std::map<std::string, int> initializerAt;
  for (int i = 0; i < graph.initializer_size(); ++i)
    initializerAt[graph.initializer(i).name()] = i;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    bool merged = node.op_type() == "Identity" && node.input_size() == 1 &&
                  node.output_size() == 1 &&
                  initializerAt.count(node.input(0)) &&
                  !initializerAt.count(node.output(0));
    bool trains = merged && trained.count(node.output(0));
    bool keepsInitial =
        merged && !trains && trained.count(node.input(0));
    if (!trains && !keepsInitial) {
      *kept.Add() = std::move(node);
      continue;
    }
    const onnx::TensorProto &from =
        graph.initializer(initializerAt[node.input(0)]);
    onnx::TensorProto *init = graph.add_initializer();
    if (keepsInitial) {
      *init = from; // the stored initial value (the trained one replaces
                    // only the initializer under its own name)
    } else {
      init->set_data_type(from.data_type());
      *init->mutable_dims() = from.dims();
    }
    init->set_name(node.output(0));
  }
  graph.mutable_node()->Swap(&kept);
}

Error distopt::checkTrainedModelTarget(llvm::StringRef out) {
  if (llvm::sys::fs::is_directory(out))
    return fail("cannot write the trained model to " + out +
                ": it is a directory");
  return checkWritableParent(out, "cannot write the trained model to " + out,
                             /*missingParentsAllowed=*/false);
}

Error distopt::saveTrainedModel(StringRef modelPath,
                                const std::vector<distrt::NamedTensor> &trained,
                                StringRef out, bool mergeLora,
                                int *mergedLayers,
                                std::optional<distrt::DType> saveDtype) {
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
  splitMergedInitializers(*model.mutable_graph(), byName);
  llvm::SmallString<256> modelDir(llvm::sys::path::parent_path(modelPath));
  llvm::sys::fs::make_absolute(modelDir);
  if (saveDtype)
    if (Error e = convertFloatGraph(
            model, *saveDtype, modelDir,
            [&](const std::string &name) { return byName.count(name) > 0; }))
      return e;
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
  std::deque<std::string> converted;
  uint64_t at = 0;
  for (onnx::TensorProto &init :
       *model.mutable_graph()->mutable_initializer()) {
    auto it = byName.find(init.name());
    if (it == byName.end())
      continue;
    const distrt::Tensor &t = *it->second;
    // Each parameter in its initializer's dtype (an f32 master of a bf16
    // model's weight is rounded back), or all in --save-dtype's.
    distrt::DType want;
    if (saveDtype && isConvertibleFloat(t.dtype()))
      want = *saveDtype;
    else if (!distrt::DTypeFromOnnx(init.data_type(), &want).ok())
      want = distrt::DType::kUnspecified;
    const void *bytes = t.raw();
    size_t size = t.byte_size();
    if (want != t.dtype()) {
      if (!isConvertibleFloat(t.dtype()) || !isConvertibleFloat(want))
        return fail("trained '" + init.name() + "' is " +
                    distrt::DTypeName(t.dtype()) +
                    ", not the initializer's element type");
      const std::string &c = converted.emplace_back(
          convertFloats(t.raw(), t.dtype(), want, t.num_elements()));
      bytes = c.data();
      size = c.size();
    }
    init.set_data_type(distrt::OnnxTypeOf(want));
    init.clear_float_data();
    init.clear_double_data();
    init.clear_int32_data();
    init.clear_raw_data();
    init.clear_external_data();
    init.set_data_location(onnx::TensorProto::DEFAULT);
    if (!external) {
      init.set_raw_data(bytes, size);
      continue;
    }
    data->write(static_cast<const char *>(bytes), size);
    init.set_data_location(onnx::TensorProto::EXTERNAL);
    auto entry = [&](const std::string &k, const std::string &v) {
      auto *e = init.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    entry("location", dataName.str().str());
    entry("offset", std::to_string(at));
    entry("length", std::to_string(size));
    at += size;
  }
  // Initializers with external data that were not trained (frozen) keep
  // pointing at the original file: make the path absolute.
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
