//===- ImportContext.h - what an ONNX op handler works with -----*- C++ -*-===//
#ifndef DISTOPT_LIB_IMPORT_IMPORTCONTEXT_H
#define DISTOPT_LIB_IMPORT_IMPORTCONTEXT_H

#include "onnx/onnx_pb.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <vector>

namespace distopt::onnximport {

/// A small tensor whose values are known during import: shapes, axes, the
/// results of shape arithmetic. Integers and floats are kept apart.
struct Known {
  std::vector<int64_t> shape;
  bool isFloat = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  int64_t numElements() const;
  double at(int64_t i) const { return isFloat ? floats[i] : double(ints[i]); }
  int64_t intAt(int64_t i) const {
    return isFloat ? static_cast<int64_t>(floats[i]) : ints[i];
  }
  static Known ofInts(std::vector<int64_t> shape, std::vector<int64_t> values);
  static Known ofFloats(std::vector<int64_t> shape, std::vector<double> values);
};

/// A value of the ONNX graph: an SSA value, or a known constant that becomes
/// an nn.constant only if real computation needs it.
struct Tensor {
  mlir::Value value;
  mlir::RankedTensorType type;
  std::optional<Known> known;
};

/// Largest known tensor folded at import; bigger constants stay ops.
constexpr int64_t kMaxFoldElements = 1 << 16;

class ImportContext {
public:
  ImportContext(mlir::OpBuilder &builder, llvm::StringMap<Tensor> &values,
                const onnx::NodeProto &node, int64_t opset, mlir::Location loc)
      : b(builder), values(values), node(node), opset(opset), loc(loc) {}

  mlir::OpBuilder &b;
  llvm::StringMap<Tensor> &values;
  const onnx::NodeProto &node;
  int64_t opset;
  mlir::Location loc;

  /// "node 'name' (OpType, opset N): " prefixed error at the node.
  mlir::InFlightDiagnostic error();

  // Inputs. An empty name is an omitted optional input.
  unsigned numInputs() const { return node.input_size(); }
  bool hasInput(unsigned i) const {
    return i < static_cast<unsigned>(node.input_size()) && !node.input(i).empty();
  }
  /// The input's tensor; fails with a diagnostic when missing.
  mlir::FailureOr<Tensor *> input(unsigned i);
  /// The input as an SSA value (materializing a known constant).
  mlir::FailureOr<mlir::Value> value(unsigned i);
  /// The input's known values, if known.
  const Known *known(unsigned i);
  /// The input's known values as integers; fails with a diagnostic that says
  /// what the values are for when they are not known at import.
  mlir::FailureOr<std::vector<int64_t>> knownInts(unsigned i, llvm::StringRef what);
  mlir::RankedTensorType type(unsigned i);

  // Attributes.
  bool hasAttr(llvm::StringRef name) const;
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t dflt) const;
  double attrFloat(llvm::StringRef name, double dflt) const;
  std::string attrString(llvm::StringRef name, llvm::StringRef dflt) const;
  std::vector<int64_t> attrInts(llvm::StringRef name) const;

  // Outputs.
  unsigned numOutputs() const { return node.output_size(); }
  void setOutput(unsigned i, mlir::Value v);
  void setKnownOutput(unsigned i, Known k, mlir::Type elementType);

  /// An nn.constant holding `k` with element type `elementType`.
  mlir::Value materialize(const Known &k, mlir::Type elementType);
  /// A scalar constant.
  mlir::Value scalar(double v, mlir::Type elementType);

  /// Normalises a possibly negative axis; fails with a diagnostic.
  mlir::FailureOr<int64_t> axis(int64_t a, int64_t rank, llvm::StringRef what);
};

using Handler = mlir::LogicalResult (*)(ImportContext &);

/// Handler registries, one file per family.
void addElementwiseHandlers(llvm::StringMap<Handler> &table);
void addTensorHandlers(llvm::StringMap<Handler> &table);
void addNetworkHandlers(llvm::StringMap<Handler> &table);

/// Evaluates a node whose inputs are all known (shape arithmetic). Returns
/// success if it folded, failure if the op or its inputs are not foldable
/// (the caller then emits ops); diagnostics only for real errors.
std::optional<mlir::LogicalResult> tryFold(ImportContext &ctx);

/// ONNX element type -> MLIR type, or null.
mlir::Type elementTypeOf(mlir::MLIRContext *ctx, int onnxType);

/// Numpy broadcasting of shapes; nullopt if they do not broadcast.
std::optional<std::vector<int64_t>> broadcast(llvm::ArrayRef<int64_t> a,
                                              llvm::ArrayRef<int64_t> b);

} // namespace distopt::onnximport

#endif // DISTOPT_LIB_IMPORT_IMPORTCONTEXT_H
