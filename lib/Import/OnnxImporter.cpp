//===- OnnxImporter.cpp - ONNX models into the nn dialect -------*- C++ -*-===//
#include "distopt/Import/OnnxImporter.h"

#include "ImportContext.h"
#include "ModelReader.h"

#include "dist/IR/DistDialect.h"
#include "nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

const llvm::StringMap<Handler> &handlerTable() {
  static const llvm::StringMap<Handler> table = [] {
    llvm::StringMap<Handler> t;
    addElementwiseHandlers(t);
    addTensorHandlers(t);
    addNetworkHandlers(t);
    return t;
  }();
  return table;
}

/// Ops whose results are entirely computed at import (shape arithmetic on
/// known values) need no handler.
bool foldOnly(StringRef op) {
  return op == "Shape" || op == "Size" || op == "Constant";
}

class Importer {
public:
  Importer(MLIRContext &ctx, StringRef path, const ImportOptions &options)
      : ctx(ctx), path(path.str()), options(options), b(&ctx),
        fileLoc(FileLineColLoc::get(&ctx, path, 0, 0)) {}

  OwningOpRef<ModuleOp> run();

private:
  InFlightDiagnostic error() { return emitError(fileLoc) << path << ": "; }
  FailureOr<RankedTensorType> valueInfoType(const onnx::ValueInfoProto &info,
                                            StringRef what);
  LogicalResult importInitializer(const onnx::TensorProto &t,
                                  const RawDataRef &raw);
  LogicalResult importConstantNode(ImportContext &ictx);
  FailureOr<DenseElementsAttr> typedData(const onnx::TensorProto &t,
                                         RankedTensorType type);
  std::optional<Known> readKnown(const uint8_t *data, RankedTensorType type);

  MLIRContext &ctx;
  std::string path;
  const ImportOptions &options;
  OpBuilder b;
  Location fileLoc;
  int64_t opset = 0;
  onnximport::LoadedModel model;
  llvm::StringMap<Tensor> values;
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> externalFiles;
};

} // namespace

FailureOr<RankedTensorType>
Importer::valueInfoType(const onnx::ValueInfoProto &info, StringRef what) {
  if (!info.type().has_tensor_type())
    return error() << what << " '" << info.name() << "' is not a tensor";
  const auto &tt = info.type().tensor_type();
  Type et = elementTypeOf(&ctx, tt.elem_type());
  if (!et)
    return error() << what << " '" << info.name()
                   << "' has unsupported element type " << tt.elem_type();
  if (!tt.has_shape())
    return error() << what << " '" << info.name() << "' has no shape";
  SmallVector<int64_t> shape;
  for (auto [i, dim] : llvm::enumerate(tt.shape().dim())) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
      continue;
    }
    if (dim.has_dim_param()) {
      auto it = options.dims.find(dim.dim_param());
      if (it == options.dims.end())
        return error() << what << " '" << info.name() << "' dimension " << i
                       << " is the symbol '" << dim.dim_param()
                       << "'; bind it with --dim " << dim.dim_param() << "=N";
      shape.push_back(it->second);
      continue;
    }
    return error() << what << " '" << info.name() << "' dimension " << i
                   << " has no size; this model needs shapes on its inputs";
  }
  return RankedTensorType::get(shape, et);
}

std::optional<Known> Importer::readKnown(const uint8_t *data,
                                         RankedTensorType type) {
  Type et = type.getElementType();
  int64_t n = type.getNumElements();
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  if (et.isInteger(64) || et.isInteger(32)) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < n; ++i) {
      if (et.isInteger(64)) {
        int64_t x;
        std::memcpy(&x, data + 8 * i, 8);
        v.push_back(x);
      } else {
        int32_t x;
        std::memcpy(&x, data + 4 * i, 4);
        v.push_back(x);
      }
    }
    return Known::ofInts(shape, v);
  }
  if (et.isF32() || et.isF64()) {
    std::vector<double> v;
    for (int64_t i = 0; i < n; ++i) {
      if (et.isF32()) {
        float x;
        std::memcpy(&x, data + 4 * i, 4);
        v.push_back(x);
      } else {
        double x;
        std::memcpy(&x, data + 8 * i, 8);
        v.push_back(x);
      }
    }
    return Known::ofFloats(shape, v);
  }
  return std::nullopt;
}

