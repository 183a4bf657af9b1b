//===- FuseForTarget.cpp - dist-fuse-for-target -----------------*- C++ -*-===//
#include "distopt/Fusion/Passes.h"
#include "distopt/Fusion/TargetDescription.h"

#include "distopt/Dialect/NN/IR/NNFusedOps.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "distopt/Dialect/NN/IR/ShapeUtils.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace distopt {
#define GEN_PASS_DEF_DISTFUSEFORTARGET
#include "distopt/Fusion/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {

/// Whether `mm` can read its operand `operand` through a transpose flag (the
/// kernels transpose a lhs only in a product of two matrices).
bool readsTransposed(nn::MatMulOp mm, unsigned operand) {
  return operand == 1 || mm.getRhs().getType().getRank() == 2;
}

/// A matrix transpose (perm [1, 0]) that only matmuls read, each able to
/// read it through a flag: a linear layer's weight, also when the matmuls of
/// several microbatches share it.
bool isFoldableTranspose(nn::TransposeOp t) {
  if (t.getInput().getType().getRank() != 2 || t.getPerm()[0] != 1 ||
      t->use_empty())
    return false;
  return llvm::all_of(t->getUses(), [](OpOperand &use) {
    auto mm = dyn_cast<nn::MatMulOp>(use.getOwner());
    return mm && readsTransposed(mm, use.getOperandNumber());
  });
}

/// What a matmul applies on its way out.
struct Epilogue {
  nn::AddOp bias; // adds a rank-1 bias to every row, or null
  nn::GeluOp gelu;
  Operation *last() {
    return gelu ? gelu.getOperation() : bias.getOperation();
  }
};

/// mm + bias, then gelu(that), as far as `target` takes them: each step only
/// when its input has no other reader, so nothing else needs the value the
/// fused op no longer defines.
Epilogue findEpilogue(nn::MatMulOp mm, const TargetDescription &target) {
  Epilogue e;
  auto outType = cast<RankedTensorType>(mm.getResult().getType());
  if (mm.getRhs().getType().getRank() < 2 || !mm->hasOneUse() ||
      !target.epilogueTakes(outType.getElementType()))
    return e;
  Value out = mm.getResult();
  auto add = dyn_cast<nn::AddOp>(*mm->user_begin());
  if (add && target.matmulBias) {
    Value bias = add.getLhs() == out ? add.getRhs() : add.getLhs();
    auto biasType = cast<RankedTensorType>(bias.getType());
    Operation *def = bias.getDefiningOp();
    // The fused op stands where the matmul stood: the bias must exist there.
    if (biasType.getRank() == 1 &&
        biasType.getDimSize(0) == outType.getShape().back() &&
        biasType.getElementType() == outType.getElementType() &&
        add.getType() == outType && bias != out &&
        (!def || def->getBlock() != mm->getBlock() ||
         def->isBeforeInBlock(mm))) {
      e.bias = add;
      out = add.getResult();
    }
  }
  if (target.matmulGelu && out.hasOneUse())
    if (auto g = dyn_cast<nn::GeluOp>(*out.user_begin());
        g && g.getApproximate() == "none")
      e.gelu = g;
  return e;
}

/// Softmax's gradient as its rule writes it, y * (dy - sum(dy * y)) with the
/// sum kept along one axis, whose inner values nothing else reads.
struct SoftmaxGrad {
  nn::MulOp outer, inner;
  nn::SubOp sub;
  nn::ReduceSumOp sum;
  Value y, dy;
  int64_t axis = 0;
};

/// The other operand of the binary `op` than `v`, or null when `v` is not
/// one of them.
Value otherOperand(Operation *op, Value v) {
  if (op->getOperand(0) == v)
    return op->getOperand(1);
  if (op->getOperand(1) == v)
    return op->getOperand(0);
  return {};
}

std::optional<SoftmaxGrad> matchSoftmaxGrad(nn::MulOp outer) {
  SoftmaxGrad g;
  g.outer = outer;
  Type type = outer.getType();
  // Either operand of the outer product may be the difference.
  for (unsigned i = 0; i < 2; ++i) {
    g.sub = outer->getOperand(i).getDefiningOp<nn::SubOp>();
    g.y = outer->getOperand(1 - i);
    if (!g.sub || !g.sub->hasOneUse() || g.y == outer->getOperand(i))
      continue;
    g.dy = g.sub.getLhs();
    g.sum = g.sub.getRhs().getDefiningOp<nn::ReduceSumOp>();
    if (!g.sum || !g.sum->hasOneUse() || !g.sum.getKeepdims() ||
        g.sum.getAxes().size() != 1)
      continue;
    g.inner = g.sum.getInput().getDefiningOp<nn::MulOp>();
    if (!g.inner || !g.inner->hasOneUse() ||
        otherOperand(g.inner, g.y) != g.dy)
      continue;
    g.axis = g.sum.getAxes()[0];
    // No broadcasting anywhere: y, dy and every product have one type.
    if (g.y.getType() != type || g.dy.getType() != type ||
        g.inner.getType() != type || g.sub.getType() != type ||
        g.axis < 0 || g.axis >= cast<RankedTensorType>(type).getRank())
      continue;
    return g;
  }
  return std::nullopt;
}

/// Whether `c` widens a 16-bit float to f32 (a bf16 policy entering an f32
/// island) or, with `narrowing`, rounds f32 to a 16-bit float (leaving it).
bool isHalfCast(nn::CastOp c, bool narrowing) {
  Type from = cast<RankedTensorType>(c.getInput().getType()).getElementType();
  Type to = cast<RankedTensorType>(c.getType()).getElementType();
  if (narrowing)
    std::swap(from, to);
  return (from.isBF16() || from.isF16()) && to.isF32();
}

