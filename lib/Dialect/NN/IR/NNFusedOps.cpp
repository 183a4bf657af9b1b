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

/// Whether a value of element type `t` is read or written by a computation
/// in `compute`: the same type, or a 16-bit float when it is f32.
static bool storableIn(Type t, Type compute) {
  return t == compute || (compute.isF32() && (t.isBF16() || t.isF16()));
}

/// Attention's scale and mask on a softmax's input (or its gradient's
/// output) of type `x`: the mask an i1 value of x's trailing dims after
/// leading 1s (what the kernels index by the element's flat index modulo
/// the mask's size); `divide` only with a scale, `mask_keeps` only with a
/// mask.
static LogicalResult verifyScaleAndMask(Operation *op, RankedTensorType x,
                                        Value mask, bool scaled, bool divide,
                                        bool keeps) {
  if (divide && !scaled)
    return op->emitOpError("divides by no scale");
  if (!mask) {
    if (keeps)
      return op->emitOpError("mask_keeps without a mask");
    return success();
  }
  auto m = cast<RankedTensorType>(mask.getType());
  if (!m.getElementType().isInteger(1))
    return op->emitOpError("mask must be i1, got ") << m;
  if (!isTrailingBroadcast(m.getShape(), x.getShape()))
    return op->emitOpError("mask ")
           << m << " must be " << x
           << "'s trailing dims after leading 1s (broadcast over the rest)";
  return success();
}

LogicalResult FusedSoftmaxGradOp::verify() {
  auto y = cast<RankedTensorType>(getY().getType());
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= y.getRank())
    return emitOpError("axis ") << getAxis() << " is not a dimension of " << y;
  Type c = y.getElementType();
  Type dy = cast<RankedTensorType>(getDy().getType()).getElementType();
  Type dx = cast<RankedTensorType>(getResult().getType()).getElementType();
  if (!isa<FloatType>(c) || !storableIn(dy, c) || !storableIn(dx, c))
    return emitOpError("computes in y's ")
           << c << ": dy of " << dy << " and a result of " << dx
           << " must be of it, or bf16/f16 when it is f32";
  return verifyScaleAndMask(*this, y, getMask(), getScale().has_value(),
                            getDivide(), getMaskKeeps());
}

LogicalResult FusedSoftmaxOp::verify() {
  auto x = cast<RankedTensorType>(getInput().getType());
  auto y = cast<RankedTensorType>(getResult().getType());
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= x.getRank())
    return emitOpError("axis ") << getAxis() << " is not a dimension of " << x;
  Type in = x.getElementType(), out = y.getElementType();
  if (!isa<FloatType>(out) || !storableIn(in, out))
    return emitOpError("reads its input into a result of its type, or a "
                       "bf16 or f16 input into an f32 result, got ")
           << x << " -> " << y;
  if (getFill() && !getMask())
    return emitOpError("fills with no mask");
  if (getMask() && !getFill())
    return emitOpError("masks with no fill value");
  return verifyScaleAndMask(*this, x, getMask(), getScale().has_value(),
                            getDivide(), getMaskKeeps());
}

/// The cross-entropy ops' shared checks: per-row values of the logits'
/// shape with the last dim 1, integer labels of that shape, and the
/// logits (and a result) in the compute type or, when it is f32, a 16-bit
/// float.
static LogicalResult verifyCrossEntropyOperands(Operation *op,
                                                RankedTensorType logits,
                                                RankedTensorType row,
                                                RankedTensorType labels) {
  if (logits.getRank() < 1)
    return op->emitOpError("logits must have a class dim, got ") << logits;
  SmallVector<int64_t> rowShape(logits.getShape());
  rowShape.back() = 1;
  if (failed(verifyCompatibleShape(row.getShape(), rowShape)))
    return op->emitOpError("per-row values must be the logits' shape with "
                           "the class dim 1, got ")
           << row << " for logits " << logits;
  Type c = row.getElementType();
  if (!c.isF32() && !c.isF64())
    return op->emitOpError("computes in f32 or f64 (the per-row values' "
                           "element type), got ")
           << c;
  if (!isa<IntegerType>(labels.getElementType()) ||
      failed(verifyCompatibleShape(labels.getShape(), rowShape)))
    return op->emitOpError("labels must be integers of the per-row values' "
                           "shape, got ")
           << labels;
  return success();
}


LogicalResult FusedCrossEntropySumsOp::verify() {
  auto logits = cast<RankedTensorType>(getLogits().getType());
  auto row = cast<RankedTensorType>(getMax().getType());
  if (failed(verifyCrossEntropyOperands(
          *this, logits, row, cast<RankedTensorType>(getLabels().getType()))))
    return failure();
  if (!storableIn(logits.getElementType(), row.getElementType()))
    return emitOpError("logits of ")
           << logits.getElementType() << " cannot be read in "
           << row.getElementType();
  return success();
}

LogicalResult FusedCrossEntropyGradOp::verify() {
  auto logits = cast<RankedTensorType>(getLogits().getType());
  auto row = cast<RankedTensorType>(getMax().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(verifyCrossEntropyOperands(
          *this, logits, row, cast<RankedTensorType>(getLabels().getType()))))
    return failure();
  Type c = row.getElementType();
  if (!storableIn(logits.getElementType(), c) ||
      !storableIn(result.getElementType(), c))
    return emitOpError("logits of ")
           << logits.getElementType() << " and a result of "
           << result.getElementType() << " cannot be computed in " << c;
  if (failed(verifyCompatibleShape(result.getShape(), logits.getShape())))
    return emitOpError("result ") << result << " must have the logits' shape "
                                  << logits;
  return success();
}

LogicalResult FusedSumSquaresOp::verify() {
  Type in = cast<RankedTensorType>(getX().getType()).getElementType();
  Type out = cast<RankedTensorType>(getResult().getType()).getElementType();
  if (!isa<FloatType>(in) || !storableIn(in, out))
    return emitOpError("sums a float x into a result of its type, or a bf16 "
                       "or f16 x into an f32 result, got ")
           << in << " -> " << out;
  return success();
}
