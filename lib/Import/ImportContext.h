//===- ImportContext.h - what an ONNX op handler works with -----*- C++ -*-===//
//
// Shared by the importer's parts: known (import-time) values, the tensors of
// the graph being imported, the per-node context handlers receive, the op
// table and the tensor-data helpers.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_IMPORT_IMPORTCONTEXT_H
#define DISTOPT_LIB_IMPORT_IMPORTCONTEXT_H

#include "distopt/Support/ElementType.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace distopt::onnximport {

//===----------------------------------------------------------------------===//
// Known values
//===----------------------------------------------------------------------===//

/// A small tensor whose values are known during import: shapes, axes,
/// constants and the results of shape arithmetic. Integer (and bool) values
/// are kept exactly as int64, floating-point ones as double.
struct Known {
  std::vector<int64_t> shape;
  bool isFloat = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  int64_t numElements() const;
  double at(int64_t i) const { return isFloat ? floats[i] : double(ints[i]); }
  int64_t intAt(int64_t i) const;
  static Known ofInts(std::vector<int64_t> shape, std::vector<int64_t> values);
  static Known ofFloats(std::vector<int64_t> shape, std::vector<double> values);
};

/// Largest tensor evaluated at import (elements); bigger results stay ops.
constexpr int64_t kMaxFoldElements = 1 << 16;
/// Largest integer initializer whose values are read for shape arithmetic.
constexpr int64_t kMaxWeightKnownElements = 4096;

/// A value of the ONNX graph: an SSA value, a known value that becomes an
/// nn.constant only when real computation needs it, or both.
struct Tensor {
  mlir::Value value;
  mlir::RankedTensorType type;
  std::optional<Known> known;
  /// A graph input's values given at import (ImportOptions::inputValues):
  /// read only where an op needs a value, never folded further.
  std::optional<Known> hint;
  /// An initializer's stored bytes (in a mapped file), read on demand.
  llvm::ArrayRef<char> bytes;
  bool isWeight = false;
};

//===----------------------------------------------------------------------===//
// Element types and tensor data
//===----------------------------------------------------------------------===//

/// The ONNX name of an element type ("FLOAT", "STRING", ...).
std::string dataTypeName(int onnxType);
/// Bytes per element in ONNX's raw (little-endian) encoding.
int64_t storageBytes(mlir::Type elementType);
/// Product of `shape`, or -1 if it overflows or a dimension is negative.
int64_t checkedNumElements(llvm::ArrayRef<int64_t> shape);

/// Decodes little-endian raw bytes (exactly numElements * storageBytes).
mlir::DenseElementsAttr denseFromRaw(mlir::RankedTensorType type,
                                     llvm::ArrayRef<char> bytes);
/// Known values of raw bytes; nullopt for unsupported element types.
std::optional<Known> knownFromRaw(mlir::RankedTensorType type,
                                  llvm::ArrayRef<char> bytes);
/// Known values of a dense attribute.
std::optional<Known> knownFromDense(mlir::DenseElementsAttr dense);
/// Decodes a TensorProto held in the model (inline raw_data or typed
/// fields). On failure returns null and sets `error`.
mlir::DenseElementsAttr denseFromTensorProto(const onnx::TensorProto &t,
                                             mlir::RankedTensorType type,
                                             std::string &error);

/// Numpy broadcasting of shapes; nullopt if they do not broadcast.
std::optional<std::vector<int64_t>> broadcast(llvm::ArrayRef<int64_t> a,
                                              llvm::ArrayRef<int64_t> b);

//===----------------------------------------------------------------------===//
// The per-node context
//===----------------------------------------------------------------------===//

class ImportContext {
public:
  ImportContext(mlir::OpBuilder &builder, llvm::StringMap<Tensor> &values,
                const onnx::NodeProto &node, llvm::StringRef displayName,
                int64_t opset, mlir::Location loc)
      : b(builder), values(values), node(node), name(displayName.str()),
        opset(opset), loc(loc) {}

  mlir::OpBuilder &b;
  llvm::StringMap<Tensor> &values;
  const onnx::NodeProto &node;
  std::string name; // the node name, or a made-up one if it has none
  int64_t opset;
  mlir::Location loc;

  /// An error at the node, prefixed "node 'name' (OpType, opset N): ".
  mlir::InFlightDiagnostic error();