/// A cast from a 16-bit float to f32 whose only reader is `reader`.
nn::CastOp widenedOnlyFor(Value v, Operation *reader) {
  auto c = v.getDefiningOp<nn::CastOp>();
  if (!c || !c->hasOneUse() || *c->user_begin() != reader ||
      !isHalfCast(c, /*narrowing=*/false))
    return {};
  return c;
}

/// The cast from f32 to a 16-bit float that is `op`'s result's only reader.
nn::CastOp narrowedOnly(Operation *op) {
  if (!op->getResult(0).hasOneUse())
    return {};
  auto c = dyn_cast<nn::CastOp>(*op->getResult(0).user_begin());
  return c && isHalfCast(c, /*narrowing=*/true) ? c : nn::CastOp();
}

/// Cross-entropy over the last dim as the training step builds it
/// (lib/Training/TrainingStep.cpp), on logits L with row max m:
///   z = L - m, e = exp(z), s = reduce_sum(e), oh = equal(lab, iota),
///   zl = reduce_sum(where(oh, z, 0)), sc = e * f, d = sc - w,
///   g = where(oh, d, sc)
/// with every intermediate read only inside the pattern (iota: the program's
/// consecutive class ids). Where the target reads 16-bit logits as stored,
/// logits widened by a cast only the pattern and a reduce_max read are read
/// as stored, and a cast that narrows g (its only reader) is written by the
/// fused op.
struct CrossEntropy {
  Value logits, max, labels, scale, weight;
  int64_t firstClass = 0;
  nn::SubOp z, d;
  nn::ExpOp e;
  nn::ReduceSumOp s, zl;
  nn::EqualOp oh;
  nn::WhereOp w0, g;
  nn::MulOp sc;
  nn::CastOp widen, narrow;   // folded casts, or null
  nn::ReduceMaxOp maxOfWiden; // the reduce_max that read `widen`, or null
};

/// Whether `op` reduces along the last dim only, keeping it.
bool reducesLastDim(nn::ReduceSumOp op) {
  auto t = cast<RankedTensorType>(op.getInput().getType());
  return op.getKeepdims() && op.getAxes().size() == 1 &&
         op.getAxes()[0] == t.getRank() - 1;
}

/// Whether every reader of `v` is one of `ops`.
bool usedOnlyBy(Value v, ArrayRef<Operation *> ops) {
  for (Operation *user : v.getUsers())
    if (!llvm::is_contained(ops, user))
      return false;
  return true;
}

/// The first id of a constant of consecutive integer ids (first, first + 1,
/// ...), rank 1.
std::optional<int64_t> consecutiveIds(Value v) {
  auto c = v.getDefiningOp<nn::ConstantOp>();
  if (!c)
    return std::nullopt;
  auto values = dyn_cast<DenseIntElementsAttr>(c.getValue());
  if (!values || cast<RankedTensorType>(values.getType()).getRank() != 1 ||
      values.empty())
    return std::nullopt;
  auto consecutive = [](auto ids) -> std::optional<int64_t> {
    int64_t first = static_cast<int64_t>(*ids.begin()), expected = first;
    for (auto id : ids)
      if (static_cast<int64_t>(id) != expected++)
        return std::nullopt;
    return first;
  };
  // A vocabulary's ids (a hundred thousand) read as raw integers where
  // they are stored as such; APInts otherwise.
  if (auto raw = values.tryGetValues<int64_t>(); succeeded(raw))
    return consecutive(*raw);
  if (auto raw = values.tryGetValues<int32_t>(); succeeded(raw))
    return consecutive(*raw);
  return consecutive(llvm::map_range(
      values, [](const APInt &id) { return id.getSExtValue(); }));
}

