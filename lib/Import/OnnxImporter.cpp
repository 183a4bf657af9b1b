//===- OnnxImporter.cpp - ONNX models into the nn dialect -------*- C++ -*-===//
//
// The driver: reads the model without copying weights (ModelReader), binds
// symbolic input dimensions, turns initializers into nn.weight references
// (or nn.constant for typed data), then imports the nodes in order through
// the op table, folding shape arithmetic on known values, and finally
// returns the graph outputs and drops what nothing uses.
//
//===----------------------------------------------------------------------===//
#include "distopt/Import/OnnxImporter.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Import/ModelReader.h"

#include "FuseGelu.h"
#include "ImportContext.h"
#include "KnownFolding.h"

#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

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
                                  ArrayRef<char> raw, bool hasRaw);
  FailureOr<ArrayRef<char>> externalData(const onnx::TensorProto &t,
                                         int64_t bytes, std::string &file,
                                         uint64_t &offset);
  FailureOr<Known> inputValueHint(const onnx::ValueInfoProto &info,
                                  RankedTensorType type,
                                  const InputValues &given);
  LogicalResult importNode(const onnx::NodeProto &node, int index);
  bool splitMergedInitializer(const onnx::NodeProto &node);
  void describeParameters(const onnx::GraphProto &graph);
  LogicalResult checkOutputType(const onnx::ValueInfoProto &info,
                                RankedTensorType computed);

  MLIRContext &ctx;
  std::string path;
  const ImportOptions &options;
  OpBuilder b;
  Location fileLoc;
  int64_t opset = 0;
  LoadedModel model;
  llvm::StringMap<Tensor> values;
  /// Which node (index) produces each value, for "used before defined".
  llvm::StringMap<int> producer;
  llvm::StringMap<std::unique_ptr<llvm::MemoryBuffer>> externalFiles;
  /// Per merged initializer, the parameter names split off it, in order.
  llvm::MapVector<StringRef, SmallVector<std::string>> splitOff;
  /// The graph's output names (an Identity onto one is no parameter).
  llvm::StringSet<> graphOutputs;
};

} // namespace

FailureOr<RankedTensorType>
Importer::valueInfoType(const onnx::ValueInfoProto &info, StringRef what) {
  if (!info.type().has_tensor_type())
    return error() << what << " '" << info.name()
                   << "' is not a tensor (sequences, maps and optionals are "
                      "not supported)";
  const auto &tt = info.type().tensor_type();
  Type et = elementTypeOfOnnx(&ctx, tt.elem_type());
  if (!et)
    return error() << what << " '" << info.name() << "' has element type "
                   << dataTypeName(tt.elem_type())
                   << ", which is not supported";
  if (!tt.has_shape())
    return error() << what << " '" << info.name()
                   << "' has no shape; distopt needs the rank and a size (or "
                      "a named symbol) for every dimension";
  SmallVector<int64_t> shape;
  for (auto [i, dim] : llvm::enumerate(tt.shape().dim())) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        return error() << what << " '" << info.name() << "' dimension " << i
                       << " has negative size " << dim.dim_value();
      shape.push_back(dim.dim_value());
      continue;
    }
    if (dim.has_dim_param() && !dim.dim_param().empty()) {
      auto it = options.dims.find(dim.dim_param());
      if (it == options.dims.end())
        return error() << what << " '" << info.name() << "' dimension " << i
                       << " is the symbol '" << dim.dim_param()
                       << "'; bind it with --dim " << dim.dim_param() << "=N";
      if (it->second < 0)
        return error() << "symbol '" << dim.dim_param()
                       << "' is bound to a negative size";
      shape.push_back(it->second);
      continue;
    }
    return error() << what << " '" << info.name() << "' dimension " << i
                   << " has neither a size nor a symbol; distopt needs "
                      "static shapes on graph inputs";
  }
  if (checkedNumElements(shape) < 0)
    return error() << what << " '" << info.name() << "' is too large";
  return RankedTensorType::get(shape, et);
}