FailureOr<DenseElementsAttr> Importer::typedData(const onnx::TensorProto &t,
                                                 RankedTensorType type) {
  Type et = type.getElementType();
  int64_t n = type.getNumElements();
  SmallVector<Attribute> elements;
  auto need = [&](int64_t have) -> LogicalResult {
    if (have != n)
      return error() << "tensor '" << t.name() << "' holds " << have
                     << " values but its shape needs " << n;
    return success();
  };
  if (et.isF32()) {
    if (failed(need(t.float_data_size())))
      return failure();
    for (float f : t.float_data())
      elements.push_back(b.getF32FloatAttr(f));
  } else if (et.isF64()) {
    if (failed(need(t.double_data_size())))
      return failure();
    for (double d : t.double_data())
      elements.push_back(b.getF64FloatAttr(d));
  } else if (et.isInteger(64)) {
    if (failed(need(t.int64_data_size())))
      return failure();
    for (int64_t i : t.int64_data())
      elements.push_back(b.getI64IntegerAttr(i));
  } else if (et.isInteger(1)) {
    if (failed(need(t.int32_data_size())))
      return failure();
    for (int32_t i : t.int32_data())
      elements.push_back(b.getBoolAttr(i != 0));
  } else if (isa<IntegerType>(et)) {
    if (failed(need(t.int32_data_size())))
      return failure();
    for (int32_t i : t.int32_data())
      elements.push_back(IntegerAttr::get(et, i));
  } else if (et.isF16() || et.isBF16()) {
    if (failed(need(t.int32_data_size())))
      return failure();
    for (int32_t bits : t.int32_data())
      elements.push_back(FloatAttr::get(
          et, APFloat(cast<FloatType>(et).getFloatSemantics(),
                      APInt(16, static_cast<uint16_t>(bits)))));
  } else {
    return error() << "tensor '" << t.name() << "' has an unsupported type";
  }
  return DenseElementsAttr::get(type, elements);
}

static int64_t elementBytes(Type et) {
  return et.isInteger(1) ? 1 : (et.getIntOrFloatBitWidth() + 7) / 8;
}

LogicalResult Importer::importInitializer(const onnx::TensorProto &t,
                                          const RawDataRef &raw) {
  Type et = elementTypeOf(&ctx, t.data_type());
  if (!et)
    return error() << "initializer '" << t.name()
                   << "' has unsupported element type " << t.data_type();
  SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      return error() << "initializer '" << t.name() << "' has a negative dimension";
  auto type = RankedTensorType::get(shape, et);
  int64_t bytes = type.getNumElements() * elementBytes(et);
  Location loc = NameLoc::get(b.getStringAttr(t.name()), fileLoc);
  Tensor tensor;
  tensor.type = type;

  std::string file;
  uint64_t offset = 0;
  const uint8_t *data = nullptr;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t length = -1;
    for (const auto &kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoull(kv.value());
      else if (kv.key() == "length")
        length = std::stoll(kv.value());
    }
    if (location.empty())
      return error() << "initializer '" << t.name()
                     << "' is external but names no location";
    // The data must stay inside the model's directory.
    SmallString<128> normal(location);
    llvm::sys::path::remove_dots(normal, /*remove_dot_dot=*/false);
    bool escapes = llvm::sys::path::is_absolute(location) ||
                   llvm::any_of(llvm::make_range(llvm::sys::path::begin(normal),
                                                 llvm::sys::path::end(normal)),
                                [](StringRef c) { return c == ".."; });
    if (escapes)
      return error() << "initializer '" << t.name() << "' points at '"
                     << location
                     << "', outside the model's directory; external data must "
                        "be a relative path inside it";
    if (length >= 0 && length != bytes)
      return error() << "initializer '" << t.name() << "' has length " << length
                     << " but its shape and type need " << bytes << " bytes";
    SmallString<256> full(llvm::sys::path::parent_path(path));
    llvm::sys::path::append(full, location);
    uint64_t size;
    if (llvm::sys::fs::file_size(full, size))
      return error() << "initializer '" << t.name()
                     << "': external data file '" << location << "' is missing";
    if (offset + bytes > size)
      return error() << "initializer '" << t.name() << "' needs bytes "
                     << offset << ".." << offset + bytes << " of '" << location
                     << "' which has " << size;
    file = location;
    if (et.isIntOrIndex() && type.getNumElements() <= 64) {
      auto buf = llvm::MemoryBuffer::getFileSlice(full, bytes, offset);
      if (buf) {
        tensor.known = readKnown(
            reinterpret_cast<const uint8_t *>((*buf)->getBufferStart()), type);
      }
    }
  } else if (raw.present) {
    if (static_cast<int64_t>(raw.length) != bytes)
      return error() << "initializer '" << t.name() << "' has " << raw.length
                     << " bytes of raw data but its shape and type need "
                     << bytes;
    file = llvm::sys::path::filename(path).str();
    offset = raw.offset;
    data = reinterpret_cast<const uint8_t *>(model.file->getBufferStart()) +
           raw.offset;
  } else {
    FailureOr<DenseElementsAttr> dense = typedData(t, type);
    if (failed(dense))
      return failure();
    tensor.value = nn::ConstantOp::create(b, loc, type, *dense);
    if (isa<IntegerType>(et) && type.getNumElements() <= kMaxFoldElements) {
      std::vector<int64_t> v;
      for (APInt i : dense->getValues<APInt>())
        v.push_back(et.isInteger(1) ? i.getZExtValue() : i.getSExtValue());
      tensor.known = Known::ofInts(std::vector<int64_t>(shape.begin(), shape.end()), v);
    }
    values[t.name()] = tensor;
    return success();
  }
  // Small integer tensors often feed shape arithmetic: know their values.
  if (data && isa<IntegerType>(et) && !et.isInteger(1) &&
      type.getNumElements() <= 64)
    tensor.known = readKnown(data, type);
  tensor.value = nn::WeightOp::create(b, loc, type, b.getStringAttr(t.name()),
                                      b.getStringAttr(file),
                                      b.getI64IntegerAttr(offset),
                                      DenseI64ArrayAttr(), DenseI64ArrayAttr());
  values[t.name()] = tensor;
  return success();
}

