//===- NNOps.cpp - nn op verifiers and folders ------------------*- C++ -*-===//
#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/NN/IR/EinsumEquation.h"
#include "distopt/Dialect/NN/IR/ShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;
using namespace distopt::nn;

static constexpr int64_t kDyn = ShapedType::kDynamic;

static int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s == kDyn)
      return kDyn;
    n *= s;
  }
  return n;
}

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("needs the initializer's name");
  RankedTensorType type = getResult().getType();
  if (!type.hasStaticShape()) {
    // In the SPMD program a weight's piece may differ between ranks (`?`);
    // the tensor it is a piece of is still static.
    auto global = (*this)->getAttrOfType<TypeAttr>(dist::kGlobalTypeAttr);
    auto globalType =
        global ? dyn_cast<RankedTensorType>(global.getValue()) : nullptr;
    if (!globalType || !globalType.hasStaticShape() ||
        globalType.getRank() != type.getRank())
      return emitOpError("weight '")
             << getName()
             << "' needs a static shape (only a partitioned weight's piece, "
                "with a static dist.global_type, may have `?` dimensions)";
  }
  if (getOffsetAttr().getInt() < 0)
    return emitOpError("weight '") << getName() << "' has a negative offset "
                                   << getOffsetAttr().getInt();
  if (auto stored = getStoredType()) {
    // The loader converts between the float types only.
    auto isFloat = [](Type t) { return t.isF32() || t.isF16() || t.isBF16(); };
    if (!isFloat(*stored) || !isFloat(type.getElementType()))
      return emitOpError("weight '")
             << getName() << "': stored_type " << *stored << " and element "
             << "type " << type.getElementType()
             << " must both be f32, f16 or bf16";
  }
  if (getStoredShape().has_value() != getWindowOffsets().has_value())
    return emitOpError("weight '") << getName()
                                   << "' needs both stored_shape and "
                                      "window_offsets, or neither";
  if (getStoredShape()) {
    ArrayRef<int64_t> stored = *getStoredShape(), at = *getWindowOffsets();
    ArrayRef<int64_t> shape = getResult().getType().getShape();
    if (stored.size() != shape.size() || at.size() != shape.size())
      return emitOpError("weight '") << getName()
                                     << "': stored_shape and window_offsets "
                                        "need one entry per dimension";
    for (size_t d = 0; d < shape.size(); ++d)
      if (!ShapedType::isDynamic(shape[d]) &&
          (at[d] < 0 || at[d] + shape[d] > stored[d]))
        return emitOpError("weight '")
               << getName() << "': window [" << at[d] << ", "
               << at[d] + shape[d] << ") of dimension " << d
               << " is outside the stored extent " << stored[d];
  }
  return success();
}

LogicalResult ConstantOp::verify() {
  if (getValue().getType() != getResult().getType())
    return emitOpError("value of type ")
           << getValue().getType() << " does not match the result type "
           << getResult().getType();
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult CastOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getRank() != out.getRank() ||
      failed(verifyCompatibleShape(in.getShape(), out.getShape())))
    return emitOpError("changes the shape from ") << in << " to " << out;
  return success();
}

#define VERIFY_SHIFT(OP)                                                       \
  LogicalResult OP::verify() {                                                 \
    if (!getLhs().getType().getElementType().isUnsignedInteger())              \
      return emitOpError("needs unsigned integer operands, got ")              \
             << getLhs().getType();                                            \
    return success();                                                          \
  }
VERIFY_SHIFT(ShiftLeftOp)
VERIFY_SHIFT(ShiftRightOp)
#undef VERIFY_SHIFT

static LogicalResult verifyAxes(Operation *op, ArrayRef<int64_t> axes,
                                int64_t rank) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank)
      return op->emitOpError("axis ")
             << axes[i] << " is out of range for rank " << rank;
    if (i > 0 && axes[i] <= axes[i - 1])
      return op->emitOpError("axes must be sorted and unique");
  }
  return success();
}

#define VERIFY_REDUCE(OP)                                                      \
  LogicalResult OP::verify() {                                                 \
    return verifyAxes(*this, getAxes(), getInput().getType().getRank());       \
  }