/// A graph input with values given in the options: a known value (not an
/// argument), checked against the input's declared type.
/// The given values of graph input `info` (of type `type`, dims bound) as a
/// known value, after checking them against the input.
FailureOr<Known> Importer::inputValueHint(const onnx::ValueInfoProto &info,
                                          RankedTensorType type,
                                          const InputValues &given) {
  auto fail = [&]() {
    return error() << "value given for input '" << info.name() << "' ";
  };
  ArrayRef<int64_t> shape = type.getShape();
  if (given.shape && ArrayRef<int64_t>(*given.shape) != shape) {
    std::string got, declared;
    llvm::raw_string_ostream gs(got), ds(declared);
    gs << "[";
    llvm::interleaveComma(*given.shape, gs);
    gs << "]";
    ds << "[";
    llvm::interleaveComma(shape, ds);
    ds << "]";
    return fail() << "has shape " << got << " but the input has shape "
                  << declared;
  }
  int64_t n = type.getNumElements();
  if (n > kMaxFoldElements)
    return fail() << "has " << n << " elements; at most " << kMaxFoldElements
                  << " can be read at import";
  Type et = type.getElementType();
  bool isFloatType = isa<FloatType>(et);
  if (given.isFloat && !isFloatType)
    return fail() << "is floating-point but the input has element type " << et;
  int64_t have = given.isFloat ? given.floats.size() : given.ints.size();
  if (have != n)
    return fail() << "has " << have << " values but the input's shape needs "
                  << n;
  std::vector<int64_t> dims(shape.begin(), shape.end());
  if (isFloatType) {
    std::vector<double> v =
        given.isFloat
            ? given.floats
            : std::vector<double>(given.ints.begin(), given.ints.end());
    if (et.isF32())
      for (double &x : v)
        x = static_cast<float>(x);
    return Known::ofFloats(std::move(dims), std::move(v));
  }
  std::vector<int64_t> v = given.ints;
  if (et.isInteger(1))
    for (int64_t &x : v)
      x = x != 0;
  return Known::ofInts(std::move(dims), std::move(v));
}

/// Checks an external-data location and maps the file; returns the tensor's
/// bytes.
FailureOr<ArrayRef<char>> Importer::externalData(const onnx::TensorProto &t,
                                                 int64_t bytes,
                                                 std::string &file,
                                                 uint64_t &offset) {
  std::string location;
  std::optional<uint64_t> length;
  offset = 0;
  for (const auto &kv : t.external_data()) {
    StringRef value = kv.value();
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      if (value.getAsInteger(10, offset))
        return error() << "initializer '" << t.name()
                       << "' has an invalid external data offset '" << value
                       << "'";
    } else if (kv.key() == "length") {
      uint64_t n;
      if (value.getAsInteger(10, n))
        return error() << "initializer '" << t.name()
                       << "' has an invalid external data length '" << value
                       << "'";
      length = n;
    }
  }
  if (location.empty())
    return error() << "initializer '" << t.name()
                   << "' has external data but names no location";
  // The data must stay inside the model's directory: a relative path without
  // '..' components.
  SmallVector<StringRef> parts;
  StringRef(location).split(parts, '/');
  SmallVector<StringRef> pieces;
  for (StringRef p : parts)
    p.split(pieces, '\\');
  bool escapes = location.front() == '/' || location.front() == '\\' ||
                 llvm::sys::path::is_absolute(location) ||
                 (location.size() > 1 && location[1] == ':') ||
                 llvm::is_contained(pieces, "..");
  if (escapes)
    return error() << "initializer '" << t.name() << "' points at '" << location
                   << "', outside the model's directory; external data must "
                      "be a relative path inside it (no '..', not absolute)";
  if (length && *length != static_cast<uint64_t>(bytes))
    return error() << "initializer '" << t.name() << "' has external length "
                   << *length << " but its shape and type need " << bytes
                   << " bytes";
  SmallString<256> full(llvm::sys::path::parent_path(path));
  llvm::sys::path::append(full, location);
  auto &buffer = externalFiles[location];
  if (!buffer) {
    if (!llvm::sys::fs::is_regular_file(full))
      return error() << "initializer '" << t.name() << "': external data file '"
                     << location << "' is missing (looked for " << full << ")";
    auto mapped = llvm::MemoryBuffer::getFile(full, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!mapped)
      return error() << "initializer '" << t.name()
                     << "': cannot read external data file '" << location
                     << "': " << mapped.getError().message();
    buffer = std::move(*mapped);
  }
  uint64_t size = buffer->getBufferSize();
  if (offset > size || static_cast<uint64_t>(bytes) > size - offset)
    return error() << "initializer '" << t.name() << "' needs bytes [" << offset
                   << ", " << offset + bytes << ") of '" << location
                   << "', which has " << size << " bytes";
  file = location;
  return ArrayRef<char>(buffer->getBufferStart() + offset, bytes);
}

