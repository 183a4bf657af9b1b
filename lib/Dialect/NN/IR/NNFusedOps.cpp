//===- NNFusedOps.cpp - nn ops in a target's fused forms --------*- C++ -*-===//
#include "distopt/Dialect/NN/IR/NNFusedOps.h"
#include "distopt/Dialect/NN/IR/ShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace distopt::nn;

#define GET_OP_CLASSES
#include "distopt/Dialect/NN/IR/NNFusedOps.cpp.inc"

LogicalResult FusedMatMulOp::verify() {
  RankedTensorType a = getLhs().getType(), b = getRhs().getType(),
                   c = getResult().getType();
  if (getTransposeLhs() && (a.getRank() != 2 || b.getRank() != 2))
    return emitOpError("reads its lhs transposed: both operands must be "
                       "matrices, got ")
           << a << " and " << b;
  if (getTransposeRhs() && b.getRank() != 2)
    return emitOpError("reads its rhs transposed: it must be a matrix, got ")
           << b;
  if (a.getElementType() != b.getElementType() ||
      c.getElementType() != a.getElementType())
    return emitOpError("operands and result must have one element type, got ")
           << a << ", " << b << " -> " << c;
  // The product of the operands as read.
  auto read = [](RankedTensorType t, bool transposed) {
    SmallVector<int64_t> s(t.getShape());
    if (transposed)
      std::swap(s[0], s[1]);
    return s;
  };
  FailureOr<SmallVector<int64_t>> shape =
      matmulShape(read(a, getTransposeLhs()), read(b, getTransposeRhs()));
  if (failed(shape))
    return emitOpError("cannot multiply ")
           << a << (getTransposeLhs() ? " transposed" : "") << " by " << b
           << (getTransposeRhs() ? " transposed" : "")
           << ": inner or batch dimensions do not match";
  if (failed(verifyCompatibleShape(c.getShape(), *shape)))
    return emitOpError("result ") << c << " is not the product's shape";
  if (Value bias = getBias()) {
    auto t = cast<RankedTensorType>(bias.getType());
    if (b.getRank() < 2)
      return emitOpError("a bias needs a matrix rhs, got ") << b;
    if (t.getRank() != 1 || t.getElementType() != c.getElementType() ||
        failed(verifyCompatibleShape(t.getShape(), c.getShape().take_back())))
      return emitOpError("bias must hold one ")
             << c.getElementType() << " per column of the product ("
             << c.getShape().back() << "), got " << t;
  }
  return success();
}

LogicalResult FusedSoftmaxGradOp::verify() {
  auto y = cast<RankedTensorType>(getY().getType());
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= y.getRank())
    return emitOpError("axis ") << getAxis() << " is not a dimension of " << y;
  return success();
}