VERIFY_REDUCE(ReduceSumOp)
VERIFY_REDUCE(ReduceMeanOp)
VERIFY_REDUCE(ReduceMaxOp)
VERIFY_REDUCE(ReduceMinOp)
VERIFY_REDUCE(ReduceProdOp)
#undef VERIFY_REDUCE

#define VERIFY_AXIS(OP)                                                        \
  LogicalResult OP::verify() {                                                 \
    int64_t rank = getInput().getType().getRank();                             \
    if (getAxis() < 0 || getAxis() >= rank)                                    \
      return emitOpError("axis ")                                              \
             << getAxis() << " is out of range for rank " << rank;             \
    return success();                                                          \
  }
VERIFY_AXIS(ArgMaxOp)
VERIFY_AXIS(ArgMinOp)
VERIFY_AXIS(SoftmaxOp)
VERIFY_AXIS(LogSoftmaxOp)
#undef VERIFY_AXIS

LogicalResult LayerNormOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (getAxis() < 0 || getAxis() >= rank)
    return emitOpError("axis ")
           << getAxis() << " is out of range for rank " << rank;
  ArrayRef<int64_t> normShape =
      getInput().getType().getShape().drop_front(getAxis());
  auto checkParam = [&](Value v, StringRef what) -> LogicalResult {
    auto t = cast<RankedTensorType>(v.getType());
    auto b = broadcastShapes(normShape, t.getShape());
    if (t.getRank() > static_cast<int64_t>(normShape.size()) || failed(b) ||
        ArrayRef<int64_t>(*b) != normShape)
      return emitOpError()
             << what << " of type " << t
             << " does not broadcast to the normalised dimensions";
    return success();
  };
  if (failed(checkParam(getScale(), "scale")))
    return failure();
  if (getBias() && failed(checkParam(getBias(), "bias")))
    return failure();
  return success();
}

LogicalResult BatchNormOp::verify() {
  auto x = getInput().getType();
  if (x.getRank() < 2)
    return emitOpError("expects input [N, C, ...]");
  for (Value v : {getScale(), getBias(), getMean(), getVariance()}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != 1 || (t.getDimSize(0) != x.getDimSize(1) &&
                             !ShapedType::isDynamic(x.getDimSize(1))))
      return emitOpError("per-channel parameters must have shape [")
             << x.getDimSize(1) << "], got " << t;
  }
  return success();
}

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p])
      return emitOpError("perm must be a permutation of 0..")
             << perm.size() - 1;
    seen[p] = true;
  }
  return success();
}

LogicalResult ReshapeOp::verify() {
  int64_t in = numElements(getInput().getType().getShape());
  int64_t out = numElements(getResult().getType().getShape());
  if (in != kDyn && out != kDyn && in != out)
    return emitOpError("cannot reshape ")
           << in << " elements into " << getResult().getType();
  if (getInput().getType().getElementType() !=
      getResult().getType().getElementType())
    return emitOpError("must keep the element type");
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (getResult().getType().hasStaticShape())
      return dense.reshape(getResult().getType());
  return {};
}

LogicalResult ExpandOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  auto b = broadcastShapes(in.getShape(), out.getShape());
  if (failed(b) || ArrayRef<int64_t>(*b) != out.getShape() ||
      in.getElementType() != out.getElementType())
    return emitOpError("cannot broadcast ") << in << " to " << out;
  return success();
}

LogicalResult ConcatOp::verify() { return success(); }

LogicalResult SliceOp::verify() {
  auto t = getInput().getType();
  if (static_cast<int64_t>(getStarts().size()) != t.getRank() ||
      static_cast<int64_t>(getEnds().size()) != t.getRank() ||
      static_cast<int64_t>(getSteps().size()) != t.getRank())
    return emitOpError("starts, ends and steps need one entry per dimension (")
           << t.getRank() << ")";
  for (int64_t d = 0; d < t.getRank(); ++d) {
    int64_t e = t.getDimSize(d);
    int64_t s = getStarts()[d], en = getEnds()[d], st = getSteps()[d];
    if (e == kDyn)
      continue;
    if (s < 0 || (e > 0 && s >= e && sliceExtent(s, en, st) > 0))
      return emitOpError("start ")
             << s << " of dimension " << d << " is outside extent " << e;
    if (st > 0 && en > e)
      return emitOpError("end ")
             << en << " of dimension " << d << " is past extent " << e;
    if (st < 0 && en < -1)
      return emitOpError("end ")
             << en << " of dimension " << d << " is before -1";
  }
  return success();
}