LogicalResult Importer::importConstantNode(ImportContext &ictx) {
  const onnx::NodeProto &node = ictx.node;
  if (node.attribute_size() != 1)
    return ictx.error() << "expects exactly one value attribute";
  const onnx::AttributeProto &a = node.attribute(0);
  StringRef name = a.name();
  if (name == "value") {
    const onnx::TensorProto &t = a.t();
    Type et = elementTypeOf(&ctx, t.data_type());
    if (!et)
      return ictx.error() << "unsupported constant element type " << t.data_type();
    SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
    auto type = RankedTensorType::get(shape, et);
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      return ictx.error() << "external data in a Constant node is not supported";
    if (t.has_raw_data()) {
      int64_t bytes = type.getNumElements() * elementBytes(et);
      if (static_cast<int64_t>(t.raw_data().size()) != bytes)
        return ictx.error() << "raw data holds " << t.raw_data().size()
                            << " bytes, the shape needs " << bytes;
      auto dense = DenseElementsAttr::getFromRawBuffer(
          type, ArrayRef<char>(t.raw_data().data(), t.raw_data().size()));
      if (et.isInteger(1)) {
        SmallVector<bool> bits;
        for (char c : t.raw_data())
          bits.push_back(c != 0);
        dense = DenseElementsAttr::get(type, bits);
      }
      Tensor tensor;
      tensor.type = type;
      if (type.getNumElements() <= kMaxFoldElements)
        tensor.known = readKnown(reinterpret_cast<const uint8_t *>(t.raw_data().data()), type);
      tensor.value = nn::ConstantOp::create(b, ictx.loc, type, dense);
      values[node.output(0)] = tensor;
      return success();
    }
    FailureOr<DenseElementsAttr> dense = typedData(t, type);
    if (failed(dense))
      return failure();
    Tensor tensor;
    tensor.type = type;
    tensor.value = nn::ConstantOp::create(b, ictx.loc, type, *dense);
    if (type.getNumElements() <= kMaxFoldElements) {
      if (isa<IntegerType>(et)) {
        std::vector<int64_t> v;
        for (APInt i : dense->getValues<APInt>())
          v.push_back(et.isInteger(1) ? i.getZExtValue() : i.getSExtValue());
        tensor.known = Known::ofInts(std::vector<int64_t>(shape.begin(), shape.end()), v);
      } else if (et.isF32() || et.isF64()) {
        std::vector<double> v;
        for (APFloat f : dense->getValues<APFloat>())
          v.push_back(f.convertToDouble());
        tensor.known = Known::ofFloats(std::vector<int64_t>(shape.begin(), shape.end()), v);
      }
    }
    values[node.output(0)] = tensor;
    return success();
  }
  if (name == "value_int") {
    ictx.setKnownOutput(0, Known::ofInts({}, {a.i()}), b.getI64Type());
    return success();
  }
  if (name == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    int64_t n = v.size();
    ictx.setKnownOutput(0, Known::ofInts({n}, v), b.getI64Type());
    return success();
  }
  if (name == "value_float") {
    ictx.setKnownOutput(0, Known::ofFloats({}, {a.f()}), b.getF32Type());
    return success();
  }
  if (name == "value_floats") {
    std::vector<double> v(a.floats().begin(), a.floats().end());
    int64_t n = v.size();
    ictx.setKnownOutput(0, Known::ofFloats({n}, v), b.getF32Type());
    return success();
  }
  return ictx.error() << "constant attribute '" << name << "' is not supported";
}