  // Inputs. An empty name is an omitted optional input.
  unsigned numInputs() const { return node.input_size(); }
  bool hasInput(unsigned i) const {
    return i < static_cast<unsigned>(node.input_size()) &&
           !node.input(i).empty();
  }
  /// The input's tensor; fails with a diagnostic when missing.
  mlir::FailureOr<Tensor *> input(unsigned i);
  /// The input as an SSA value (materializing a known value).
  mlir::FailureOr<mlir::Value> value(unsigned i);
  /// As value(i), failing with a diagnostic unless its elements are floats.
  mlir::FailureOr<mlir::Value> floatValue(unsigned i);
  /// As value(i), or a null Value when the optional input is omitted.
  mlir::FailureOr<mlir::Value> optionalValue(unsigned i) {
    return hasInput(i) ? value(i) : mlir::FailureOr<mlir::Value>(mlir::Value());
  }
  /// The input's type (null if the input is absent).
  mlir::RankedTensorType type(unsigned i);
  /// The input's known values for folding: constants, shape values and
  /// small integer initializers. Null if not known.
  const Known *known(unsigned i);
  /// The input's values, which the op needs at import (a target shape, axes,
  /// a pad value...); small initializers of any type are read. Fails with a
  /// diagnostic saying what the values are for.
  mlir::FailureOr<const Known *> requireKnown(unsigned i, llvm::StringRef what);
  /// As requireKnown, as integers (the input must have an integer type).
  mlir::FailureOr<std::vector<int64_t>> knownInts(unsigned i,
                                                  llvm::StringRef what);

  // Attributes (types were checked against the op table).
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  bool hasAttr(llvm::StringRef name) const { return attr(name); }
  int64_t attrInt(llvm::StringRef name, int64_t dflt) const;
  double attrFloat(llvm::StringRef name, double dflt) const;
  std::string attrString(llvm::StringRef name, llvm::StringRef dflt) const;
  std::vector<int64_t> attrInts(llvm::StringRef name) const;

  // Outputs.
  unsigned numOutputs() const { return node.output_size(); }
  bool wantsOutput(unsigned i) const {
    return i < numOutputs() && !node.output(i).empty();
  }
  void setOutput(unsigned i, mlir::Value v);
  void setKnownOutput(unsigned i, Known k, mlir::Type elementType);

  /// An nn.constant holding `k` (a splat when all values are equal).
  mlir::Value materialize(const Known &k, mlir::Type elementType);
  /// A rank-0 constant.
  mlir::Value scalar(double v, mlir::Type elementType);

  /// Creates an nn op whose result type is inferred; a diagnostic at the node
  /// (and failure) instead of a crash when the operands do not fit.
  template <typename OpT, typename... Args>
  mlir::FailureOr<mlir::Value> create(Args &&...args) {
    auto op = OpT::create(b, loc, mlir::Type(b.getNoneType()),
                          std::forward<Args>(args)...);
    llvm::SmallVector<mlir::Type, 1> types;
    std::string message;
    mlir::LogicalResult inferred = mlir::failure();
    {
      mlir::ScopedDiagnosticHandler capture(b.getContext(),
                                            [&](mlir::Diagnostic &d) {
                                              if (message.empty())
                                                message = d.str();
                                              return mlir::success();
                                            });
      inferred = OpT::inferReturnTypes(
          b.getContext(), loc, op->getOperands(), op->getRawDictionaryAttrs(),
          op->getPropertiesStorage(), op->getRegions(), types);
    }
    if (mlir::failed(inferred) || types.size() != 1)
      return discard(op, message);
    op->getResult(0).setType(types[0]);
    return verified(op);
  }
  /// Creates an nn op with the given result type, verified.
  template <typename OpT, typename... Args>
  mlir::FailureOr<mlir::Value> createTyped(mlir::Type result, Args &&...args) {
    auto op = OpT::create(b, loc, result, std::forward<Args>(args)...);
    return verified(op);
  }

  /// nn.reshape to `shape` (no op if the shape is unchanged).
  mlir::FailureOr<mlir::Value> reshape(mlir::Value x,
                                       llvm::ArrayRef<int64_t> shape);
  /// Normalises a possibly negative axis into [0, rank); fails with a
  /// diagnostic naming `what`.
  mlir::FailureOr<int64_t> axis(int64_t a, int64_t rank, llvm::StringRef what);
  /// LayerNormalization's and RMSNormalization's first normalised axis
  /// (attribute `axis`, default -1), refusing a stash_type other than 1
  /// (statistics in float).
  mlir::FailureOr<int64_t> normalizationAxis(int64_t rank);

private:
  /// Values read for requireKnown that must not become foldable.
  std::vector<std::unique_ptr<Known>> scratch;

  mlir::FailureOr<mlir::Value> verified(mlir::Operation *op);
  mlir::FailureOr<mlir::Value> discard(mlir::Operation *op,
                                       llvm::StringRef message);
};