LogicalResult Importer::importInitializer(const onnx::TensorProto &t,
                                          ArrayRef<char> raw, bool hasRaw) {
  if (t.name().empty())
    return error() << "an initializer has no name";
  if (values.count(t.name()))
    return error() << "initializer '" << t.name() << "' is defined twice";
  Type et = elementTypeOfOnnx(&ctx, t.data_type());
  if (!et)
    return error() << "initializer '" << t.name() << "' has element type "
                   << dataTypeName(t.data_type()) << ", which is not supported";
  SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
  int64_t n = checkedNumElements(shape);
  if (n < 0)
    return error() << "initializer '" << t.name()
                   << "' has a negative or too large dimension";
  auto type = RankedTensorType::get(shape, et);
  int64_t bytes = n * storageBytes(et);
  Location loc = NameLoc::get(b.getStringAttr(t.name()), fileLoc);
  Tensor tensor;
  tensor.type = type;
  tensor.isWeight = true;

  std::string file;
  uint64_t offset = 0;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    if (hasRaw)
      return error() << "initializer '" << t.name()
                     << "' has both raw data and external data";
    FailureOr<ArrayRef<char>> data = externalData(t, bytes, file, offset);
    if (failed(data))
      return failure();
    tensor.bytes = *data;
  } else if (hasRaw) {
    if (static_cast<int64_t>(raw.size()) != bytes)
      return error() << "initializer '" << t.name() << "' has " << raw.size()
                     << " bytes of raw data but its shape and type need "
                     << bytes;
    file = llvm::sys::path::filename(path).str();
    offset = raw.data() - model.file->getBufferStart();
    tensor.bytes = raw;
  } else {
    // Typed fields (float_data, int64_data, ...): a constant in the IR.
    std::string err;
    DenseElementsAttr dense = denseFromTensorProto(t, type, err);
    if (!dense)
      return error() << "initializer '" << t.name() << "': " << err;
    tensor.value = nn::ConstantOp::create(b, loc, type, dense);
    if (isa<IntegerType>(et) && n <= kMaxWeightKnownElements)
      tensor.known = knownFromDense(dense);
    values[t.name()] = std::move(tensor);
    return success();
  }
  tensor.value = nn::WeightOp::create(
      b, loc, type, b.getStringAttr(t.name()), b.getStringAttr(file),
      b.getI64IntegerAttr(static_cast<int64_t>(offset)), DenseI64ArrayAttr(),
      DenseI64ArrayAttr(), TypeAttr());
  values[t.name()] = std::move(tensor);
  return success();
}

/// A name torch gives a parameter or buffer ("blocks.1.ln1.bias"), as opposed
/// to the names it makes up for values ("/blocks.1/Add_output_0") and
/// constant-folded copies ("onnx::MatMul_42").
static bool isParameterLikeName(StringRef name) {
  return !name.empty() && !name.contains('/') && !name.contains("::");
}

/// torch.onnx.export keeps one initializer of several with equal values and
/// reads it through Identity nodes whose outputs carry the other parameters'
/// names. Those are distinct parameters that happen to start equal: each
/// becomes its own nn.weight under its own name, reading the same stored
/// bytes as its initial value (training then updates each on its own).
bool Importer::splitMergedInitializer(const onnx::NodeProto &node) {
  if (node.op_type() != "Identity" || node.input_size() != 1 ||
      node.output_size() != 1 || !isParameterLikeName(node.output(0)) ||
      values.count(node.output(0)) || graphOutputs.contains(node.output(0)))
    return false;
  auto it = values.find(node.input(0));
  if (it == values.end() || !it->second.isWeight || !it->second.value)
    return false;
  auto w = it->second.value.getDefiningOp<nn::WeightOp>();
  if (!w || w.getWindowOffsets() ||
      !isa<FloatType>(it->second.type.getElementType()))
    return false;
  Location loc = NameLoc::get(b.getStringAttr(node.output(0)), fileLoc);
  Tensor copy = it->second;
  copy.value = nn::WeightOp::create(
      b, loc, copy.type, b.getStringAttr(node.output(0)), w.getFileAttr(),
      w.getOffsetAttr(), DenseI64ArrayAttr(), DenseI64ArrayAttr(), TypeAttr());
  values[node.output(0)] = std::move(copy);
  splitOff[w.getName()].push_back(node.output(0));
  return true;
}

