//===- FuseGelu.cpp - the exact GELU written out, as one nn.gelu ----------===//
//
// Exporters spell GELU out as five element-wise ops (Div, Erf, Add, Mul,
// Mul). As one nn.gelu the runtime makes one vectorised pass instead of
// five, and training differentiates one op instead of five.
//
//===----------------------------------------------------------------------===//
#include "FuseGelu.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace distopt;

namespace {

/// `v` is an nn.constant whose every element is `want` (relative 1e-6).
bool isSplat(Value v, double want) {
  auto c = v.getDefiningOp<nn::ConstantOp>();
  if (!c)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return false;
  double got = dense.getSplatValue<APFloat>().convertToDouble();
  return std::abs(got - want) <= 1e-6 * std::abs(want);
}

/// The other operand of a binary op when one of them is `known`.
template <typename BinaryOp>
Value otherOperand(BinaryOp op, llvm::function_ref<bool(Value)> known) {
  if (known(op.getLhs()))
    return op.getRhs();
  if (known(op.getRhs()))
    return op.getLhs();
  return nullptr;
}

bool onlyUse(Value v) { return v.hasOneUse(); }

/// `v` = 1 + erf(x / sqrt 2) (or x * (1 / sqrt 2)), each step used once.
bool isOnePlusErfOf(Value v, Value x) {
  auto add = v.getDefiningOp<nn::AddOp>();
  if (!add || !onlyUse(v))
    return false;
  Value e = otherOperand(add, [](Value c) { return isSplat(c, 1.0); });
  auto erf = e ? e.getDefiningOp<nn::ErfOp>() : nullptr;
  if (!erf || !onlyUse(e))
    return false;
  Value scaled = erf.getInput();
  if (!onlyUse(scaled))
    return false;
  if (auto div = scaled.getDefiningOp<nn::DivOp>())
    return div.getLhs() == x && isSplat(div.getRhs(), std::sqrt(2.0));
  if (auto mul = scaled.getDefiningOp<nn::MulOp>())
    return otherOperand(mul, [](Value c) {
             return isSplat(c, 1.0 / std::sqrt(2.0));
           }) == x;
  return false;
}

/// The factors of a product of at most three terms rooted at `root`
/// (inner products used only here).
void factors(Value v, bool isRoot, SmallVectorImpl<Value> &out) {
  auto mul = v.getDefiningOp<nn::MulOp>();
  if (mul && (isRoot || onlyUse(v)) && out.size() < 3) {
    factors(mul.getLhs(), false, out);
    factors(mul.getRhs(), false, out);
    return;
  }
  out.push_back(v);
}

/// The x of x * 0.5 * (1 + erf(x / sqrt 2)) rooted at `root`, or null.
Value geluInput(nn::MulOp root) {
  SmallVector<Value, 4> f;
  factors(root.getResult(), true, f);
  if (f.size() != 3)
    return nullptr;
  for (int half = 0; half < 3; ++half) {
    if (!isSplat(f[half], 0.5))
      continue;
    for (int x = 0; x < 3; ++x) {
      if (x == half)
        continue;
      int p = 3 - half - x;
      if (f[x].getType() == root.getType() && isOnePlusErfOf(f[p], f[x]))
        return f[x];
    }
  }
  return nullptr;
}

} // namespace

unsigned distopt::onnximport::fuseErfGelu(Block &body) {
  unsigned fused = 0;
  SmallVector<nn::MulOp> roots;
  body.walk([&](nn::MulOp op) { roots.push_back(op); });
  // Outermost products first: an inner product of a matched GELU has one
  // use and is erased with it, so it is never visited once dead.
  for (nn::MulOp root : llvm::reverse(roots)) {
    Value x = geluInput(root);
    if (!x)
      continue;
    OpBuilder b(root);
    auto gelu = nn::GeluOp::create(b, root.getLoc(), root.getType(), x,
                                   b.getStringAttr("none"));
    root.getResult().replaceAllUsesWith(gelu.getResult());
    root.erase();
    ++fused;
  }
  return fused;
}
