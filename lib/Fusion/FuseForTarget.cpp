//===- FuseForTarget.cpp - dist-fuse-for-target -----------------*- C++ -*-===//
#include "distopt/Fusion/Passes.h"
#include "distopt/Fusion/TargetDescription.h"

#include "distopt/Dialect/NN/IR/NNFusedOps.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"

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
  }

  void fuse(SoftmaxGrad &g) {
    SmallVector<Location> locs = {g.inner.getLoc(), g.sum.getLoc(),
                                  g.sub.getLoc(), g.outer.getLoc()};
    OpBuilder b(g.outer);
    auto fused = nn::FusedSoftmaxGradOp::create(
        b, b.getFusedLoc(locs), g.y.getType(), g.y, g.dy, g.axis);
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
