//===- GradientBuilder.h - what gradient rules build with -------*- C++ -*-===//
//
// Gradient rules (GradientOpInterface) emit nn ops at one insertion point
// and location; these helpers keep the rules short: typed scalars, zeros,
// summing a broadcast gradient back to an operand's shape.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_NN_IR_GRADIENTBUILDER_H
#define DISTOPT_DIALECT_NN_IR_GRADIENTBUILDER_H

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"

namespace distopt::nn {

class GradientBuilder {
public:
  GradientBuilder(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  /// Creates an op with inferred result types; its (first) result.
  template <typename OpTy, typename... Args>
  mlir::Value create(Args &&...args) {
    return OpTy::create(b, loc, std::forward<Args>(args)...)->getResult(0);
  }

  /// A rank-0 constant of `elementType`.
  mlir::Value scalar(double value, mlir::Type elementType);
  /// A splat constant of `type`.
  mlir::Value splat(double value, mlir::RankedTensorType type);
  mlir::Value zerosLike(mlir::Value v);

  /// `grad`, the gradient of a value that `target` was broadcast into
  /// (numpy rules), summed over the broadcast dimensions and shaped as
  /// `target`.
  mlir::Value unbroadcast(mlir::Value grad, mlir::RankedTensorType target);
  /// `v` broadcast to `type` (numpy rules).
  mlir::Value expand(mlir::Value v, mlir::RankedTensorType type);
  mlir::Value reshape(mlir::Value v, mlir::RankedTensorType type);
  mlir::Value reduceSum(mlir::Value v, llvm::ArrayRef<int64_t> axes,
                        bool keepdims);
  mlir::Value reduceMean(mlir::Value v, llvm::ArrayRef<int64_t> axes,
                         bool keepdims);
  /// `v` with the element type of `like` (no-op when equal).
  mlir::Value castLike(mlir::Value v, mlir::Type elementType);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace distopt::nn

#endif // DISTOPT_DIALECT_NN_IR_GRADIENTBUILDER_H