LogicalResult GatherOp::verify() { return success(); }

LogicalResult ScatterAddOp::verify() { return success(); }

LogicalResult CumSumOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (getAxis() < 0 || getAxis() >= std::max<int64_t>(rank, 1))
    return emitOpError("axis ") << getAxis() << " is out of range for rank "
                                << rank;
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  StringRef r = getReduction();
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return emitOpError("reduction must be none, add, mul, max or min, got '")
           << r << "'";
  return success();
}

LogicalResult ScatterNDOp::verify() {
  StringRef r = getReduction();
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return emitOpError("reduction must be none, add, mul, max or min, got '")
           << r << "'";
  return success();
}

/// An optimizer update: tensors (parameter, gradient, states and the new
/// values) of one float type, scalars rank-0 of its element type. The
/// gradient of an f32 parameter may be stored as bf16 or f16 (a bf16
/// policy's gradient, widened exactly as it is read).
/// The first `results` results are typed as the parameter.
static LogicalResult verifyOptimizerUpdate(Operation *op, unsigned tensors,
                                           unsigned scalars, unsigned results) {
  auto type = cast<RankedTensorType>(op->getOperand(0).getType());
  if (!isa<FloatType>(type.getElementType()))
    return op->emitOpError("updates float parameters, not ") << type;
  auto narrowGradient = [&](Type t) {
    auto g = cast<RankedTensorType>(t);
    return type.getElementType().isF32() && g.getShape() == type.getShape() &&
           (g.getElementType().isBF16() || g.getElementType().isF16());
  };
  for (unsigned i = 0; i < tensors; ++i)
    if (op->getOperand(i).getType() != type &&
        !(i == 1 && narrowGradient(op->getOperand(i).getType())))
      return op->emitOpError("operand ")
             << i << " is " << op->getOperand(i).getType()
             << "; the parameter, its gradient and its states must all be "
             << type
             << (type.getElementType().isF32()
                     ? " (the gradient may also be bf16 or f16)"
                     : "");
  auto scalar = RankedTensorType::get({}, type.getElementType());
  for (unsigned i = tensors; i < tensors + scalars; ++i)
    if (op->getOperand(i).getType() != scalar)
      return op->emitOpError("operand ")
             << i << " is " << op->getOperand(i).getType() << ", expected "
             << scalar;
  for (Type t : TypeRange(op->getResultTypes()).take_front(results))
    if (t != type)
      return op->emitOpError("results must be ") << type << ", not " << t;
  return success();
}

LogicalResult AdamUpdateOp::verify() {
  if (failed(verifyOptimizerUpdate(*this, 4, 4, 3)))
    return failure();
  Value copy = getNewParamCopy();
  if (!copy)
    return success();
  auto type = getParam().getType();
  auto c = cast<RankedTensorType>(copy.getType());
  if (!type.getElementType().isF32() || c.getShape() != type.getShape() ||
      !(c.getElementType().isBF16() || c.getElementType().isF16()))
    return emitOpError("the compute copy result is ")
           << c << "; it must be the f32 parameter's shape in bf16 or f16";
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  return verifyOptimizerUpdate(*this, 3, 2, 2);
}

LogicalResult VariableOp::verify() {
  if (getName().empty())
    return emitOpError("needs a name");
  if (!getResult().getType().hasStaticShape() &&
      !(*this)->hasAttr(dist::kGlobalTypeAttr))
    return emitOpError("variable '") << getName() << "' needs a static shape";
  return success();
}