/// Builds a handler's nn ops without checking every step: after the first
/// failure (its diagnostic already emitted at the node) every further call
/// creates nothing and returns a null Value, and `output` reports the
/// failure, so a handler checks once. Values made by the chain are null only
/// after a failure; a null operand given by the caller is an omitted optional
/// operand. C++ leaves the order of a call's arguments open: where two
/// arguments create ops, name them first if the IR's order should be fixed.
class OpChain {
public:
  explicit OpChain(ImportContext &ctx) : ctx(ctx) {}

  ImportContext &ctx;

  /// ctx.create<OpT>(args...).
  template <typename OpT, typename... Args> mlir::Value make(Args &&...args) {
    if (bad)
      return {};
    return take(ctx.create<OpT>(std::forward<Args>(args)...));
  }
  /// ctx.createTyped<OpT>(type, args...).
  template <typename OpT, typename... Args>
  mlir::Value typed(mlir::Type type, Args &&...args) {
    if (bad)
      return {};
    return take(ctx.createTyped<OpT>(type, std::forward<Args>(args)...));
  }
  /// ctx.reshape(x, shape).
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape) {
    if (bad)
      return {};
    return take(ctx.reshape(x, shape));
  }
  /// nn.slice of `x`: per dimension [starts, ends) by steps.
  mlir::Value slice(mlir::Value x, llvm::ArrayRef<int64_t> starts,
                    llvm::ArrayRef<int64_t> ends,
                    llvm::ArrayRef<int64_t> steps);
  /// A rank-0 constant of `x`'s element type.
  mlir::Value scalarLike(double v, mlir::Value x) {
    if (bad)
      return {};
    return ctx.scalar(
        v, llvm::cast<mlir::RankedTensorType>(x.getType()).getElementType());
  }
  /// ctx.value(i).
  mlir::Value input(unsigned i) {
    return bad ? mlir::Value() : take(ctx.value(i));
  }
  /// Sets output `i` to `v` unless a step failed: the handler's result.
  mlir::LogicalResult output(unsigned i, mlir::Value v) {
    if (bad)
      return mlir::failure();
    ctx.setOutput(i, v);
    return mlir::success();
  }
  bool failed() const { return bad; }

private:
  mlir::Value take(mlir::FailureOr<mlir::Value> v) {
    if (mlir::failed(v))
      bad = true;
    return bad ? mlir::Value() : *v;
  }
  bool bad = false;
};

//===----------------------------------------------------------------------===//
// The op table
//===----------------------------------------------------------------------===//

using Handler = mlir::LogicalResult (*)(ImportContext &);

/// Handlers (OpsElementwise.cpp, OpsTensor.cpp, OpsNetwork.cpp, OpsLoss.cpp,
/// OpsTransformer.cpp, OpsQuantize.cpp).
#define DISTOPT_IMPORT_HANDLER(name)                                           \
  mlir::LogicalResult name(ImportContext &ctx);
#include "Handlers.def"

/// An nn.conv of `x` and `w` (and `bias`, may be null) with the node's Conv
/// attributes (auto_pad, dilations, group, kernel_shape, pads, strides),
/// checked: Conv, and the integer convolutions of OpsQuantize.cpp.
mlir::FailureOr<mlir::Value> buildConv(ImportContext &ctx, mlir::Value x,
                                       mlir::Value w, mlir::Value bias);

/// Checks the node against the op table (the op exists in the model's opset,
/// input and output counts, attribute names and types) and returns its
/// handler; emits a diagnostic and returns null otherwise.
Handler lookupHandler(ImportContext &ctx);

/// Newest default-domain opset the table describes.
constexpr int64_t kNewestOpset = 23;
/// Oldest default-domain opset supported: per op, the table's first version
/// decides (most ops are described from opset 6 on, where ONNX's legacy
/// attributes such as consumed_inputs are gone).
constexpr int64_t kOldestOpset = 1;
/// The table describes every op present at this opset; an older version of
/// an op is simply not described (as opposed to an op that did not exist).
constexpr int64_t kDescribedFromOpset = 6;

/// Prints the op table as markdown (ops, opset versions, attributes).
void printOpTable(llvm::raw_ostream &os);

/// Evaluates a node whose inputs are all known (shape arithmetic) when its
/// result is small. nullopt if it does not fold (the handler then emits ops);
/// failure with a diagnostic on a real error.
std::optional<mlir::LogicalResult> tryFold(ImportContext &ctx);

} // namespace distopt::onnximport

#endif // DISTOPT_LIB_IMPORT_IMPORTCONTEXT_H