OwningOpRef<ModuleOp> Importer::run() {
  ctx.loadDialect<nn::NNDialect, func::FuncDialect, dist::DistDialect>();
  auto loaded = readModel(path);
  if (!loaded) {
    emitError(fileLoc) << llvm::toString(loaded.takeError());
    return nullptr;
  }
  model = std::move(*loaded);
  for (const auto &imp : model.model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      opset = imp.version();
  if (opset == 0) {
    error() << "the model imports no version of the default ONNX opset";
    return nullptr;
  }
  if (opset < 7) {
    error() << "opset " << opset << " is older than 7, the oldest supported";
    return nullptr;
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr("nn.model_path", b.getStringAttr(path));
  (*module)->setAttr("nn.opset", b.getI64IntegerAttr(opset));
  const onnx::GraphProto &graph = model.model.graph();

  llvm::StringSet<> initializerNames;
  for (const auto &t : graph.initializer())
    initializerNames.insert(t.name());

  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const onnx::ValueInfoProto &in : graph.input()) {
    if (initializerNames.contains(in.name()))
      continue;
    FailureOr<RankedTensorType> t = valueInfoType(in, "input");
    if (failed(t))
      return nullptr;
    argTypes.push_back(*t);
    argNames.push_back(in.name());
  }
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, fileLoc, "main",
                                   b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  for (auto [i, name] : llvm::enumerate(argNames)) {
    Tensor t;
    t.value = entry->getArgument(i);
    t.type = cast<RankedTensorType>(argTypes[i]);
    values[name] = t;
    func.setArgAttr(i, "nn.name", b.getStringAttr(name));
  }

  for (int i = 0; i < graph.initializer_size(); ++i)
    if (failed(importInitializer(graph.initializer(i), model.rawData[i])))
      return nullptr;

  const llvm::StringMap<Handler> &table = handlerTable();
  for (const onnx::NodeProto &node : graph.node()) {
    std::string name = node.name().empty() ? node.op_type() : node.name();
    Location loc = NameLoc::get(b.getStringAttr(name), fileLoc);
    ImportContext ictx(b, values, node, opset, loc);
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      ictx.error() << "operator domain '" << node.domain()
                   << "' is not supported (only the default ONNX domain)";
      return nullptr;
    }
    for (unsigned i = 0; i < ictx.numInputs(); ++i)
      if (ictx.hasInput(i) && !values.count(node.input(i))) {
        ictx.error() << "input " << i << " '" << node.input(i)
                     << "' is not produced by any earlier node, input or "
                        "initializer";
        return nullptr;
      }
    LogicalResult r = success();
    if (node.op_type() == "Constant") {
      r = importConstantNode(ictx);
    } else if (std::optional<LogicalResult> folded = tryFold(ictx)) {
      r = *folded;
    } else {
      auto it = table.find(node.op_type());
      if (it == table.end()) {
        ictx.error() << "operator '" << node.op_type()
                     << "' is not supported by the importer";
        return nullptr;
      }
      if (foldOnly(node.op_type())) {
        ictx.error() << "could not evaluate this node at import";
        return nullptr;
      }
      r = it->second(ictx);
    }
    if (failed(r))
      return nullptr;
    for (int o = 0; o < node.output_size(); ++o)
      if (!node.output(o).empty() && !values.count(node.output(o))) {
        ictx.error() << "output " << o << " '" << node.output(o)
                     << "' is not supported";
        return nullptr;
      }
  }

  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) {
      error() << "graph output '" << out.name() << "' is never produced";
      return nullptr;
    }
    Tensor &t = it->second;
    if (!t.value) {
      ImportContext ictx(b, values, graph.node(0), opset, fileLoc);
      t.value = ictx.materialize(*t.known, t.type.getElementType());
    }
    results.push_back(t.value);
  }
  func::ReturnOp::create(b, fileLoc, results);
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setType(b.getFunctionType(argTypes, resultTypes));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "nn.name", b.getStringAttr(out.name()));

  // Unused weights and constants only cost parsing time; drop them.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (isa<nn::WeightOp, nn::ConstantOp>(op) && op.use_empty())
      op.erase();
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> distopt::importOnnxModel(MLIRContext &ctx,
                                               StringRef path,
                                               const ImportOptions &options) {
  Importer importer(ctx, path, options);
  return importer.run();
}

llvm::Expected<std::vector<std::vector<std::string>>>
distopt::inputDimensionSymbols(StringRef path) {
  auto loaded = readModel(path);
  if (!loaded)
    return loaded.takeError();
  const onnx::GraphProto &graph = loaded->model.graph();
  llvm::StringSet<> initializers;
  for (const auto &t : graph.initializer())
    initializers.insert(t.name());
  std::vector<std::vector<std::string>> out;
  for (const onnx::ValueInfoProto &in : graph.input()) {
    if (initializers.contains(in.name()))
      continue;
    std::vector<std::string> dims;
    for (const auto &d : in.type().tensor_type().shape().dim())
      dims.push_back(d.has_dim_param() ? d.dim_param() : "");
    out.push_back(std::move(dims));
  }
  return out;
}