/// The shapes a convolution's gradient ops relate: input [N, C, ...],
/// weight [M, C/group, k...], result gradient [N, M, ...].
static LogicalResult verifyConvGrad(Operation *op, RankedTensorType x,
                                    RankedTensorType w, RankedTensorType dy,
                                    ArrayRef<int64_t> strides,
                                    ArrayRef<int64_t> pads,
                                    ArrayRef<int64_t> dilations,
                                    int64_t group) {
  int64_t rank = x.getRank();
  if (rank < 3 || w.getRank() != rank || dy.getRank() != rank)
    return op->emitOpError("expects input, weight and result gradient of "
                           "equal rank >= 3");
  int64_t spatial = rank - 2;
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(dilations.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return op->emitOpError("strides/dilations need ")
           << spatial << " entries and pads " << 2 * spatial;
  if (group <= 0 || x.getDimSize(1) != w.getDimSize(1) * group ||
      dy.getDimSize(1) != w.getDimSize(0) ||
      x.getDimSize(0) != dy.getDimSize(0))
    return op->emitOpError("input ")
           << x << ", weight " << w << " and result gradient " << dy
           << " do not belong to one convolution with group " << group;
  return success();
}

LogicalResult ConvGradInputOp::verify() {
  return verifyConvGrad(*this, getResult().getType(), getWeight().getType(),
                        getResultGrad().getType(), getStrides(), getPads(),
                        getDilations(), getGroup());
}

LogicalResult ConvGradWeightOp::verify() {
  return verifyConvGrad(*this, getInput().getType(), getResult().getType(),
                        getResultGrad().getType(), getStrides(), getPads(),
                        getDilations(), getGroup());
}

template <typename OpTy> static LogicalResult verifyPoolGrad(OpTy op) {
  auto x = op.getInput().getType(), dy = op.getResultGrad().getType();
  if (op.getResult().getType() != x)
    return op.emitOpError("result type must be the input's, ") << x;
  int64_t spatial = x.getRank() - 2;
  if (spatial < 1 || dy.getRank() != x.getRank() ||
      static_cast<int64_t>(op.getKernel().size()) != spatial ||
      static_cast<int64_t>(op.getStrides().size()) != spatial ||
      static_cast<int64_t>(op.getPads().size()) != 2 * spatial)
    return op.emitOpError("expects input and result gradient [N, C, "
                          "spatial...] and one kernel/stride per spatial "
                          "dimension");
  return success();
}

LogicalResult MaxPoolGradOp::verify() { return verifyPoolGrad(*this); }
LogicalResult AvgPoolGradOp::verify() { return verifyPoolGrad(*this); }

LogicalResult PadOp::verify() {
  if (getMode() != "constant" && getMode() != "reflect" && getMode() != "edge")
    return emitOpError("mode must be constant, reflect or edge, got ")
           << getMode();
  return success();
}

LogicalResult ResizeOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (static_cast<int64_t>(getScales().size()) != rank ||
      static_cast<int64_t>(getSizes().size()) != rank)
    return emitOpError("scales and sizes need one entry per dimension (")
           << rank << ")";
  for (int64_t d = 0; d < rank; ++d)
    if (!(getScales()[d] > 0) || (getScales()[d] != 1.0 && getSizes()[d] < 1))
      return emitOpError("dimension ")
             << d << ": scale " << getScales()[d] << " and size "
             << getSizes()[d] << " must be positive";
  StringRef mode = getMode(), ctm = getCoordinateTransformationMode(),
            nearest = getNearestMode();
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return emitOpError("mode must be nearest, linear or cubic, got ") << mode;
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn",
                           "tf_crop_and_resize"},
                          ctm))
    return emitOpError("unknown coordinate_transformation_mode ") << ctm;
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          nearest))
    return emitOpError("unknown nearest_mode ") << nearest;
  if (ctm == "tf_crop_and_resize" &&
      (!getRoi() || static_cast<int64_t>(getRoi()->size()) != 2 * rank))
    return emitOpError("tf_crop_and_resize needs roi with ")
           << 2 * rank << " entries";
  return success();
}

bool ResizeOp::keepsDimension(int64_t d) {
  if (getScales()[d] != 1.0)
    return false;
  StringRef ctm = getCoordinateTransformationMode();
  if (ctm == "tf_half_pixel_for_nn")
    return false; // shifts every coordinate by half a pixel
  if (ctm == "tf_crop_and_resize") {
    int64_t rank = getScales().size();
    return (*getRoi())[d] == 0.0 && (*getRoi())[d + rank] == 1.0;
  }
  return true;
}