/// Remarks for a training run: which initializers were split and which stay
/// tied, and a warning on constant-folded copies.
void Importer::describeParameters(const onnx::GraphProto &graph) {
  for (auto &[merged, names] : splitOff) {
    InFlightDiagnostic d = emitRemark(fileLoc);
    d << names.size() << " parameter(s) the exporter merged into '" << merged
      << "' (equal initial values) are separate parameters again: ";
    constexpr size_t kListed = 4;
    for (size_t i = 0; i < names.size() && i < kListed; ++i)
      d << (i ? ", " : "") << names[i];
    if (names.size() > kListed)
      d << ", ...";
  }
  // Nodes reading each float initializer directly (the Identity renamings
  // split above do not count).
  llvm::MapVector<StringRef, int> readers;
  SmallVector<std::string> folded;
  for (const onnx::TensorProto &t : graph.initializer()) {
    auto it = values.find(t.name());
    if (it == values.end() || !it->second.isWeight ||
        !isa<FloatType>(it->second.type.getElementType()))
      continue;
    readers[t.name()] = 0;
    if (StringRef(t.name()).starts_with("onnx::"))
      folded.push_back(t.name());
  }
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.op_type() == "Identity" && node.output_size() == 1 &&
        splitOff.count(node.input(0)) &&
        llvm::is_contained(splitOff[node.input(0)], node.output(0)))
      continue;
    llvm::StringSet<> seen;
    for (const std::string &in : node.input())
      if (readers.count(in) && seen.insert(in).second)
        ++readers[in];
  }
  for (auto &[name, count] : readers)
    if (count > 1)
      emitRemark(fileLoc) << "tied parameter '" << name << "': read by "
                          << count
                          << " nodes, trained as one (gradients summed)";
  if (!folded.empty())
    emitWarning(fileLoc)
        << folded.size() << " initializer(s) named 'onnx::*' (e.g. '"
        << folded.front()
        << "') are copies made by the exporter's constant folding (transposed "
           "weights, untied duplicates) and train apart from the parameters "
           "they came from; export with do_constant_folding=False to keep "
           "torch's parameters and names";
}

LogicalResult Importer::importNode(const onnx::NodeProto &node, int index) {
  if (splitMergedInitializer(node))
    return success();
  std::string display = node.name().empty()
                            ? node.op_type() + "#" + std::to_string(index)
                            : node.name();
  Location loc = NameLoc::get(b.getStringAttr(display), fileLoc);
  ImportContext ictx(b, values, node, display, opset, loc);
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return ictx.error() << "operator domain '" << node.domain()
                        << "' is not supported (only the default ONNX domain)";
  Handler handler = lookupHandler(ictx);
  if (!handler)
    return failure();
  for (unsigned i = 0; i < ictx.numInputs(); ++i) {
    if (!ictx.hasInput(i) || values.count(node.input(i)))
      continue;
    auto it = producer.find(node.input(i));
    if (it != producer.end() && it->second > index)
      return ictx.error() << "input " << i << " '" << node.input(i)
                          << "' is produced by a later node; the graph's "
                             "nodes are not in topological order";
    return ictx.error() << "input " << i << " '" << node.input(i)
                        << "' is not produced by any earlier node, graph "
                           "input or initializer";
  }
  for (unsigned o = 0; o < ictx.numOutputs(); ++o)
    if (ictx.wantsOutput(o) && values.count(node.output(o)))
      return ictx.error() << "output " << o << " '" << node.output(o)
                          << "' is already defined";
  LogicalResult r = failure();
  std::optional<LogicalResult> folded;
  if (isElementwiseFoldable(node.op_type()))
    folded = tryFold(ictx);
  r = folded ? *folded : handler(ictx);
  if (failed(r))
    return failure();
  for (unsigned o = 0; o < ictx.numOutputs(); ++o)
    if (ictx.wantsOutput(o) && !values.count(node.output(o)))
      return ictx.error() << "output " << o << " '" << node.output(o)
                          << "' is not supported";
  return success();
}

