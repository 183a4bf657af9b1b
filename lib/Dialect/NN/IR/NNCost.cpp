//===- NNCost.cpp - how much work an nn op does -----------------*- C++ -*-===//
#include "distopt/Dialect/NN/IR/NNCost.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include <algorithm>

using namespace mlir;

double distopt::nn::estimateFlops(Operation *op) {
  if (auto mm = dyn_cast<MatMulOp>(op)) {
    auto a = mm.getLhs().getType();
    auto c = mm.getResult().getType();
    if (!a.hasStaticShape() || !c.hasStaticShape())
      return 0;
    return 2.0 * c.getNumElements() * a.getShape().back();
  }
  if (auto conv = dyn_cast<ConvOp>(op)) {
    auto w = conv.getWeight().getType();
    auto y = conv.getResult().getType();
    if (!w.hasStaticShape() || !y.hasStaticShape() || w.getDimSize(0) == 0)
      return 0;
    return 2.0 * y.getNumElements() * (w.getNumElements() / w.getDimSize(0));
  }
  double n = 0;
  for (Value r : op->getResults())
    if (auto t = dyn_cast<RankedTensorType>(r.getType());
        t && t.hasStaticShape())
      n += t.getNumElements();
  return n;
}

int64_t distopt::nn::tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  Type et = t.getElementType();
  int64_t width = et.isIntOrFloat()
                      ? std::max<int64_t>(1, et.getIntOrFloatBitWidth() / 8)
                      : 4;
  return t.getNumElements() * width;
}