std::optional<CrossEntropy>
matchCrossEntropy(nn::WhereOp g, const TargetDescription &target) {
  CrossEntropy ce;
  ce.g = g;
  auto type = cast<RankedTensorType>(g.getType());
  Type c = type.getElementType();
  if (!c.isF32() && !c.isF64())
    return std::nullopt;
  ce.d = g.getLhs().getDefiningOp<nn::SubOp>();
  ce.sc = g.getRhs().getDefiningOp<nn::MulOp>();
  ce.oh = g.getCondition().getDefiningOp<nn::EqualOp>();
  if (!ce.d || !ce.sc || !ce.oh || ce.d.getLhs() != ce.sc.getResult() ||
      !ce.d->hasOneUse())
    return std::nullopt;
  ce.weight = ce.d.getRhs();
  // sc = e * f, in either order.
  for (unsigned i = 0; i < 2 && !ce.e; ++i) {
    ce.e = ce.sc->getOperand(i).getDefiningOp<nn::ExpOp>();
    ce.scale = ce.sc->getOperand(1 - i);
  }
  if (!ce.e)
    return std::nullopt;
  ce.z = ce.e.getInput().getDefiningOp<nn::SubOp>();
  if (!ce.z)
    return std::nullopt;
  ce.logits = ce.z.getLhs();
  ce.max = ce.z.getRhs();
  ce.labels = ce.oh.getLhs();
  std::optional<int64_t> first = consecutiveIds(ce.oh.getRhs());
  if (!first)
    return std::nullopt;
  ce.firstClass = *first;
  // The per-row values: the logits' shape with the last dim 1, one type.
  SmallVector<int64_t> rowShape(type.getShape());
  rowShape.back() = 1;
  auto rowType = RankedTensorType::get(rowShape, c);
  auto labelType = dyn_cast<RankedTensorType>(ce.labels.getType());
  if (ce.logits.getType() != type || ce.max.getType() != rowType ||
      ce.scale.getType() != rowType || ce.weight.getType() != rowType ||
      !labelType || labelType.getShape() != ArrayRef<int64_t>(rowShape) ||
      !isa<IntegerType>(labelType.getElementType()) ||
      cast<RankedTensorType>(ce.oh.getRhs().getType()).getDimSize(0) !=
          type.getShape().back() ||
      ce.z.getType() != type || ce.e.getType() != type ||
      ce.sc.getType() != type || ce.d.getType() != type)
    return std::nullopt;
  // e's other reader is the sum; z's is where(oh, z, 0), summed.
  for (Operation *user : ce.e->getUsers())
    if (auto sum = dyn_cast<nn::ReduceSumOp>(user))
      ce.s = sum;
  for (Operation *user : ce.z->getUsers())
    if (auto w = dyn_cast<nn::WhereOp>(user))
      ce.w0 = w;
  if (!ce.s || !ce.w0 || !reducesLastDim(ce.s) ||
      ce.w0.getCondition() != ce.oh.getResult() ||
      ce.w0.getLhs() != ce.z.getResult() ||
      !nn::isZeroConstant(ce.w0.getRhs()) || ce.w0.getType() != type ||
      !ce.w0->hasOneUse())
    return std::nullopt;
  ce.zl = dyn_cast<nn::ReduceSumOp>(*ce.w0->user_begin());
  if (!ce.zl || !reducesLastDim(ce.zl))
    return std::nullopt;
  if (!usedOnlyBy(ce.z, {ce.e, ce.w0}) || !usedOnlyBy(ce.e, {ce.s, ce.sc}) ||
      !usedOnlyBy(ce.oh, {ce.w0, ce.g}) || !usedOnlyBy(ce.sc, {ce.d, ce.g}))
    return std::nullopt;
  if (!target.foldHalfCasts)
    return ce;
  // Logits widened from a 16-bit float: read as stored when nothing but
  // the pattern and the row max reads the widened copy.
  auto widen = ce.logits.getDefiningOp<nn::CastOp>();
  if (widen && isHalfCast(widen, /*narrowing=*/false)) {
    nn::ReduceMaxOp max;
    for (Operation *user : widen->getUsers())
      if (auto m = dyn_cast<nn::ReduceMaxOp>(user))
        max = m;
    if (usedOnlyBy(widen, max ? ArrayRef<Operation *>{ce.z, max}
                              : ArrayRef<Operation *>{ce.z})) {
      ce.widen = widen;
      ce.maxOfWiden = max;
    }
  }
  // The gradient narrowed to a 16-bit float: written narrowed.
  ce.narrow = narrowedOnly(g);
  return ce;
}

/// The value of a constant of one float element (of any shape of 1s), or of
/// a cast of one to another float type (a 16-bit policy's constants), as
/// the cast rounds it.
std::optional<double> scalarConstant(Value v) {
  auto rounding = v.getDefiningOp<nn::CastOp>();
  auto c = (rounding ? rounding.getInput() : v).getDefiningOp<nn::ConstantOp>();
  auto values = c ? dyn_cast<DenseFPElementsAttr>(c.getValue()) : nullptr;
  if (!values || values.getNumElements() != 1)
    return std::nullopt;
  APFloat value = *values.getValues<APFloat>().begin();
  if (rounding) {
    auto to = dyn_cast<FloatType>(
        cast<RankedTensorType>(rounding.getType()).getElementType());
    if (!to)
      return std::nullopt;
    bool losesInfo = false;
    value.convert(to.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                  &losesInfo);
  }
  return value.convertToDouble();
}

/// Attention's scale and mask around a softmax: on the way in,
/// `where(mask, fill, x * scale)` (or `x / scale`, or the where's branches
/// the other way round: `mask_keeps`); on a gradient's way out,
/// `where(mask, 0, g) * scale`. Each part is optional; every op of it has
/// one reader and the type of what it reads (a scalar constant and a mask
/// of the scores' trailing dims broadcast in).
struct ScaleAndMask {
  Operation *scaleOp = nullptr; // nn.mul or nn.div by the scalar, or null
  nn::WhereOp where;            // or null
  Value mask;
  double scale = 1, fill = 0;
  bool divide = false, keeps = false;
  Value x;                   // what the softmax reads (forward)
  Operation *last = nullptr; // the gradient's last op (backward)
  explicit operator bool() const { return scaleOp || where; }
};

/// `where` as a mask of `v` by a scalar constant: the mask's value, the
/// constant, and whether the mask's true elements keep `v`.
std::optional<std::pair<double, bool>> maskedBranch(nn::WhereOp where,
                                                    Value v) {
  auto cond = cast<RankedTensorType>(where.getCondition().getType());
  if (!cond.getElementType().isInteger(1) || where.getType() != v.getType() ||
      !nn::isTrailingBroadcast(cond.getShape(),
                               cast<RankedTensorType>(v.getType()).getShape()))
    return std::nullopt;
  Value other = where.getLhs() == v ? where.getRhs() : where.getLhs();
  if (where.getLhs() != v && where.getRhs() != v)
    return std::nullopt;
  std::optional<double> c = scalarConstant(other);
  if (!c)
    return std::nullopt;
  return std::make_pair(*c, where.getLhs() == v);
}

/// `op` as `v * c`, `c * v` or `v / c` of a scalar constant c, of v's type.
std::optional<std::pair<double, bool>> scaledBy(Operation *op, Value v) {
  if (op->getNumResults() != 1 || op->getResult(0).getType() != v.getType())
    return std::nullopt;
  if (isa<nn::MulOp>(op))
    if (Value c = otherOperand(op, v))
      if (std::optional<double> k = scalarConstant(c))
        return std::make_pair(*k, false);
  if (isa<nn::DivOp>(op) && op->getOperand(0) == v)
    if (std::optional<double> k = scalarConstant(op->getOperand(1)))
      return std::make_pair(*k, true);
  return std::nullopt;
}