LogicalResult Importer::checkOutputType(const onnx::ValueInfoProto &info,
                                        RankedTensorType computed) {
  if (!info.type().has_tensor_type())
    return success();
  const auto &tt = info.type().tensor_type();
  if (tt.elem_type() != onnx::TensorProto::UNDEFINED) {
    Type et = elementTypeOfOnnx(&ctx, tt.elem_type());
    if (et != computed.getElementType())
      return error() << "graph output '" << info.name() << "' is declared "
                     << dataTypeName(tt.elem_type()) << " but computes "
                     << computed.getElementType();
  }
  if (!tt.has_shape())
    return success();
  bool mismatch = tt.shape().dim_size() != computed.getRank();
  for (int i = 0; !mismatch && i < tt.shape().dim_size(); ++i) {
    const auto &dim = tt.shape().dim(i);
    std::optional<int64_t> want;
    if (dim.has_dim_value())
      want = dim.dim_value();
    else if (dim.has_dim_param())
      if (auto it = options.dims.find(dim.dim_param());
          it != options.dims.end())
        want = it->second;
    mismatch = want && *want != computed.getDimSize(i);
  }
  if (mismatch)
    return error() << "graph output '" << info.name()
                   << "' has a declared shape that differs from the computed "
                   << computed;
  return success();
}