LogicalResult GridSampleOp::verify() {
  if (!llvm::is_contained({"bilinear", "nearest", "bicubic"}, getMode()))
    return emitOpError("mode must be bilinear, nearest or bicubic, got ")
           << getMode();
  if (!llvm::is_contained({"zeros", "border", "reflection"}, getPaddingMode()))
    return emitOpError("padding_mode must be zeros, border or reflection, "
                       "got ")
           << getPaddingMode();
  return success();
}

LogicalResult RangeOp::verify() {
  for (Value v : {getStart(), getLimit(), getDelta()})
    if (cast<RankedTensorType>(v.getType()).getRank() != 0)
      return emitOpError("start, limit and delta must be scalars");
  if (getResult().getType().getRank() != 1)
    return emitOpError("result must be 1-D");
  return success();
}

LogicalResult ConvOp::verify() {
  auto x = getInput().getType(), w = getWeight().getType();
  int64_t g = getGroup();
  if (g <= 0)
    return emitOpError("group must be positive");
  if (!ShapedType::isDynamic(x.getDimSize(1)) &&
      x.getDimSize(1) != w.getDimSize(1) * g)
    return emitOpError("input has ")
           << x.getDimSize(1) << " channels but weight expects "
           << w.getDimSize(1) << " x group " << g;
  if (w.getDimSize(0) % g != 0)
    return emitOpError("output channels ")
           << w.getDimSize(0) << " do not divide by group " << g;
  if (getBias()) {
    auto b = cast<RankedTensorType>(getBias().getType());
    if (b.getRank() != 1 || b.getDimSize(0) != w.getDimSize(0))
      return emitOpError("bias must have shape [") << w.getDimSize(0) << "]";
  }
  return success();
}

namespace {
/// A two-operand einsum that is one matrix product: no batch letters, and
/// each term's letters in two contiguous groups, `m` then `k` or the other
/// way round for the first operand, `k` and `n` for the second, `m` then
/// `n` for the result (`xyk,xyn->kn`, a linear layer's weight gradient
/// summed over rows). It becomes nn.matmul of the operands reshaped to
/// [M, K] and [K, N] (a transpose where a term has them the other way
/// round), the form the GEMM kernels run. Static shapes only: the reshapes
/// need the extents.
struct EinsumAsMatMul : OpRewritePattern<EinsumOp> {
  explicit EinsumAsMatMul(MLIRContext *context) : OpRewritePattern(context) {
    setDebugName(kEinsumAsMatMulPattern);
  }

  LogicalResult matchAndRewrite(EinsumOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getInputs().size() != 2 || !op.getType().hasStaticShape())
      return failure();
    std::string error;
    auto eq = EinsumEquation::parse(op.getEquation(), error);
    if (!eq || eq->output.empty())
      return failure();
    Value a = op.getInputs()[0], b = op.getInputs()[1];
    std::string ta = eq->inputs[0], tb = eq->inputs[1];
    const std::string &out = eq->output;
    auto has = [](const std::string &t, char c) {
      return t.find(c) != std::string::npos;
    };
    // The operand that names the result's first letter comes first.
    if (!has(ta, out[0])) {
      std::swap(a, b);
      std::swap(ta, tb);
    }
    auto at = cast<RankedTensorType>(a.getType());
    auto bt = cast<RankedTensorType>(b.getType());
    if (!at.hasStaticShape() || !bt.hasStaticShape())
      return failure();
    size_t split = 0;
    while (split < out.size() && has(ta, out[split]) && !has(tb, out[split]))
      ++split;
    std::string m = out.substr(0, split), n = out.substr(split);
    if (llvm::any_of(n, [&](char c) { return has(ta, c) || !has(tb, c); }))
      return failure();
    std::string k, kb;
    for (char c : ta)
      if (!has(out, c))
        k += c;
    for (char c : tb)
      if (!has(out, c))
        kb += c;
    if (m.empty() || n.empty() || k.empty() || k != kb)
      return failure();
    bool transA = ta == k + m, transB = tb == n + k;
    if ((!transA && ta != m + k) || (!transB && tb != k + n))
      return failure();
    std::map<char, int64_t> extent;
    for (auto [term, type] : {std::make_pair(ta, at), std::make_pair(tb, bt)})
      for (auto [d, c] : llvm::enumerate(term))
        extent[c] = type.getDimSize(d);
    auto product = [&](const std::string &letters) {
      int64_t p = 1;
      for (char c : letters)
        p *= extent[c];
      return p;
    };
    int64_t M = product(m), N = product(n), K = product(k);
    Location loc = op.getLoc();
    // The new ops keep the einsum's tags (phase, node, microbatch).
    auto tagged = [&](Operation *created) {
      for (NamedAttribute attr : op->getDiscardableAttrs())
        created->setAttr(attr.getName(), attr.getValue());
      return created->getResult(0);
    };
    auto matrix = [&](Value v, int64_t rows, int64_t cols, bool transpose) {
      auto t = cast<RankedTensorType>(v.getType());
      if (transpose)
        std::swap(rows, cols);
      if (t.getShape() != ArrayRef<int64_t>{rows, cols})
        v = tagged(ReshapeOp::create(rewriter, loc, t.clone({rows, cols}), v));
      if (transpose)
        v = tagged(TransposeOp::create(rewriter, loc, v,
                                       rewriter.getDenseI64ArrayAttr({1, 0})));
      return v;
    };
    Value lhs = matrix(a, M, K, transA);
    Value rhs = matrix(b, K, N, transB);
    Value result = tagged(MatMulOp::create(rewriter, loc, lhs, rhs));
    if (result.getType() != op.getType())
      result = tagged(ReshapeOp::create(rewriter, loc, op.getType(), result));
    rewriter.replaceOp(op, result);
    return success();
  }
};
} // namespace

void EinsumOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<EinsumAsMatMul>(context);
}

LogicalResult MaxPoolOp::verify() { return success(); }
LogicalResult AvgPoolOp::verify() { return success(); }
LogicalResult MaxPoolIndicesOp::verify() { return success(); }
LogicalResult GlobalAvgPoolOp::verify() { return success(); }
LogicalResult GlobalMaxPoolOp::verify() { return success(); }

#define GET_OP_CLASSES
#include "distopt/Dialect/NN/IR/NNOps.cpp.inc"

std::string distopt::nn::getNodeName(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l))
        return name.getName().str();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

std::string distopt::nn::getPersistentKey(Operation *op) {
  if (auto v = dyn_cast<VariableOp>(op))
    return v.getName().str();
  auto w = cast<WeightOp>(op);
  std::string key = w.getName().str();
  if (auto at = w.getWindowOffsets()) {
    key += "[";
    for (auto [i, o] : llvm::enumerate(*at))
      key += (i ? "," : "") + std::to_string(o);
    key += "]";
  }
  return key;
}

std::vector<std::string> distopt::nn::getNodeModulePrefixes(Operation *op) {
  std::string path = getNodeModulePath(op);
  SmallVector<StringRef> parts;
  StringRef(path).split(parts, '.', -1, false);
  std::vector<std::string> out;
  std::string prefix;
  for (StringRef part : parts) {
    prefix += (prefix.empty() ? "" : ".") + part.str();
    out.push_back(prefix);
  }
  return out;
}

bool distopt::nn::isZeroConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto values = c ? dyn_cast<DenseFPElementsAttr>(c.getValue()) : nullptr;
  return values && values.isSplat() &&
         values.getSplatValue<APFloat>().isPosZero();
}

std::string distopt::nn::getNodeModulePath(Operation *op) {
  std::string name = getNodeName(op);
  SmallVector<StringRef> parts;
  StringRef(name).ltrim('/').split(parts, '/', -1, false);
  if (parts.size() <= 1)
    return "";
  parts.pop_back(); // the op itself
  return llvm::join(parts, ".");
}

//===----------------------------------------------------------------------===//
// Microbatch loops
//===----------------------------------------------------------------------===//

ParseResult MicrobatchLoopOp::parse(OpAsmParser &parser,
                                    OperationState &result) {
  OpAsmParser::Argument index;
  int64_t count = 0;
  if (parser.parseLParen() || parser.parseArgument(index) ||
      parser.parseRParen() || parser.parseKeyword("count") ||
      parser.parseInteger(count))
    return failure();
  Builder &b = parser.getBuilder();
  result.addAttribute(getMicrobatchesAttrName(result.name),
                      b.getI64IntegerAttr(count));
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  SmallVector<Type> types;
  if (succeeded(parser.parseOptionalColon()) && parser.parseTypeList(types))
    return failure();
  result.addTypes(types);
  index.type = RankedTensorType::get({}, b.getI64Type());
  return parser.parseRegion(*result.addRegion(), {index});
}