/// Whether the target's kernels apply a scale and mask to elements of type
/// `t` as stored: f32 and f64 everywhere; 16-bit floats only where the
/// kernels read them as stored (on the host they come widened, and the
/// scaled value would not be rounded to them).
bool scalesAndMasks(const TargetDescription &target, Type t) {
  return t.isF32() || t.isF64() ||
         ((t.isBF16() || t.isF16()) && target.foldHalfCasts);
}

/// What a softmax of `input` reads through: a where of a scaled x.
ScaleAndMask matchSoftmaxInput(Value input, const TargetDescription &target) {
  ScaleAndMask p;
  p.x = input;
  if (auto where = input.getDefiningOp<nn::WhereOp>();
      where && where->hasOneUse()) {
    for (Value branch : {where.getLhs(), where.getRhs()}) {
      if (std::optional<std::pair<double, bool>> m =
              maskedBranch(where, branch)) {
        p.where = where;
        p.mask = where.getCondition();
        p.fill = m->first;
        p.keeps = m->second;
        p.x = branch;
        break;
      }
    }
  }
  if (Operation *def = p.x.getDefiningOp(); def && def->hasOneUse()) {
    for (Value operand : def->getOperands()) {
      if (std::optional<std::pair<double, bool>> k = scaledBy(def, operand)) {
        p.scaleOp = def;
        p.scale = k->first;
        p.divide = k->second;
        p.x = operand;
        break;
      }
    }
  }
  Type t = cast<RankedTensorType>(p.x.getType()).getElementType();
  return scalesAndMasks(target, t) ? p : ScaleAndMask();
}

/// What a softmax gradient's result `g` goes through: where(mask, 0, g),
/// then a product or quotient by a scalar.
ScaleAndMask matchGradientOutput(Value g, const TargetDescription &target) {
  ScaleAndMask p;
  Value cur = g;
  if (cur.hasOneUse())
    if (auto where = dyn_cast<nn::WhereOp>(*cur.user_begin()))
      if (std::optional<std::pair<double, bool>> m = maskedBranch(where, cur);
          m && m->first == 0 && !std::signbit(m->first)) {
        p.where = where;
        p.mask = where.getCondition();
        p.keeps = m->second;
        cur = where.getResult();
      }
  if (cur.hasOneUse())
    if (std::optional<std::pair<double, bool>> k =
            scaledBy(*cur.user_begin(), cur)) {
      p.scaleOp = *cur.user_begin();
      p.scale = k->first;
      p.divide = k->second;
      cur = p.scaleOp->getResult(0);
    }
  p.last = cur.getDefiningOp();
  Type t = cast<RankedTensorType>(g.getType()).getElementType();
  return scalesAndMasks(target, t) ? p : ScaleAndMask();
}

/// Whether `v` is a scalar constant within a 16-bit float's rounding of
/// `exact` (a bf16 policy's constants are rounded).
bool isScalarNear(Value v, double exact) {
  std::optional<double> c = scalarConstant(v);
  return c && std::abs(*c - exact) <= 1e-2 * std::abs(exact);
}

/// The operand of binary `op` that is not a scalar constant near `exact`,
/// when the other is.
Value besideScalar(Operation *op, double exact) {
  if (op->getNumOperands() != 2)
    return {};
  for (unsigned i = 0; i < 2; ++i)
    if (isScalarNear(op->getOperand(1 - i), exact))
      return op->getOperand(i);
  return {};
}

/// The only user of `op`'s result when it is an `OpT`.
template <typename OpT> OpT onlyUser(Operation *op) {
  if (!op || !op->getResult(0).hasOneUse())
    return {};
  return dyn_cast<OpT>(*op->getResult(0).user_begin());
}

/// The exact GELU's gradient as its rule writes it (lib/Training), with
/// x = GELU's input and dy its output's gradient:
///   dy * (0.5 * (1 + erf(x * 0.7071)) + x * (exp((x * x) * -0.5) * 0.3989))
/// every intermediate read only there, every op of x's type. `ops` lists
/// them from the product back.
struct GeluGrad {
  Value x, dy;
  SmallVector<Operation *> ops;
};

std::optional<GeluGrad> matchGeluGrad(nn::ErfOp erf) {
  GeluGrad g;
  auto t = erf.getInput().getDefiningOp<nn::MulOp>();
  if (!t || !t->hasOneUse())
    return std::nullopt;
  g.x = besideScalar(t, 0.70710678118654752440);
  auto a = onlyUser<nn::AddOp>(erf);
  auto h = onlyUser<nn::MulOp>(a);
  auto d = onlyUser<nn::AddOp>(h);
  auto out = onlyUser<nn::MulOp>(d);
  if (!g.x || !a || besideScalar(a, 1.0) != erf.getResult() || !h ||
      besideScalar(h, 0.5) != a.getResult() || !d || !out)
    return std::nullopt;
  auto xp = otherOperand(d, h.getResult()).getDefiningOp<nn::MulOp>();
  if (!xp || !xp->hasOneUse())
    return std::nullopt;
  auto p = otherOperand(xp, g.x).getDefiningOp<nn::MulOp>();
  if (!p || !p->hasOneUse())
    return std::nullopt;
  Value exValue = besideScalar(p, 0.39894228040143267794);
  auto ex = exValue ? exValue.getDefiningOp<nn::ExpOp>() : nullptr;
  if (!ex || !ex->hasOneUse())
    return std::nullopt;
  auto q2 = ex.getInput().getDefiningOp<nn::MulOp>();
  if (!q2 || !q2->hasOneUse())
    return std::nullopt;
  Value qValue = besideScalar(q2, -0.5);
  auto q = qValue ? qValue.getDefiningOp<nn::MulOp>() : nullptr;
  if (!q || !q->hasOneUse() || q.getLhs() != g.x || q.getRhs() != g.x)
    return std::nullopt;
  g.dy = otherOperand(out, d.getResult());
  Type type = g.x.getType();
  g.ops = {out, d, h, a, erf, t, xp, p, ex, q2, q};
  if (!g.dy || g.dy.getType() != type ||
      llvm::any_of(g.ops, [&](Operation *op) {
        return op->getResult(0).getType() != type;
      }))
    return std::nullopt;
  return g;
}