OwningOpRef<ModuleOp> Importer::run() {
  ctx.loadDialect<nn::NNDialect, func::FuncDialect, dist::DistDialect>();
  auto loaded = readModel(path);
  if (!loaded) {
    emitError(fileLoc) << llvm::toString(loaded.takeError());
    return nullptr;
  }
  model = std::move(*loaded);
  bool sawDefault = false;
  for (const auto &imp : model.model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx") {
      opset = imp.version();
      sawDefault = true;
    }
  if (!sawDefault) {
    error() << "the model imports no version of the default ONNX opset";
    return nullptr;
  }
  if (opset < kOldestOpset || opset > kNewestOpset) {
    error() << "default-domain opset " << opset
            << " is not supported (supported: " << kOldestOpset << " to "
            << kNewestOpset << ")";
    return nullptr;
  }
  const onnx::GraphProto &graph = model.model.graph();
  if (graph.sparse_initializer_size()) {
    error() << "sparse initializers ('"
            << graph.sparse_initializer(0).values().name()
            << "') are not supported";
    return nullptr;
  }

  // A binding of a symbol the model does not have is a typo, not a no-op.
  std::set<std::string> symbols;
  for (const onnx::ValueInfoProto &info : graph.input())
    for (const auto &dim : info.type().tensor_type().shape().dim())
      if (dim.has_dim_param() && !dim.dim_param().empty())
        symbols.insert(dim.dim_param());
  for (const auto &binding : options.dims) {
    if (symbols.count(binding.getKey().str()))
      continue;
    InFlightDiagnostic d = emitError(fileLoc);
    d << "--dim binds '" << binding.getKey()
      << "', which is not a symbolic dimension of the model's inputs";
    if (symbols.empty())
      d << " (it has none: every input shape is fixed)";
    else
      d << "; its symbols: " << llvm::join(symbols, ", ");
    return nullptr;
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr(nn::kModelPathAttr, b.getStringAttr(path));
  (*module)->setAttr(nn::kOpsetAttr, b.getI64IntegerAttr(opset));

  for (const onnx::ValueInfoProto &out : graph.output())
    graphOutputs.insert(out.name());
  llvm::StringSet<> initializerNames;
  for (const auto &t : graph.initializer())
    initializerNames.insert(t.name());
  for (auto [i, node] : llvm::enumerate(graph.node()))
    for (const std::string &out : node.output())
      if (!out.empty())
        producer.try_emplace(out, static_cast<int>(i));

  // Graph inputs that are not initializers become the arguments.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  SmallVector<const onnx::ValueInfoProto *> inputInfo;
  llvm::StringSet<> seenInputs;
  for (const onnx::ValueInfoProto &in : graph.input()) {
    if (initializerNames.contains(in.name()))
      continue;
    if (in.name().empty() || !seenInputs.insert(in.name()).second) {
      error() << "graph input '" << in.name() << "' is unnamed or given twice";
      return nullptr;
    }
    FailureOr<RankedTensorType> t = valueInfoType(in, "input");
    if (failed(t))
      return nullptr;
    argTypes.push_back(*t);
    argNames.push_back(in.name());
    inputInfo.push_back(&in);
  }
  for (const auto &entry : options.inputValues)
    if (!seenInputs.contains(entry.getKey())) {
      error() << "value given for input '" << entry.getKey() << "', which "
              << (initializerNames.contains(entry.getKey())
                      ? "is an initializer, not a graph input"
                      : "is not a graph input");
      return nullptr;
    }
  b.setInsertionPointToEnd(module->getBody());
  auto func =
      func::FuncOp::create(b, fileLoc, "main", b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  for (auto [i, name] : llvm::enumerate(argNames)) {
    Tensor t;
    t.value = entry->getArgument(i);
    t.type = cast<RankedTensorType>(argTypes[i]);
    auto given = options.inputValues.find(name);
    if (given != options.inputValues.end()) {
      FailureOr<Known> hint =
          inputValueHint(*inputInfo[i], t.type, given->second);
      if (failed(hint))
        return nullptr;
      t.hint = std::move(*hint);
    }
    values[name] = t;
    func.setArgAttr(i, nn::kNameAttr, b.getStringAttr(name));
  }

  for (int i = 0; i < graph.initializer_size(); ++i)
    if (failed(importInitializer(graph.initializer(i), model.rawBytes(i),
                                 model.rawData[i].present)))
      return nullptr;

  for (int i = 0; i < graph.node_size(); ++i)
    if (failed(importNode(graph.node(i), i)))
      return nullptr;

  if (options.describeParameters)
    describeParameters(graph);

  if (graph.output_size() == 0) {
    error() << "the graph has no outputs";
    return nullptr;
  }
  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) {
      error() << "graph output '" << out.name() << "' is never produced";
      return nullptr;
    }
    Tensor &t = it->second;
    if (failed(checkOutputType(out, t.type)))
      return nullptr;
    if (!t.value) {
      onnx::NodeProto none;
      Location loc = NameLoc::get(b.getStringAttr(out.name()), fileLoc);
      ImportContext ictx(b, values, none, out.name(), opset, loc);
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
    func.setResultAttr(i, nn::kNameAttr, b.getStringAttr(out.name()));

  fuseErfGelu(*entry);
  // Drop what nothing uses: unused weights and constants, dead branches
  // such as a Dropout mask or shape computations already evaluated, the
  // pieces of a fused GELU.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (isOpTriviallyDead(&op))
      op.erase();
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> distopt::importOnnxModel(MLIRContext &ctx, StringRef path,
                                               const ImportOptions &options) {
  Importer importer(ctx, path, options);
  return importer.run();
}

/// Calls `f` on each graph input of the model at `path` that is not an
/// initializer, in order.
static llvm::Error
forEachGraphInput(StringRef path,
                  llvm::function_ref<void(const onnx::ValueInfoProto &)> f) {
  auto loaded = readModel(path);
  if (!loaded)
    return loaded.takeError();
  const onnx::GraphProto &graph = loaded->model.graph();
  llvm::StringSet<> initializers;
  for (const auto &t : graph.initializer())
    initializers.insert(t.name());
  for (const onnx::ValueInfoProto &in : graph.input())
    if (!initializers.contains(in.name()))
      f(in);
  return llvm::Error::success();
}

llvm::Expected<std::vector<std::vector<std::string>>>
distopt::inputDimensionSymbols(StringRef path) {
  std::vector<std::vector<std::string>> out;
  if (llvm::Error e =
          forEachGraphInput(path, [&](const onnx::ValueInfoProto &in) {
            std::vector<std::string> dims;
            for (const auto &d : in.type().tensor_type().shape().dim())
              dims.push_back(d.has_dim_param() ? d.dim_param() : "");
            out.push_back(std::move(dims));
          }))
    return std::move(e);
  return out;
}

llvm::Expected<std::vector<GraphInputShape>>
distopt::graphInputShapes(StringRef path) {
  std::vector<GraphInputShape> out;
  if (llvm::Error e =
          forEachGraphInput(path, [&](const onnx::ValueInfoProto &in) {
            GraphInputShape shape;
            shape.name = in.name();
            shape.elementType = in.type().tensor_type().elem_type();
            for (const auto &d : in.type().tensor_type().shape().dim()) {
              bool symbolic = !d.has_dim_value();
              shape.sizes.push_back(symbolic ? -1 : d.dim_value());
              shape.symbols.push_back(d.has_dim_param() ? d.dim_param() : "");
            }
            out.push_back(std::move(shape));
          }))
    return std::move(e);
  return out;
}

llvm::Expected<std::vector<std::string>>
distopt::graphInputNames(StringRef path) {
  std::vector<std::string> out;
  if (llvm::Error e =
          forEachGraphInput(path, [&](const onnx::ValueInfoProto &in) {
            out.push_back(in.name());
          }))
    return std::move(e);
  return out;
}