void MicrobatchLoopOp::print(OpAsmPrinter &p) {
  p << " (" << getIndex() << ") count " << getMicrobatches();
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(),
                                     {getMicrobatchesAttrName()});
  if (!getSums().empty()) {
    p << " : ";
    llvm::interleaveComma(getSums().getTypes(), p);
  }
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

void MicrobatchLoopOp::getAsmBlockArgumentNames(Region &region,
                                                OpAsmSetValueNameFn setName) {
  if (!region.empty() && region.front().getNumArguments() == 1)
    setName(region.front().getArgument(0), "mb");
}

LogicalResult MicrobatchLoopOp::verify() {
  if (getMicrobatches() < 1)
    return emitOpError("needs 1 or more microbatches, got ")
           << getMicrobatches();
  Block &body = getBody().front();
  auto index = RankedTensorType::get({}, IntegerType::get(getContext(), 64));
  if (body.getNumArguments() != 1 || body.getArgument(0).getType() != index)
    return emitOpError("body must take one argument, the microbatch index ")
           << index;
  auto yield = dyn_cast_or_null<MicrobatchYieldOp>(body.empty() ? nullptr
                                                                : &body.back());
  if (!yield)
    return emitOpError("body must end in nn.microbatch_yield");
  if (yield.getValues().getTypes() != getSums().getTypes())
    return emitOpError("yields ")
           << yield.getValues().size() << " value(s) of types "
           << yield.getValues().getTypes() << " for results of types "
           << getSums().getTypes();
  if (auto schedule = getSchedule()) {
    if (schedule->size() % 3 != 0)
      return emitOpError("schedule needs (microbatch, pass, chunk) triples, "
                         "got ")
             << schedule->size() << " numbers";
    for (size_t i = 0; i < schedule->size(); i += 3)
      if ((*schedule)[i] < 0 || (*schedule)[i] >= getMicrobatches() ||
          (*schedule)[i + 1] < 0 || (*schedule)[i + 1] > 2 ||
          (*schedule)[i + 2] < 0)
        return emitOpError("schedule action ")
               << i / 3 << " (" << (*schedule)[i] << ", " << (*schedule)[i + 1]
               << ", " << (*schedule)[i + 2] << ") is out of range";
  }
  return success();
}

ParseResult MicrobatchSelectOp::parse(OpAsmParser &parser,
                                      OperationState &result) {
  OpAsmParser::UnresolvedOperand index;
  SmallVector<OpAsmParser::UnresolvedOperand> candidates;
  Type type;
  if (parser.parseOperand(index) || parser.parseComma() ||
      parser.parseOperandList(candidates) ||
      parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonType(type))
    return failure();
  Builder &b = parser.getBuilder();
  if (parser.resolveOperand(index, RankedTensorType::get({}, b.getI64Type()),
                            result.operands) ||
      parser.resolveOperands(candidates, type, result.operands))
    return failure();
  result.addTypes(type);
  return success();
}

void MicrobatchSelectOp::print(OpAsmPrinter &p) {
  p << " " << getIndex() << ", " << getCandidates();
  p.printOptionalAttrDict((*this)->getAttrs());
  p << " : " << getType();
}

LogicalResult MicrobatchSelectOp::verify() {
  auto loop = dyn_cast_or_null<MicrobatchLoopOp>((*this)->getParentOp());
  if (!loop || getIndex() != loop.getIndex())
    return emitOpError("must read the index of the nn.microbatch_loop it is "
                       "in");
  if (static_cast<int64_t>(getCandidates().size()) != loop.getMicrobatches())
    return emitOpError("has ") << getCandidates().size() << " candidate(s) for "
                               << loop.getMicrobatches() << " microbatches";
  for (Value c : getCandidates())
    if (c.getType() != getType())
      return emitOpError("candidate of type ")
             << c.getType() << " for a result of type " << getType();
  return success();
}