struct FuseForTargetPass
    : public distopt::impl::DistFuseForTargetBase<FuseForTargetPass> {
  using Base::Base;

  void runOnOperation() override {
    const TargetDescription *desc = lookupTargetDescription(target);
    if (!desc) {
      getOperation().emitError("dist-fuse-for-target: unknown target '")
          << target << "' (expected one of " << targetNames() << ")";
      return signalPassFailure();
    }
    // Decide everything on the IR as it is, then rewrite.
    llvm::SmallPtrSet<Operation *, 16> folded;
    if (desc->matmulTransposedOperands)
      getOperation().walk([&](nn::TransposeOp t) {
        if (isFoldableTranspose(t))
          folded.insert(t);
      });
    SmallVector<std::pair<nn::MatMulOp, Epilogue>> fusions;
    getOperation().walk([&](nn::MatMulOp mm) {
      Epilogue e = findEpilogue(mm, *desc);
      bool readsFolded = llvm::any_of(mm->getOperands(), [&](Value v) {
        Operation *def = v.getDefiningOp();
        return def && folded.contains(def);
      });
      if (e.bias || e.gelu || readsFolded)
        fusions.push_back({mm, e});
    });
    for (auto [mm, e] : fusions)
      fuse(mm, e, folded);
    for (Operation *t : folded)
      t->erase();
    if (desc->softmaxGrad) {
      SmallVector<SoftmaxGrad> grads;
      llvm::SmallPtrSet<Operation *, 16> claimed;
      getOperation().walk([&](nn::MulOp mul) {
        std::optional<SoftmaxGrad> g = matchSoftmaxGrad(mul);
        // An op goes into one fused op at most.
        if (!g || claimed.contains(g->outer) || claimed.contains(g->inner))
          return;
        claimed.insert(g->outer);
        claimed.insert(g->inner);
        grads.push_back(*g);
      });
      for (SoftmaxGrad &g : grads)
        fuse(g);
    }
    if (desc->foldHalfCasts)
      foldHalfCasts();
    if (desc->softmaxScaleMask)
      fuseScalesAndMasks(*desc);
    if (desc->geluGrad) {
      SmallVector<GeluGrad> grads;
      getOperation().walk([&](nn::ErfOp erf) {
        if (std::optional<GeluGrad> g = matchGeluGrad(erf))
          grads.push_back(*g);
      });
      for (GeluGrad &g : grads)
        fuse(g);
    }
    if (desc->sumSquares)
      fuseSumsOfSquares();
    if (desc->optimizerWidensGradients)
      foldGradientWidening();
    if (desc->optimizerRoundsCopies)
      foldCopyRounding();
    if (desc->crossEntropy) {
      SmallVector<CrossEntropy> losses;
      getOperation().walk([&](nn::WhereOp w) {
        if (std::optional<CrossEntropy> ce = matchCrossEntropy(w, *desc))
          losses.push_back(*ce);
      });
      for (CrossEntropy &ce : losses)
        fuse(ce);
    }
  }

  /// A bf16 policy's f32 softmax: softmax(widen(x)) reads x as stored
  /// (nn.fused_softmax); its gradient reads a widened dy as stored and
  /// writes the narrowed result its only reader wants.
  void foldHalfCasts() {
    SmallVector<std::pair<nn::SoftmaxOp, nn::CastOp>> softmaxes;
    getOperation().walk([&](nn::SoftmaxOp sm) {
      if (nn::CastOp widen = widenedOnlyFor(sm.getInput(), sm))
        softmaxes.push_back({sm, widen});
    });
    for (auto [sm, widen] : softmaxes) {
      OpBuilder b(sm);
      auto fused = nn::FusedSoftmaxOp::create(
          b, b.getFusedLoc({widen.getLoc(), sm.getLoc()}), sm.getType(),
          widen.getInput(), /*mask=*/Value(), b.getI64IntegerAttr(sm.getAxis()),
          FloatAttr(), UnitAttr(), FloatAttr(), UnitAttr());
      fused->setDiscardableAttrs(sm->getDiscardableAttrDictionary());
      sm.getResult().replaceAllUsesWith(fused.getResult());
      sm.erase();
      widen.erase();
    }
    SmallVector<nn::FusedSoftmaxGradOp> grads;
    getOperation().walk([&](nn::FusedSoftmaxGradOp g) {
      if (cast<RankedTensorType>(g.getY().getType()).getElementType().isF32())
        grads.push_back(g);
    });
    for (nn::FusedSoftmaxGradOp g : grads) {
      nn::CastOp widen = widenedOnlyFor(g.getDy(), g);
      nn::CastOp narrow = narrowedOnly(g);
      if (!widen && !narrow)
        continue;
      Operation *last = narrow ? narrow.getOperation() : g.getOperation();
      SmallVector<Location> locs;
      if (widen)
        locs.push_back(widen.getLoc());
      locs.push_back(g.getLoc());
      if (narrow)
        locs.push_back(narrow.getLoc());
      OpBuilder b(last);
      auto fused = nn::FusedSoftmaxGradOp::create(
          b, b.getFusedLoc(locs), last->getResult(0).getType(), g.getY(),
          widen ? widen.getInput() : g.getDy(), /*mask=*/Value(),
          g.getAxisAttr(), FloatAttr(), UnitAttr(), UnitAttr());
      fused->setDiscardableAttrs(last->getDiscardableAttrDictionary());
      last->getResult(0).replaceAllUsesWith(fused.getResult());
      if (narrow)
        narrow.erase();
      g.erase();
      if (widen)
        widen.erase();
    }
  }

  /// The sums where the first of the two reductions stood (the labels'
  /// reshape moves before it when it comes later), the gradient where g
  /// stood; both read the logits as stored when a widening cast folds.
  void fuse(CrossEntropy &ce) {
    Operation *first = ce.s->isBeforeInBlock(ce.zl) ? ce.s.getOperation()
                                                    : ce.zl.getOperation();
    if (ce.s->getBlock() != ce.zl->getBlock() ||
        ce.g->getBlock() != ce.s->getBlock())
      return;
    Value logits = ce.widen ? ce.widen.getInput() : ce.logits;
    // Every operand of the sums must exist where they go.
    auto definedBefore = [&](Value v, Operation *at) {
      Operation *def = v.getDefiningOp();
      return !def || def->getBlock() != at->getBlock() ||
             def->isBeforeInBlock(at);
    };
    if (!definedBefore(ce.labels, first)) {
      Operation *def = ce.labels.getDefiningOp();
      if (!isa<nn::ReshapeOp>(def) ||
          !definedBefore(def->getOperand(0), first))
        return;
      def->moveBefore(first);
    }
    if (!definedBefore(logits, first) || !definedBefore(ce.max, first))
      return;
    OpBuilder b(first);
    auto sums = nn::FusedCrossEntropySumsOp::create(
        b,
        b.getFusedLoc({ce.z.getLoc(), ce.e.getLoc(), ce.s.getLoc(),
                       ce.w0.getLoc(), ce.zl.getLoc()}),
        ce.s.getType(), ce.zl.getType(), logits, ce.max, ce.labels,
        ce.firstClass);
    sums->setDiscardableAttrs(ce.s->getDiscardableAttrDictionary());
    // One sharding per result, where the reductions said theirs.
    auto sShard = ce.s->getAttrOfType<ArrayAttr>("dist.sharding");
    auto zlShard = ce.zl->getAttrOfType<ArrayAttr>("dist.sharding");
    if (sShard && zlShard && sShard.size() == 1 && zlShard.size() == 1)
      sums->setAttr("dist.sharding",
                    b.getArrayAttr({sShard[0], zlShard[0]}));
    else
      sums->removeAttr("dist.sharding");
    ce.s.getResult().replaceAllUsesWith(sums.getSumExp());
    ce.zl.getResult().replaceAllUsesWith(sums.getLabelLogit());

    Operation *last = ce.narrow ? ce.narrow.getOperation() : ce.g.getOperation();
    b.setInsertionPoint(last);
    SmallVector<Location> locs = {ce.sc.getLoc(), ce.d.getLoc(), ce.g.getLoc()};
    if (ce.narrow)
      locs.push_back(ce.narrow.getLoc());
    auto grad = nn::FusedCrossEntropyGradOp::create(
        b, b.getFusedLoc(locs), last->getResult(0).getType(), logits, ce.max,
        ce.scale, ce.weight, ce.labels, ce.firstClass);
    grad->setDiscardableAttrs(last->getDiscardableAttrDictionary());
    last->getResult(0).replaceAllUsesWith(grad.getResult());

    // The row max of the widened logits: the max of the stored ones,
    // widened (exact: widening keeps order and values).
    if (ce.maxOfWiden) {
      b.setInsertionPoint(ce.maxOfWiden);
      auto rowStored = cast<RankedTensorType>(ce.maxOfWiden.getType())
                           .clone(cast<RankedTensorType>(logits.getType())
                                      .getElementType());
      auto storedMax = nn::ReduceMaxOp::create(
          b, ce.maxOfWiden.getLoc(), rowStored, logits,
          ce.maxOfWiden.getAxesAttr(), ce.maxOfWiden.getKeepdimsAttr());
      storedMax->setDiscardableAttrs(
          ce.maxOfWiden->getDiscardableAttrDictionary());
      auto widened = nn::CastOp::create(b, ce.widen.getLoc(),
                                        ce.maxOfWiden.getType(), storedMax);
      widened->setDiscardableAttrs(
          ce.maxOfWiden->getDiscardableAttrDictionary());
      ce.maxOfWiden.getResult().replaceAllUsesWith(widened.getResult());
      ce.maxOfWiden.erase();
    }
    Operation *zero = ce.w0.getRhs().getDefiningOp();
    Operation *ids = ce.oh.getRhs().getDefiningOp();
    for (Operation *op :
         {last == ce.g.getOperation() ? nullptr : last, ce.g.getOperation(),
          ce.d.getOperation(), ce.sc.getOperation(), ce.zl.getOperation(),
          ce.w0.getOperation(), ce.s.getOperation(), ce.e.getOperation(),
          ce.z.getOperation(), ce.oh.getOperation()})
      if (op)
        op->erase();
    if (ce.widen && ce.widen->use_empty())
      ce.widen.erase();
    for (Operation *c : {zero, ids})
      if (c && c->use_empty())
        c->erase();
  }

  /// Attention's scale and mask into the softmax that reads them and into
  /// its gradient (ScaleAndMask).
  void fuseScalesAndMasks(const TargetDescription &target) {
    SmallVector<Operation *> softmaxes;
    getOperation().walk([&](Operation *op) {
      if (isa<nn::SoftmaxOp>(op) || (isa<nn::FusedSoftmaxOp>(op) &&
                                     !cast<nn::FusedSoftmaxOp>(op).getMask() &&
                                     !cast<nn::FusedSoftmaxOp>(op).getScale()))
        softmaxes.push_back(op);
    });
    for (Operation *sm : softmaxes) {
      ScaleAndMask p = matchSoftmaxInput(sm->getOperand(0), target);
      if (!p)
        continue;
      SmallVector<Location> locs;
      if (p.scaleOp)
        locs.push_back(p.scaleOp->getLoc());
      if (p.where)
        locs.push_back(p.where.getLoc());
      locs.push_back(sm->getLoc());
      int64_t axis = isa<nn::SoftmaxOp>(sm)
                         ? cast<nn::SoftmaxOp>(sm).getAxis()
                         : cast<nn::FusedSoftmaxOp>(sm).getAxis();
      OpBuilder b(sm);
      auto fused = nn::FusedSoftmaxOp::create(
          b, b.getFusedLoc(locs), sm->getResult(0).getType(), p.x, p.mask,
          b.getI64IntegerAttr(axis),
          p.scaleOp ? b.getF64FloatAttr(p.scale) : FloatAttr(),
          p.divide ? b.getUnitAttr() : UnitAttr(),
          p.where ? b.getF64FloatAttr(p.fill) : FloatAttr(),
          p.keeps ? b.getUnitAttr() : UnitAttr());
      fused->setDiscardableAttrs(sm->getDiscardableAttrDictionary());
      sm->getResult(0).replaceAllUsesWith(fused.getResult());
      SmallVector<Operation *> dead = {sm, p.where, p.scaleOp};
      eraseWithScalars(dead);
    }
    SmallVector<nn::FusedSoftmaxGradOp> grads;
    getOperation().walk([&](nn::FusedSoftmaxGradOp g) {
      if (!g.getMask() && !g.getScale())
        grads.push_back(g);
    });
    for (nn::FusedSoftmaxGradOp g : grads) {
      ScaleAndMask p = matchGradientOutput(g.getResult(), target);
      if (!p)
        continue;
      SmallVector<Location> locs = {g.getLoc()};
      if (p.where)
        locs.push_back(p.where.getLoc());
      if (p.scaleOp)
        locs.push_back(p.scaleOp->getLoc());
      OpBuilder b(p.last);
      auto fused = nn::FusedSoftmaxGradOp::create(
          b, b.getFusedLoc(locs), g.getType(), g.getY(), g.getDy(), p.mask,
          g.getAxisAttr(), p.scaleOp ? b.getF64FloatAttr(p.scale) : FloatAttr(),
          p.divide ? b.getUnitAttr() : UnitAttr(),
          p.keeps ? b.getUnitAttr() : UnitAttr());
      fused->setDiscardableAttrs(p.last->getDiscardableAttrDictionary());
      p.last->getResult(0).replaceAllUsesWith(fused.getResult());
      SmallVector<Operation *> dead = {p.scaleOp, p.where, g};
      eraseWithScalars(dead);
    }
  }

  /// reduce_sum(x * x) over every axis (a gradient norm's term) as one op.
  void fuseSumsOfSquares() {
    SmallVector<nn::ReduceSumOp> sums;
    getOperation().walk([&](nn::ReduceSumOp r) {
      auto mul = r.getInput().getDefiningOp<nn::MulOp>();
      auto in = cast<RankedTensorType>(r.getInput().getType());
      auto out = cast<RankedTensorType>(r.getType());
      if (!mul || mul.getLhs() != mul.getRhs() || !mul->hasOneUse() ||
          out.getRank() != 0 || mul.getLhs().getType() != in ||
          !(in.getElementType().isF32() || in.getElementType().isF64()))
        return;
      sums.push_back(r);
    });
    for (nn::ReduceSumOp r : sums) {
      auto mul = r.getInput().getDefiningOp<nn::MulOp>();
      OpBuilder b(r);
      auto fused = nn::FusedSumSquaresOp::create(
          b, b.getFusedLoc({mul.getLoc(), r.getLoc()}), r.getType(),
          mul.getLhs());
      fused->setDiscardableAttrs(r->getDiscardableAttrDictionary());
      r.getResult().replaceAllUsesWith(fused.getResult());
      r.erase();
      mul.erase();
    }
  }

  /// A bf16 policy's gradient cast to f32 (through the identity that names
  /// it) for optimizer updates and gradient-norm terms only: they read the
  /// bf16 gradient itself, and neither the f32 copy nor its write exists.
  void foldGradientWidening() {
    SmallVector<nn::CastOp> casts;
    getOperation().walk([&](nn::CastOp c) {
      auto in = cast<RankedTensorType>(c.getInput().getType());
      auto out = cast<RankedTensorType>(c.getType());
      if ((in.getElementType().isBF16() || in.getElementType().isF16()) &&
          out.getElementType().isF32() && !c->use_empty() &&
          readByUpdatesOnly(c.getResult()))
        casts.push_back(c);
    });
    for (nn::CastOp c : casts) {
      Value narrow = c.getInput();
      // The identities between keep their names, now of the stored value.
      SmallVector<Value> values = {c.getResult()};
      while (!values.empty()) {
        Value v = values.pop_back_val();
        for (Operation *user : v.getUsers())
          if (auto id = dyn_cast<nn::IdentityOp>(user)) {
            id->getResult(0).setType(narrow.getType());
            values.push_back(id.getResult());
          }
      }
      c.getResult().replaceAllUsesWith(narrow);
      c.erase();
    }
  }

  /// A compute copy's next value, the new parameter of an Adam update
  /// rounded by a cast, becomes the update's fourth result: written in the
  /// update's pass instead of another pass over the f32 parameter.
  void foldCopyRounding() {
    SmallVector<nn::CastOp> casts;
    getOperation().walk([&](nn::CastOp c) {
      auto adam = c.getInput().getDefiningOp<nn::AdamUpdateOp>();
      Type to = c.getType().getElementType();
      if (adam && c.getInput() == adam.getNewParam() &&
          !adam.getNewParamCopy() && adam->getBlock() == c->getBlock() &&
          adam.getParam().getType().getElementType().isF32() &&
          (to.isBF16() || to.isF16()))
        casts.push_back(c);
    });
    for (nn::CastOp c : casts) {
      auto adam = c.getInput().getDefiningOp<nn::AdamUpdateOp>();
      if (adam.getNewParamCopy())
        continue; // a second cast of the same update stays a cast
      OpBuilder b(adam);
      SmallVector<Type> types(adam->getResultTypes());
      types.push_back(c.getType());
      OperationState state(adam.getLoc(), adam->getName());
      state.addOperands(adam->getOperands());
      state.addTypes(types);
      state.addAttributes(adam->getAttrs());
      Operation *fused = b.create(state);
      for (unsigned i = 0; i < adam->getNumResults(); ++i)
        adam->getResult(i).replaceAllUsesWith(fused->getResult(i));
      c.getResult().replaceAllUsesWith(fused->getResult(3));
      c.erase();
      adam.erase();
    }
  }

  /// Whether every reader of `v` (through identities) is an optimizer
  /// update's gradient operand or a sum of squares.
  static bool readByUpdatesOnly(Value v) {
    return llvm::all_of(v.getUses(), [](OpOperand &use) {
      Operation *user = use.getOwner();
      if (auto id = dyn_cast<nn::IdentityOp>(user))
        return !id->use_empty() && readByUpdatesOnly(id.getResult());
      if (isa<nn::AdamUpdateOp, nn::SgdUpdateOp>(user))
        return use.getOperandNumber() == 1;
      return isa<nn::FusedSumSquaresOp>(user);
    });
  }

  /// The GELU gradient's ops as one op where their product stood.
  void fuse(GeluGrad &g) {
    Operation *out = g.ops.front();
    // The locations in program order: the first op's is the instruction's.
    SmallVector<Operation *> inOrder(g.ops);
    llvm::sort(inOrder, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    SmallVector<Location> locs;
    for (Operation *op : inOrder)
      locs.push_back(op->getLoc());
    OpBuilder b(out);
    auto fused = nn::FusedGeluGradOp::create(b, b.getFusedLoc(locs),
                                             g.x.getType(), g.x, g.dy);
    fused->setDiscardableAttrs(out->getDiscardableAttrDictionary());
    out->getResult(0).replaceAllUsesWith(fused.getResult());
    eraseWithScalars(g.ops);
  }

  /// Erases `ops` (users first; null entries skipped) and the scalar
  /// constants they read (and the casts of them) that nothing else reads.
  static void eraseWithScalars(ArrayRef<Operation *> ops) {
    SmallVector<Operation *> scalars; // a cast before its constant
    for (Operation *op : ops)
      if (op)
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp();
              def && scalarConstant(v) && !llvm::is_contained(scalars, def)) {
            scalars.push_back(def);
            if (auto c = dyn_cast<nn::CastOp>(def))
              scalars.push_back(c.getInput().getDefiningOp());
          }
    for (Operation *op : ops)
      if (op)
        op->erase();
    for (Operation *c : scalars)
      if (c->use_empty())
        c->erase();
  }

  void fuse(SoftmaxGrad &g) {
    SmallVector<Location> locs = {g.inner.getLoc(), g.sum.getLoc(),
                                  g.sub.getLoc(), g.outer.getLoc()};
    OpBuilder b(g.outer);
    auto fused = nn::FusedSoftmaxGradOp::create(
        b, b.getFusedLoc(locs), g.y.getType(), g.y, g.dy, /*mask=*/Value(),
        b.getI64IntegerAttr(g.axis), FloatAttr(), UnitAttr(), UnitAttr());
    fused->setDiscardableAttrs(g.outer->getDiscardableAttrDictionary());
    g.outer.getResult().replaceAllUsesWith(fused.getResult());
    g.outer.erase();
    g.sub.erase();
    g.sum.erase();
    g.inner.erase();
  }

  void fuse(nn::MatMulOp mm, Epilogue e,
            const llvm::SmallPtrSetImpl<Operation *> &folded) {
    auto stored = [&](Value v, bool &transposed) {
      auto t = v.getDefiningOp<nn::TransposeOp>();
      transposed = t && folded.contains(t);
      return transposed ? t.getInput() : v;
    };
    bool tl = false, tr = false;
    Value lhs = stored(mm.getLhs(), tl), rhs = stored(mm.getRhs(), tr);
    Value bias;
    if (e.bias)
      bias = e.bias.getLhs() == mm.getResult() ? e.bias.getRhs()
                                               : e.bias.getLhs();
    // The location of every op the fused op stands for, in order.
    Operation *last = e.gelu || e.bias ? e.last() : mm.getOperation();
    SmallVector<Location> locs = {mm.getLoc()};
    if (e.bias)
      locs.push_back(e.bias.getLoc());
    if (e.gelu)
      locs.push_back(e.gelu.getLoc());
    OpBuilder b(mm);
    auto fused = nn::FusedMatMulOp::create(
        b, b.getFusedLoc(locs), mm.getResult().getType(), lhs, rhs, bias, tl,
        tr, static_cast<bool>(e.gelu));
    // What the IR says of the value (its sharding, why) is said of the
    // fused op's, which is the last op's.
    fused->setDiscardableAttrs(last->getDiscardableAttrDictionary());
    last->getResult(0).replaceAllUsesWith(fused.getResult());
    if (e.gelu)
      e.gelu.erase();
    if (e.bias)
      e.bias.erase();
    mm.erase();
  }
};

} // namespace
